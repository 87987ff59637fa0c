package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

func nowMillis() int64 { return time.Now().UnixMilli() }

// runner owns the running prompt, the steering and follow-up queues, and
// the steering messages handed to the CLI: it alone decides when a CLI
// turn is over (a result after which the CLI holds none of them) and when
// a run is (no more turns to run). Its mutex may be held while taking
// state's, never the reverse; frames a run ends with are queued under it,
// so a command that sees the bridge idle comes after agent_end.
type runner struct {
	mu  sync.Mutex
	cur *run // the running prompt or compaction, nil when idle
	// Messages the host sent while a prompt ran, delivered as further
	// turns of that run (or, after an abort, of the next one), as pi keeps
	// them.
	steerQ, followQ []message
	// held are the messages that waited when a run of the CLI's own
	// began: they wait on for the next prompt (as while idle), and go back
	// to the front of the queues when that run ends.
	heldSteer, heldFollow []message
	steering              string // steering mode
	followUp              string // follow-up mode
	// quiet is the CLI's own turn read while idle, before it is a run;
	// offered is one the CLI began while a run was under way (it waits
	// for the bridge to be idle, unless a turn of that run takes its lines
	// over); closed: shutting down, nothing starts by itself.
	quiet   *quietTurn
	offered claudecli.OwnTurn
	closed  bool
}

// quietTurn is a turn the CLI began by itself, read while the bridge is
// idle: what the CLI prints that begins no turn of its own (a background
// sub-agent's lines, its task reports) shows as sub-agent frames only; the
// first line that begins one ([claudecli.OpensTurn]) makes it a run. A
// prompt's run that starts meanwhile stops it ([server.quietStop]) and
// reads the CLI from there.
type quietTurn struct {
	turn claudecli.OwnTurn
	done chan struct{} // closed when its reader stopped
	// carry is a line that began a turn, read when a prompt's run had
	// started: the first line of that run's turn. Set before done closes.
	carry []byte
}

func newRunner() *runner {
	return &runner{steering: modeOneAtATime, followUp: modeOneAtATime}
}

// run is one prompt from agent_start to agent_end, a turn the CLI ran by
// itself (and what was queued during it), or a compaction.
type run struct {
	gen      uint64         // the session generation it works in
	turn     claudecli.Turn // the CLI turn, nil until started
	compact  bool           // a compact command's turn, not a prompt
	own      bool           // a turn the CLI began by itself, no prompt
	aborted  bool
	released bool // the CLI turn is released: nothing more is handed to it
	then     *message
	thenCall *call   // the abort_and_prompt that gave then
	abortIDs []*call // abort calls answered after agent_end
	// prompts are the prompt and abort_and_prompt calls whose
	// prompt_result waits for this run (or the runs it goes on with).
	prompts []*call
	done    chan struct{}
	// carry is a line the CLI printed by itself, read before the run's
	// first CLI turn began: that turn's first line (quietTurn.carry).
	carry []byte

	// Steering messages handed to the CLI and not yet started by it (for
	// the queue, should the run end first), and the uuids the CLI has not
	// reported on yet (the turn is not over while it holds one).
	handed      []handedMsg
	outstanding map[string]bool
	sawResult   bool // a result since the CLI turn began
	// prompt is the uuid of the user line a stream turn began with: until
	// the CLI reports it started, the lines are of something the CLI ran
	// by itself before (a background task's notification), and a result is
	// not the turn's end.
	prompt string

	retrying atomic.Bool // the CLI waits to retry an API call (auto_retry_start shown)
	idle     atomic.Bool // the watchdog stopped the turn: the CLI printed nothing for IdleTimeout
}

// handedMsg is a steering message sent to the CLI mid-turn, not yet
// started by it.
type handedMsg struct {
	uuid string
	m    message
}

// status is what get_state reports of the runner.
func (rn *runner) status() (pending int, steering, followUp string, streaming, compacting bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	pending = len(rn.steerQ) + len(rn.followQ) + len(rn.heldSteer) + len(rn.heldFollow)
	if r := rn.cur; r != nil {
		pending += len(r.handed)
		streaming, compacting = !r.compact, r.compact
	}
	return pending, rn.steering, rn.followUp, streaming, compacting
}

// interrupt marks the run aborted and asks the CLI to stop its turn; the
// run's goroutine ends the run. Called with rn.mu held.
func (r *run) interrupt() {
	if r.aborted {
		return
	}
	r.aborted = true
	if r.turn != nil {
		r.turn.Interrupt()
	}
}

// interruptAll ends the running prompt, if any, as an abort (shutdown).
func (rn *runner) interruptAll() {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.closed = true
	if rn.cur != nil {
		rn.cur.interrupt()
	}
}

// prompt handles prompt: a run when idle; while one runs, queued as its
// streamingBehavior says, else refused.
func (s *server) prompt(c *call) (any, error) {
	behavior := c.str("streamingBehavior")
	if behavior != "" && behavior != "steer" && behavior != "followUp" {
		return nil, fmt.Errorf("prompt: streamingBehavior must be \"steer\" or \"followUp\", got %q", behavior)
	}
	return s.withMessage(c, func(m message) (any, error) {
		if behavior == "" {
			return nil, errors.New("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
		}
		s.runs.cur.prompts = append(s.runs.cur.prompts, c) // reported when the run settles
		return s.queue(m, behavior == "steer"), nil
	})
}

// steer handles steer, follow_up handles follow_up: queued, while a run
// goes on and while idle alike (as pi: an idle steering message goes to the
// model with the next prompt, an idle follow-up after that prompt's reply).
func (s *server) steer(c *call) (any, error)    { return s.enqueue(c, true) }
func (s *server) followUp(c *call) (any, error) { return s.enqueue(c, false) }

func (s *server) enqueue(c *call, steer bool) (any, error) {
	m, err := readMessage(c)
	if err != nil {
		return nil, err
	}
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	return s.queue(m, steer), nil
}

// abortAndPrompt aborts the running prompt, if any, and runs a new one
// after it. Like prompt, it is acknowledged at once.
func (s *server) abortAndPrompt(c *call) (any, error) {
	return s.withMessage(c, func(m message) (any, error) {
		s.runs.cur.then, s.runs.cur.thenCall = &m, c
		s.runs.cur.interrupt()
		return nil, nil
	})
}

// withMessage reads c's message; when idle it runs it as a prompt (and
// answers c before agent_start), else it calls busy with runs.mu held.
func (s *server) withMessage(c *call, busy func(message) (any, error)) (any, error) {
	m, err := readMessage(c)
	if err != nil {
		return nil, err
	}
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.cur == nil {
		s.startRun(c, m)
		return nil, errAnswered
	}
	return busy(m)
}

// queue queues a message, handing steering to the CLI at once where a
// turn takes it, and tells the host (queue_update). Called with runs.mu
// held.
func (s *server) queue(m message, steer bool) dispositionData {
	if steer {
		s.runs.steerQ = append(s.runs.steerQ, m)
	} else {
		s.runs.followQ = append(s.runs.followQ, m)
	}
	s.queueChanged()
	if r := s.runs.cur; steer && r != nil && r.turn != nil {
		s.handOver(r)
	}
	return dispositionData{Disposition: "queued"}
}

// delivered writes the events that show a queued message delivered, with
// queue_update (the queues without it) where pi 1.5 writes it: after the
// new turn's turn_start, before the user message. A steer shown later (a
// message streams) gets its queue_update at once.
func (s *server) delivered(evs []transform.Event, update bool) {
	at := len(evs)
	for i := range evs {
		if evs[i].Type == transform.EventMessageStart {
			at = i
			break
		}
	}
	s.out.events(evs[:at])
	if update {
		s.runs.mu.Lock()
		s.queueChanged()
		s.runs.mu.Unlock()
	}
	s.out.events(evs[at:])
}

// queueChanged sends queue_update with the queues as they are. Called with
// runs.mu held.
func (s *server) queueChanged() {
	q := queueUpdateJSON{Type: "queue_update", Steering: []string{}, FollowUp: []string{}}
	if r := s.runs.cur; r != nil {
		for _, h := range r.handed {
			q.Steering = append(q.Steering, h.m.text)
		}
	}
	for _, m := range append(s.runs.heldSteer, s.runs.steerQ...) {
		q.Steering = append(q.Steering, m.text)
	}
	for _, m := range append(s.runs.heldFollow, s.runs.followQ...) {
		q.FollowUp = append(q.FollowUp, m.text)
	}
	s.out.send(q)
}

// clearQueue handles clear_queue: the queued messages are removed and
// returned. Steering messages the CLI already holds cannot be taken back:
// they are listed as kept.
func (s *server) clearQueue(*call) (any, error) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	d := clearQueueData{Steering: []string{}, FollowUp: []string{}}
	for _, m := range append(s.runs.heldSteer, s.runs.steerQ...) {
		d.Steering = append(d.Steering, m.text)
	}
	for _, m := range append(s.runs.heldFollow, s.runs.followQ...) {
		d.FollowUp = append(d.FollowUp, m.text)
	}
	if r := s.runs.cur; r != nil {
		for _, h := range r.handed {
			d.Kept = append(d.Kept, h.m.text)
		}
	}
	s.runs.steerQ, s.runs.followQ, s.runs.heldSteer, s.runs.heldFollow = nil, nil, nil, nil
	s.queueChanged()
	return d, nil
}

// abort ends the running prompt. pi answers after agent_end; when idle, at
// once.
func (s *server) abort(c *call) (any, error) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	r := s.runs.cur
	if r == nil {
		return nil, nil
	}
	r.abortIDs = append(r.abortIDs, c)
	r.interrupt()
	return nil, errAnswered
}

func (s *server) abortRetry(*call) (any, error) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if r := s.runs.cur; r != nil && r.retrying.Load() {
		r.interrupt()
	}
	return nil, nil
}

// stopRun aborts the running prompt, if any, and waits until it ended.
func (s *server) stopRun() {
	s.runs.mu.Lock()
	r := s.runs.cur
	if r != nil {
		r.interrupt()
	}
	s.runs.mu.Unlock()
	if r != nil {
		<-r.done
	}
}

// startRun acknowledges c and starts a run for m. Called with runs.mu held.
func (s *server) startRun(c *call, m message) {
	// Acknowledge before agent_start: the run's first frames are queued by
	// its goroutine, after this response.
	s.out.send(okResponse(c.id, c.typ, dispositionData{Disposition: "started"}))
	r := s.launch(m)
	if c.typ == "prompt" || c.typ == "abort_and_prompt" {
		r.prompts = append(r.prompts, c)
	}
}

// launch starts the run goroutine for m. Called with runs.mu held.
func (s *server) launch(m message) *run {
	r := s.newRun(false)
	s.wg.Add(1)
	go s.runPrompt(r, m)
	return r
}

// newRun makes r the running run. Called with runs.mu held.
func (s *server) newRun(compact bool) *run {
	s.st.mu.Lock()
	gen := s.st.gen
	s.st.mu.Unlock()
	r := &run{gen: gen, compact: compact, done: make(chan struct{}), outstanding: map[string]bool{}}
	s.runs.cur = r
	return r
}

// runPrompt runs one prompt: a turn of the transport, and one more for each
// steering or follow-up message the host queues meanwhile, all inside one
// agent_start … agent_end. It relays the CLI's lines as events and owns the
// run until [server.finish]; after that it drains what the CLI still
// prints for the turn.
func (s *server) runPrompt(r *run, m message) {
	defer s.wg.Done()
	r.carry = s.quietStop()
	tr := s.translator()
	s.out.events(tr.Start(m.userMessage()))
	// Steering messages that waited while idle go to the model with the
	// prompt, in the same model call (pi 1.5's order: the prompt, then
	// each of them).
	s.runs.mu.Lock()
	var with []message
	if len(s.runs.steerQ) > 0 {
		with = s.runs.take(&s.runs.steerQ, s.runs.steering)
		s.queueChanged()
	}
	s.runs.mu.Unlock()
	for _, w := range with {
		s.out.events(tr.With(w.userMessage()))
	}
	if len(with) > 0 {
		m = joined(append([]message{m}, with...))
	}
	s.goOn(r, tr, s.runTurn(r, tr, m))
}

// translator makes a run's translator.
func (s *server) translator() *transform.Translator {
	tr := transform.NewTranslator(nowMillis)
	tr.SetToolNames(s.opts.ToolNames)
	tr.HoldResults()
	s.st.mu.Lock()
	tr.SetThinkingLevel(s.st.thinkingLevel())
	s.st.mu.Unlock()
	if s.tr().Caps().Persistent {
		// The process goes on after the turn, and background sub-agents
		// with it: their lines come in a later run.
		tr.KeepDetached()
		tr.Adopt(s.subs.take())
	}
	return tr
}

// goOn runs a turn for what was queued, while the last CLI turn ended
// with the run going on (more).
func (s *server) goOn(r *run, tr *transform.Translator, more bool) {
	for more {
		s.runs.mu.Lock()
		next := s.runs.dequeue()
		s.runs.mu.Unlock()
		if len(next) == 0 { // taken by a new_session meanwhile
			s.finish(r, tr, tr.End())
			return
		}
		for i, q := range next {
			s.delivered(tr.Inject(q.userMessage()), i == 0)
		}
		more = s.runTurn(r, tr, joined(next))
	}
}

// ownTurn takes a turn the CLI began by itself (the stream transport's
// [claudecli.Caps.OnOwnTurn]): when idle, it is read at once ([server.startOwn]);
// while a run is under way it waits until the bridge is idle
// ([server.ended]), unless a CLI turn of that run takes its lines first
// (they then show in that run, before its prompt's turn).
func (s *server) ownTurn(t claudecli.OwnTurn) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.closed {
		return
	}
	if s.runs.cur != nil || s.runs.quiet != nil {
		s.runs.offered = t
		return
	}
	s.startOwn(t)
}

// startOwn claims t and reads it as a quiet turn. It reports false when t
// was taken over meanwhile. Called with runs.mu held, while idle.
func (s *server) startOwn(t claudecli.OwnTurn) bool {
	if !t.Claim() {
		return false
	}
	q := &quietTurn{turn: t, done: make(chan struct{})}
	s.runs.quiet = q
	s.wg.Add(1)
	go s.readQuiet(q)
	return true
}

// readQuiet reads q until a line begins a turn of the CLI's own, which
// makes q a run (runOwn), or until a run of the host's stops it. The
// background sub-agents it was shown go back for the next run to adopt.
func (s *server) readQuiet(q *quietTurn) {
	defer s.wg.Done()
	tr := s.translator()
	for {
		line, err := q.turn.Next()
		s.out.lineRead()
		if errors.Is(err, jsonl.ErrLineTooLong) {
			continue
		}
		if err != nil {
			break // stopped, or the process ended
		}
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if claudecli.OpensTurn(line) {
			s.runs.mu.Lock()
			if s.runs.quiet == q && s.runs.cur == nil {
				s.runs.quiet = nil
				r := s.newRun(false)
				r.own = true
				// What waited is for the next prompt, not for this run.
				s.runs.heldSteer, s.runs.heldFollow = s.runs.steerQ, s.runs.followQ
				s.runs.steerQ, s.runs.followQ = nil, nil
				s.runs.mu.Unlock()
				close(q.done)
				s.runOwn(r, tr, q.turn, line)
				return
			}
			// A run of the host's has started and will stop q: the line
			// is the first of its turn.
			q.carry = bytes.Clone(line)
			s.runs.mu.Unlock()
			break
		}
		evs := tr.Append(nil, line)
		out := evs[:0]
		for _, ev := range evs {
			if ev.Subagent != nil {
				out = append(out, ev)
			}
		}
		s.out.events(s.subs.observe(out, s.subagentFile(tr)))
	}
	s.subs.keep(tr.Running())
	close(q.done)
}

// quietStop stops reading the CLI's own turn that is not a run, if any (a
// run of the host's starts: its turn reads the CLI from here, and adopts
// the sub-agents), and returns the line that began a turn if the reader
// held one.
func (s *server) quietStop() []byte {
	s.runs.mu.Lock()
	q := s.runs.quiet
	s.runs.quiet = nil
	s.runs.mu.Unlock()
	if q == nil {
		return nil
	}
	q.turn.Release()
	<-q.done
	return q.carry
}

// runOwn runs a turn the CLI began by itself as a run: agent_start, the
// turn's events from first on, agent_end, with no prompt. It is a run like
// a prompt's: what the host queues during it goes on in it, abort
// interrupts it.
func (s *server) runOwn(r *run, tr *transform.Translator, turn claudecli.Turn, first []byte) {
	s.out.events(tr.StartOwn())
	s.log.Debug("claude began a turn by itself", "pid", turn.Pid())
	s.attach(r, turn)
	s.goOn(r, tr, s.readTurn(r, tr, turn, first))
}

// runTurn runs one CLI turn of the run for m. It reports whether the run
// goes on with a queued message; otherwise the run is finished.
func (s *server) runTurn(r *run, tr *transform.Translator, m message) bool {
	s.runs.mu.Lock()
	aborted := r.aborted
	s.runs.mu.Unlock()
	if aborted {
		s.finish(r, tr, tr.Abort())
		return false
	}
	// As in pi, bash commands the host ran reach the model with the next
	// message, not as messages of their own; so does a todo list the host
	// set.
	s.st.mu.Lock()
	text := s.st.takeBashContext() + m.text + s.st.takeTodoContext()
	s.st.mu.Unlock()
	session, _ := s.cliSession()
	input, uuid := claudecli.UserLine(text, m.images), ""
	if s.tr().Caps().Persistent {
		// The process may have run a turn of its own while idle (when a
		// background sub-agent or command finished), whose lines come
		// first: the CLI's report on this line tells where the prompt's
		// turn begins.
		uuid = sessions.NewID()
		input = claudecli.UserLineID(text, m.images, uuid)
	}
	// Turn waits until the CLI is ready (the previous turn fully over).
	turn, err := s.tr().Turn(session, input)
	if err != nil {
		s.log.Error("starting claude", "err", err)
		s.finish(r, tr, tr.Fail("starting claude: "+err.Error()))
		return false
	}
	s.log.Debug("turn started", "transport", s.tr().Name(), "pid", turn.Pid(), "session", session.ID, "resume", session.Exists)
	s.attach(r, turn)
	if uuid != "" {
		s.runs.mu.Lock()
		r.outstanding[uuid], r.prompt = true, uuid
		s.runs.mu.Unlock()
	}
	first := r.carry
	r.carry = nil
	return s.readTurn(r, tr, turn, first)
}

// readTurn reads r's CLI turn to its end (first, if any, is its first
// line, read already), feeding the translator and writing the events. It
// reports whether the run goes on with a queued message; otherwise the
// run is finished.
func (s *server) readTurn(r *run, tr *transform.Translator, turn claudecli.Turn, first []byte) bool {
	wd := s.watchdog(r, turn)
	defer wd.Stop()

	sawSession := false
	var evs []transform.Event // reused: the writer encodes each event before the next line
	for {
		line, err := first, error(nil)
		if first != nil {
			first = nil
		} else {
			line, err = turn.Next()
		}
		s.out.lineRead()
		if s.opts.IdleTimeout > 0 {
			wd.Reset(s.opts.IdleTimeout)
		}
		s.runs.mu.Lock()
		aborted := r.aborted
		s.runs.mu.Unlock()
		if !tr.Ended() {
			switch {
			case aborted:
				// pi ends an aborted run at once; what the CLI prints
				// while it stops is drained unseen.
				s.finish(r, tr, tr.Abort())
			case r.idle.Load():
				s.finish(r, tr, tr.Fail(fmt.Sprintf("claude printed nothing for %v; the turn was stopped (--idle-timeout)", s.opts.IdleTimeout)))
			}
		}
		if errors.Is(err, jsonl.ErrLineTooLong) {
			s.log.Error("claude printed a line over the limit; it is skipped", "err", err)
			continue
		}
		if err != nil {
			break // the turn is over
		}
		if len(line) == 0 || line[0] != '{' {
			s.log.Debug("claude printed a non-JSON line", "line", string(line))
			continue
		}
		if uuid, state, ok := claudecli.Lifecycle(line); ok {
			if m, started := s.reported(r, turn, uuid, state); started {
				if tr.Ended() {
					s.delivered(nil, true)
				} else {
					s.delivered(tr.Steered(m.userMessage()), true)
				}
			}
			continue
		}
		if tr.Ended() {
			if claudecli.IsResult(line) {
				s.resultSeen(r, turn) // the drained turn's end
			}
			continue
		}
		evs = tr.Append(evs[:0], line)
		noteRetry(r, evs)
		s.noteTodos(evs)
		if len(evs) == 0 && s.log.Enabled(context.Background(), slog.LevelDebug) && !bytes.HasPrefix(line, []byte(`{"type":"stream_event"`)) {
			s.log.Debug("claude line not shown", "type", gjson.GetBytes(line, "type").String(), "subtype", gjson.GetBytes(line, "subtype").String())
		}
		if !sawSession && tr.SessionID() != "" {
			sawSession = true
			s.st.mu.Lock()
			if s.st.gen == r.gen {
				s.st.sessionID = tr.SessionID()
			}
			s.st.mu.Unlock()
		}
		if at, failed := tr.AtResult(); at {
			if s.resultSeen(r, turn) || !s.goesOn(r, failed) {
				s.finish(r, tr, append(evs, tr.End()...))
				continue
			}
			evs = append(evs, tr.NextTurn()...)
		}
		s.out.events(s.subs.observe(evs, s.subagentFile(tr)))
	}
	switch err := turn.Err(); {
	case tr.Ended():
		return false
	case tr.Between() && err == nil:
		s.runs.mu.Lock()
		aborted := r.aborted
		s.runs.mu.Unlock()
		if aborted {
			s.finish(r, tr, tr.Abort())
			return false
		}
		return true
	case err == nil:
		s.log.Warn("claude ended the turn without a result", "pid", turn.Pid())
		s.finish(r, tr, tr.Finish("the turn ended without a result"))
	default:
		s.log.Warn("claude ended the turn without a result", "pid", turn.Pid(), "exit", err)
		s.finish(r, tr, tr.Finish(err.Error()))
	}
	return false
}

// resultSeen notes a result of r's CLI turn and releases the turn when the
// CLI holds no steering message of r's: the result was the turn's last
// line. It reports whether the run has been aborted (then it ends here).
func (s *server) resultSeen(r *run, turn claudecli.Turn) (aborted bool) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	r.sawResult = true
	s.maybeRelease(r, turn)
	return r.aborted
}

// goesOn decides at a result whether the run goes on: with steering
// messages the CLI holds (it runs them next, whatever the result was), or
// with queued messages after a result that was no error.
func (s *server) goesOn(r *run, failed bool) bool {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	return len(r.outstanding) > 0 || !failed && s.runs.queued()
}

// maybeRelease releases the CLI turn once a result came and no handed
// message is outstanding. Called with runs.mu held.
func (s *server) maybeRelease(r *run, turn claudecli.Turn) {
	if r.sawResult && len(r.outstanding) == 0 && !r.released {
		r.released = true
		turn.Release()
	}
}

// reported follows the CLI's report on a user line it was handed: started,
// completed or cancelled, the CLI no longer holds it. It returns the
// message when the CLI started it (the model gets it now), and hands the
// next one over in one-at-a-time mode.
func (s *server) reported(r *run, turn claudecli.Turn, uuid, state string) (message, bool) {
	if state != "started" && state != "cancelled" && state != "completed" {
		return message{}, false
	}
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if !r.outstanding[uuid] {
		return message{}, false
	}
	delete(r.outstanding, uuid)
	if uuid == r.prompt {
		if state == "started" {
			r.sawResult = false // a result before it ended a turn the CLI ran by itself
		}
		s.maybeRelease(r, turn)
		return message{}, false
	}
	var m message
	started := false
	for i, h := range r.handed {
		if h.uuid == uuid {
			r.handed = append(r.handed[:i], r.handed[i+1:]...)
			m, started = h.m, state == "started"
			break
		}
	}
	if started {
		r.sawResult = false // the CLI runs it: the turn goes on to its result
		s.handOver(r)       // one-at-a-time: the next one for the next boundary
	}
	s.maybeRelease(r, turn)
	return m, started
}

// attach makes turn the run's CLI turn: an abort that came while the CLI
// started stops it, and steering that came meanwhile is handed over.
func (s *server) attach(r *run, turn claudecli.Turn) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	r.turn, r.sawResult, r.released = turn, false, false
	if r.aborted {
		turn.Interrupt()
	}
	s.handOver(r)
}

// handOver sends queued steering messages to the CLI while its turn runs,
// when the transport takes them ([claudecli.Steerer]: the stream
// transport). The CLI gives them to the model at the next tool boundary,
// after the tool results, or runs them right after the turn; the run shows
// each where the CLI started it. In one-at-a-time mode the next is handed
// only once the previous one started, so each boundary delivers one, as pi
// does. Per-turn transports keep them queued until the CLI turn ends.
// Called with runs.mu held.
func (s *server) handOver(r *run) {
	if !s.tr().Caps().Steer || r.aborted || r.compact || r.released {
		return
	}
	st := r.turn.(claudecli.Steerer) // Caps.Steer: the transport's turns are
	rn := s.runs
	for len(rn.steerQ) > 0 && (rn.steering == modeAll || len(r.handed) == 0) {
		m := rn.steerQ[0]
		id := sessions.NewID()
		s.st.mu.Lock()
		text := s.st.bashContextText() + m.text
		s.st.mu.Unlock()
		if !st.Steer(id, claudecli.UserLineID(text, m.images, id)) {
			return // the turn is over: the run delivers the queue as its next turn
		}
		s.st.mu.Lock()
		s.st.takeBashContext()
		s.st.mu.Unlock()
		r.handed = append(r.handed, handedMsg{uuid: id, m: m})
		r.outstanding[id] = true
		rn.steerQ = rn.steerQ[1:]
	}
}

// watchdog stops a turn during which the CLI prints nothing for
// IdleTimeout (an API or a process that hangs). Each line read resets it;
// with no IdleTimeout it never fires.
func (s *server) watchdog(r *run, turn claudecli.Turn) *time.Timer {
	d := s.opts.IdleTimeout
	if d <= 0 {
		d = time.Duration(1<<63 - 1)
	}
	return time.AfterFunc(d, func() {
		s.log.Error("claude printed nothing for too long; stopping the turn", "idle", d, "pid", turn.Pid())
		r.idle.Store(true)
		turn.Interrupt()
	})
}

// noteRetry keeps r.retrying in step with the retry events, for abort_retry.
func noteRetry(r *run, evs []transform.Event) {
	for i := range evs {
		switch evs[i].Type {
		case transform.EventAutoRetryStart:
			r.retrying.Store(true)
		case transform.EventAutoRetryEnd:
			r.retrying.Store(false)
		}
	}
}

// finish records the run's outcome and queues its last events (ending in
// agent_end) and the answers to abort commands, all under runs.mu: a
// command that sees the bridge idle is handled after agent_end was queued,
// so a host that prompts on agent_end is never refused as busy.
func (s *server) finish(r *run, tr *transform.Translator, evs []transform.Event) {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.st.learn(r.gen, tr, true) {
		s.saveLimitsLater()
	}
	if s.st.current(r.gen) {
		s.subs.keep(tr.Detached())
	}
	// Handed to the CLI and never started (the run was aborted, the CLI
	// died): back to the front of the queue, as pi keeps an aborted run's
	// queue.
	if len(r.handed) > 0 && s.runs.cur == r {
		q := make([]message, 0, len(r.handed)+len(s.runs.steerQ))
		for _, h := range r.handed {
			q = append(q, h.m)
		}
		s.runs.steerQ = append(q, s.runs.steerQ...)
	}
	r.handed = nil
	if n := len(evs); n > 0 && evs[n-1].Type == transform.EventAgentEnd {
		evs[n-1].Continues = s.runs.cur == r && (r.then != nil || !r.aborted && s.runs.queued())
	}
	s.out.events(s.subs.observe(evs, s.subagentFile(tr)))
	s.ended(r, tr.Messages())
}

// ended makes the bridge idle after r, whose last frames are queued: it
// starts what waits (abort_and_prompt's prompt, messages queued after the
// last result), or, when nothing does, says the bridge settled
// (prompt_result for each prompt that waited for it, agent_settled,
// session_settled), then answers r's abort commands. msgs are r's
// messages (none for a compaction). Called with runs.mu held.
func (s *server) ended(r *run, msgs []transform.Message) {
	defer close(r.done)
	s.host.cancelAll()
	// What runs next, if anything: decided now, started after this run's
	// last frames (its prompt results among them) are queued.
	var next *message
	var carried []*call
	if s.runs.cur == r { // else replaced by a new session: nothing of it waits
		s.runs.cur = nil
		switch {
		case r.then != nil: // abort_and_prompt's prompt
			next = r.then
			if r.thenCall != nil {
				carried = append(carried, r.thenCall)
			}
		case !r.aborted && s.runs.queued():
			// Queued after the run's last result was read: a new run
			// delivers them (an aborted run keeps its queue for the next
			// prompt, as pi).
			m := joined(s.runs.dequeue())
			next = &m
			s.queueChanged()
			carried = r.prompts // they report when that run settles
		}
		if r.own { // what waited for the next prompt is queued again
			s.runs.steerQ = append(s.runs.heldSteer, s.runs.steerQ...)
			s.runs.followQ = append(s.runs.heldFollow, s.runs.followQ...)
			s.runs.heldSteer, s.runs.heldFollow = nil, nil
		}
	}
	if !r.compact && (next == nil || r.then != nil) {
		status, failure := promptStatus(msgs)
		for _, c := range r.prompts {
			s.out.send(promptResultJSON{Type: "prompt_result", ID: c.id, AgentInvoked: true,
				Status: status, Error: failure, SessionSettled: next == nil})
		}
		if next == nil {
			s.out.send(agentSettledJSON{Type: "agent_settled", Aborted: r.aborted})
			s.out.send(sessionSettledJSON{Type: "session_settled"})
		}
	}
	for _, c := range r.abortIDs {
		s.out.send(okResponse(c.id, c.typ, nil))
	}
	if next != nil {
		s.launch(*next).prompts = carried
		return
	}
	if o := s.runs.offered; s.runs.cur == nil && o != nil {
		// A turn the CLI began by itself during r: read it now.
		s.runs.offered = nil
		if !s.runs.closed {
			s.startOwn(o)
		}
	}
	if s.runs.cur == nil && s.opts.Idle != nil {
		s.opts.Idle()
	}
}

// promptStatus is a prompt_result's status from the run's messages: its
// last assistant message's stopReason.
func promptStatus(msgs []transform.Message) (string, *promptFailed) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != transform.RoleAssistant {
			continue
		}
		switch m.StopReason {
		case transform.StopAborted:
			return "aborted", nil
		case transform.StopError:
			return "error", &promptFailed{Message: m.ErrorMessage}
		}
		break
	}
	return "completed", nil
}
