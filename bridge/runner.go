package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

func nowMillis() int64 { return time.Now().UnixMilli() }

// runner owns the runs: the running prompt (its translator, its CLI turn,
// the steering messages handed to the CLI), the steering and follow-up
// queues, the CLI's own turn read while idle, and "is the turn / the run
// over". Its fields are touched by its goroutine (loop) only. Other
// goroutines ask it through its methods, each a message the loop runs
// between two CLI lines (do, post); nothing the loop runs waits for the
// CLI: a turn is started, and its lines read, by goroutines of their own
// that hand the loop what they got (startTurn, read). The loop may take
// state's lock, the host link's and the sub-agent registry's, and queue
// frames; the frames a run ends with are queued before the loop takes its
// next message, so a command that finds the bridge idle comes after
// agent_end.
type runner struct {
	s      *server      // the owners a run works with: out, st, subs, host, the transport
	calls  chan loopMsg // messages for the loop
	lines  chan lineMsg // lines the readers read, one at a time each
	exited chan struct{}

	cur *run // the running prompt or compaction, nil when idle
	// Messages the host sent while a prompt ran, delivered as further
	// turns of that run (or, after an abort, of the next one), as pi keeps
	// them.
	steerQ, followQ []message
	// held are the messages that waited when a run of the CLI's own
	// began: they wait on for the next prompt (as while idle), and go back
	// to the front of the queues when that run ends.
	heldSteer, heldFollow []message
	// nextTurn are the extensions' messages for the next prompt's run
	// (sendMessage with deliverAs nextTurn); after, the end of the run
	// that goes on (sendMessage without triggerTurn while it does).
	nextTurn, after []message
	steering        string // steering mode
	followUp        string // follow-up mode
	// quiet is the CLI's own turn read while idle, before it is a run;
	// offered is one the CLI began while a run was under way (it waits
	// for the bridge to be idle, unless a turn of that run takes its lines
	// over); closed: shutting down, nothing starts by itself.
	quiet   *quietTurn
	offered claudecli.OwnTurn
	closed  bool
	// alive counts the readers and turn starts under way: the loop ends
	// once closed with none left.
	alive int
	// loopG is the loop's goroutine: each method marked "On the loop."
	// checks it runs there (onLoop; in tests).
	loopG loopID
	// notices writes the CLI's notices (notices.go).
	notices *noticeBoard
	// rest releases the CLI process once idle long enough (rest.go).
	rest restTimer
}

// onLoop panics, when the check is on (tests), unless called on the loop.
func (o *runner) onLoop() { o.loopG.check() }

// lineMsg is one line a reader read, or its error.
type lineMsg struct {
	rd   *lineReader
	line []byte
	err  error
}

// lineReader reads one CLI turn on a goroutine of its own and hands each
// line to the loop, reading the next only once the loop is done with it
// (a line is valid until the next Next). Whose lines they are (run or
// quiet) is the loop's to say.
type lineReader struct {
	ack   chan bool // the loop's answer to a line: read on (true) or stop
	run   *run
	quiet *quietTurn
	// A long line being read in pieces (claudecli.Turn's Next): given to
	// the translator as they come, or joined for a compaction's reading.
	piecing bool
	joined  []byte
}

// pieceReader is the translator that reads rd's long lines as they come:
// nil for a compaction, which reads whole lines. On the loop.
func (rd *lineReader) pieceReader() *transform.Translator {
	switch {
	case rd.quiet != nil:
		return rd.quiet.tr
	case rd.run != nil && rd.run.compaction == nil:
		return rd.run.tr
	}
	return nil
}

// piece takes a line of rd's turn that is a piece of a long line, or the
// piece that ends one, or what ended it (err): it reports whether the
// line is whole (then line is the line to handle, the translator's
// reading of it, and err its error) or reading goes on. On the loop.
func (rd *lineReader) piece(line []byte, err error) ([]byte, bool) {
	tr := rd.pieceReader()
	switch {
	case errors.Is(err, jsonl.ErrPiece):
		rd.piecing = true
		if tr != nil {
			tr.Piece(line)
		} else {
			rd.joined = append(rd.joined, line...)
		}
		return nil, false
	case !rd.piecing:
		return line, true
	}
	rd.piecing = false
	joined := rd.joined
	rd.joined = nil
	switch {
	case err != nil && tr != nil:
		tr.DropPieces()
	case err != nil:
	case tr != nil:
		return tr.LastPiece(line), true
	default:
		return append(joined, line...), true
	}
	return line, true
}

// quietTurn is a turn the CLI began by itself, read while the bridge is
// idle: what the CLI prints that begins no turn of its own (a background
// sub-agent's lines, its task reports) shows as sub-agent frames only; the
// first line that begins one ([claudecli.OpensTurn]) makes it a run. A run
// of the host's that starts meanwhile stops it and reads the CLI from
// there, beginning with the line that began a turn, if one came.
type quietTurn struct {
	turn claudecli.OwnTurn
	tr   *transform.Translator
	// stopped: a run or a session switch released it; then is what starts
	// once its reader ended (a run's first turn), with carry, a line that
	// began a turn read after it was stopped; dropped: the session changed,
	// what it saw is not the new one's.
	stopped bool
	then    func(carry []byte)
	carry   []byte
	dropped bool
}

func newRunner(s *server) *runner {
	o := &runner{s: s, calls: make(chan loopMsg, 16), lines: make(chan lineMsg),
		exited: make(chan struct{}), steering: modeOneAtATime, followUp: modeOneAtATime, notices: newNoticeBoard(s.link),
		rest: restTimer{after: s.opts.ReleaseIdle}}
	return o
}

// loop runs the runner's messages and its readers' lines until it is
// closed and no reader or turn start is left.
func (o *runner) loop() {
	o.loopG.mark()
	defer close(o.exited)
	for !o.closed || o.alive > 0 {
		select {
		case m := <-o.calls:
			m.f()
			if m.done != nil {
				close(m.done)
			}
		case l := <-o.lines:
			more := o.line(l)
			if !more {
				o.alive--
			}
			l.rd.ack <- more
		}
	}
}

// loopMsg is a message for the loop: f, run there; done, if any, is
// closed once f ran.
type loopMsg struct {
	f    func()
	done chan struct{}
}

// post hands f to the loop; it reports false when the loop has ended.
func (o *runner) post(f func()) bool { return o.send(loopMsg{f: f}) }

func (o *runner) send(m loopMsg) bool {
	select {
	case o.calls <- m:
		return true
	case <-o.exited:
		return false
	}
}

// do runs f on the loop and returns once it ran; it reports false, not
// running f, when the loop has ended (shutdown). A message buffered as the
// loop ended is never run: do does not wait for it (done is closed before
// exited when f ran).
func (o *runner) do(f func()) bool {
	o.loopG.checkOff()
	done := make(chan struct{})
	if !o.send(loopMsg{f: f, done: done}) {
		return false
	}
	select {
	case <-done:
		return true
	case <-o.exited:
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// errClosed answers a command that needs the runner after shutdown.
var errClosed = errors.New("claude-rpc is shutting down")

// read starts a reader for turn. On the loop.
func (o *runner) read(turn claudecli.Turn) *lineReader {
	o.onLoop()
	rd := &lineReader{ack: make(chan bool, 1)}
	o.alive++
	go func() {
		for {
			line, err := turn.Next()
			o.lines <- lineMsg{rd: rd, line: line, err: err} // the loop lives while alive counts rd
			if !<-rd.ack {
				return
			}
		}
	}()
	return rd
}

// offLoop runs work on a goroutine of its own (what may wait for the CLI)
// and then, on the loop, what work returns; the loop does not end
// meanwhile (alive counts it). On the loop.
func (o *runner) offLoop(work func() (then func())) {
	o.onLoop()
	o.alive++
	go func() {
		then := work()
		o.post(func() { // the loop lives while alive counts this
			o.alive--
			then()
		})
	}()
}

// line hands a reader's line to whose it is; it reports whether the
// reader reads on. On the loop.
func (o *runner) line(l lineMsg) bool {
	o.onLoop()
	more := true
	if line, whole := l.rd.piece(l.line, l.err); whole {
		l.line = line
	} else {
		return true
	}
	switch {
	case l.rd.quiet != nil:
		more = o.quietLine(l.rd, l.line, l.err)
	case l.rd.run.compaction != nil:
		more = o.compactLine(l.rd.run, l.line, l.err)
	default:
		more = o.runLine(l.rd.run, l.line, l.err)
	}
	if l.err != nil && !errors.Is(l.err, jsonl.ErrLineTooLong) {
		more = false // the turn is over: its reader has nothing left
	}
	return more
}

// run is one prompt from agent_start to agent_end, a turn the CLI ran by
// itself (and what was queued during it), or a compaction. Owned by the
// runner's loop.
type run struct {
	gen        uint64                // the session generation it works in
	tr         *transform.Translator // nil until its first turn is prepared
	turn       claudecli.Turn        // the CLI turn, nil until started
	compaction *compaction           // a compact command's run, not a prompt
	own        bool                  // a turn the CLI began by itself, no prompt
	aborted    bool
	released   bool // the CLI turn is released: nothing more is handed to it
	begun      bool // its first turn was started (before_agent_start was called)
	starting   bool // a CLI turn is being started (startTurn), not yet attached
	then       *message
	thenCall   *call   // the abort_and_prompt that gave then
	abortIDs   []*call // abort calls answered after agent_end
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

	sawSession bool        // the translator's session id was noted
	resets     int         // the translator's resets (/clear) the session started over at
	retrying   bool        // the CLI waits to retry an API call (auto_retry_start shown)
	idle       bool        // the watchdog stopped the turn: the CLI printed nothing for IdleTimeout
	wd         *time.Timer // the turn's watchdog
	evs        []transform.Event
}

// handedMsg is a steering message sent to the CLI mid-turn, not yet
// started by it.
type handedMsg struct {
	uuid string
	m    message
}

// runStatus is what get_state reports of the runner.
type runStatus struct {
	pending               int
	steering, followUp    string
	streaming, compacting bool
}

// status is the runner's status, asked of its loop: a run's last frames
// are queued on the loop before it is idle, so a host that saw agent_end
// (or compact's answer) is told it is.
func (o *runner) status() (st runStatus) {
	o.do(func() {
		st = runStatus{pending: len(o.steerQ) + len(o.followQ) + len(o.heldSteer) + len(o.heldFollow),
			steering: o.steering, followUp: o.followUp}
		if r := o.cur; r != nil {
			st.pending += len(r.handed)
			st.streaming, st.compacting = r.compaction == nil, r.compaction != nil
		}
	})
	return st
}

// busy reports whether a run is under way.
func (o *runner) busy() (busy bool) {
	o.do(func() { busy = o.cur != nil })
	return busy
}

// setMode sets the steering (steer) or follow-up queue's mode.
func (o *runner) setMode(steer bool, mode string) {
	o.do(func() {
		if steer {
			o.steering = mode
		} else {
			o.followUp = mode
		}
	})
}

// interrupt marks the run aborted and asks the CLI to stop its turn; the
// run ends at its next line. On the loop.
func (r *run) interrupt() {
	if r.aborted {
		return
	}
	r.aborted = true
	if r.turn != nil {
		r.turn.Interrupt()
	}
}

// abortRun aborts r (abort, abort_and_prompt). A prompt's run whose CLI
// turn is still being started (the transport waits for the previous CLI
// process to exit, or starts one) ends at once, as pi's: the turn, once
// started, is interrupted and drained unseen (turnStarted). On the loop.
func (o *runner) abortRun(r *run) {
	o.onLoop()
	r.interrupt()
	if r.starting && r.compaction == nil && !r.tr.Ended() {
		o.finish(r, r.tr.Abort())
	}
}

// close ends the running prompt, if any, as an abort and stops the quiet
// reader (shutdown); the loop ends once their readers did.
func (o *runner) close() {
	o.post(func() {
		o.closed = true
		o.stopRest()
		if o.cur != nil {
			o.cur.interrupt()
		}
		o.stopQuiet(true)
	})
	<-o.exited
}

// prompt handles prompt: a run when idle; while one runs, queued as its
// streamingBehavior says, else refused.
func (s *server) prompt(c *call) (any, error) {
	behavior := c.str("streamingBehavior")
	if behavior != "" && behavior != "steer" && behavior != "followUp" {
		return nil, fmt.Errorf("prompt: streamingBehavior must be \"steer\" or \"followUp\", got %q", behavior)
	}
	// As pi: an extension's command runs at once, even while a run goes on.
	if _, ok := s.extCommand(c); ok {
		return nil, errAnswered
	}
	if s.extInput(c, behavior) {
		return nil, errAnswered
	}
	return s.promptNow(c, behavior)
}

// promptNow runs or queues a prompt that names no extension's command.
func (s *server) promptNow(c *call, behavior string) (any, error) {
	return s.withMessage(c, func(o *runner, m message) (any, error) {
		if behavior == "" {
			return nil, errors.New("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
		}
		o.cur.prompts = append(o.cur.prompts, c) // reported when the run settles
		return o.queue(m, behavior == "steer"), nil
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
	var d dispositionData
	if !s.runs.do(func() { d = s.runs.queue(m, steer) }) {
		return nil, errClosed
	}
	return d, nil
}

// abortAndPrompt aborts the running prompt, if any, and runs a new one
// after it. Like prompt, it is acknowledged at once: before the new run's
// agent_start, queued on the loop.
func (s *server) abortAndPrompt(c *call) (any, error) {
	if len(c.before) > 0 {
		// After the prompts sent before it began: their run is the one
		// it aborts.
		return s.afterBefore(c, s.abortAndPromptNow)
	}
	return s.abortAndPromptNow(c)
}

func (s *server) abortAndPromptNow(c *call) (any, error) {
	return s.withMessage(c, func(o *runner, m message) (any, error) {
		o.cur.then, o.cur.thenCall = &m, c
		o.abortRun(o.cur)
		s.respond(c, okResponse(c.id, c.typ, nil))
		return nil, errAnswered
	})
}

// withMessage reads c's message; when idle it runs it as a prompt (and
// answers c before agent_start), else it calls busy on the loop.
func (s *server) withMessage(c *call, busy func(*runner, message) (any, error)) (data any, err error) {
	m, err := readMessage(c)
	if err != nil {
		return nil, err
	}
	o := s.runs
	if !o.do(func() {
		if o.cur == nil {
			o.startRun(c, m)
			data, err = nil, errAnswered
			return
		}
		data, err = busy(o, m)
	}) {
		return nil, errClosed
	}
	return data, err
}

// queue queues a message, handing steering to the CLI at once where a
// turn takes it, and tells the host (queue_update). On the loop.
func (o *runner) queue(m message, steer bool) dispositionData {
	o.onLoop()
	if steer {
		o.steerQ = append(o.steerQ, m)
	} else {
		o.followQ = append(o.followQ, m)
	}
	o.queueChanged()
	if r := o.cur; steer && r != nil && r.turn != nil {
		o.handOver(r)
	}
	return dispositionData{Disposition: "queued"}
}

// delivered writes the events that show a queued message delivered, with
// queue_update (the queues without it) where pi 1.5 writes it: after the
// new turn's turn_start, before the user message. A steer shown later (a
// message streams) gets its queue_update at once. On the loop.
func (o *runner) delivered(r *run, evs []transform.Event, update bool) {
	o.onLoop()
	at := len(evs)
	for i := range evs {
		if evs[i].Type == transform.EventMessageStart {
			at = i
			break
		}
	}
	o.emit(r, evs[:at])
	if update {
		o.queueChanged()
	}
	o.emit(r, evs[at:])
}

// emit writes r's events, and keeps each message they end in the
// session's entries (its pi file) as it ends (note). On the loop.
func (o *runner) emit(r *run, evs []transform.Event) {
	o.onLoop()
	o.note(r, evs)
	o.write(evs)
}

// write writes events. On the loop.
func (o *runner) write(evs []transform.Event) {
	o.onLoop()
	o.s.toolStarts.seen(evs)
	o.s.out.Events(o.notices.pass(evs))
}

// note keeps each message of r's that evs end in the session's entries
// (its pi file), if r belongs to the session in use. Where the CLI
// cleared the conversation (/clear), the session starts over at the turn
// after the clear's (its turn_start), as the translator counts it
// ([transform.Translator.Resets]): the messages from there on are the new
// session's, in a pi file of its own, and the run's next CLI turns work
// on the session the CLI reported since (its init line after
// conversation_reset). A run that ends in the clear's turn starts over
// at its end (finishNow). On the loop.
func (o *runner) note(r *run, evs []transform.Event) {
	o.onLoop()
	if r.tr != nil && r.resets < r.tr.Resets() {
		if i := slices.IndexFunc(evs, func(e transform.Event) bool { return e.Type == transform.EventTurnStart && e.Subagent == nil }); i >= 0 {
			o.s.st.noteMessages(r.gen, evs[:i])
			o.startOver(r)
			evs = evs[i:]
		}
	}
	o.s.st.noteMessages(r.gen, evs)
}

// startOver starts the session over after r's /clear. On the loop.
func (o *runner) startOver(r *run) {
	o.onLoop()
	r.resets = r.tr.Resets()
	o.s.st.startOver(r.gen, r.tr.SessionID())
}

// queueChanged sends queue_update with the queues as they are. On the
// loop.
func (o *runner) queueChanged() {
	o.onLoop()
	q := queueUpdateJSON{Type: "queue_update", Steering: []string{}, FollowUp: []string{}}
	if r := o.cur; r != nil {
		for _, h := range r.handed {
			q.Steering = append(q.Steering, h.m.text)
		}
	}
	for _, m := range append(o.heldSteer, o.steerQ...) {
		q.Steering = append(q.Steering, m.text)
	}
	for _, m := range append(o.heldFollow, o.followQ...) {
		q.FollowUp = append(q.FollowUp, m.text)
	}
	o.s.out.Send(q)
}

// clearQueue handles clear_queue: the queued messages are removed and
// returned. Steering messages handed to the CLI (stream transport) are
// taken back from it ([claudecli.Steerer.Cancel]), off the loop: those it
// had started already, or was starting, stay and are listed as kept. A
// steer is either cancelled (listed in steering, never reaching the
// model) or kept (the CLI reports it started, and the run shows it),
// never both and never neither.
func (s *server) clearQueue(*call) (any, error) {
	o := s.runs
	d := clearQueueData{Steering: []string{}, FollowUp: []string{}}
	var handed []handedMsg
	var st claudecli.Steerer
	if !o.do(func() {
		for _, m := range append(o.heldSteer, o.steerQ...) {
			d.Steering = append(d.Steering, m.text)
		}
		for _, m := range append(o.heldFollow, o.followQ...) {
			d.FollowUp = append(d.FollowUp, m.text)
		}
		o.steerQ, o.followQ, o.heldSteer, o.heldFollow = nil, nil, nil, nil
		if r := o.cur; r != nil && len(r.handed) > 0 {
			handed, st = slices.Clone(r.handed), r.turn.(claudecli.Steerer)
			return // queue_update once the CLI answered
		}
		o.queueChanged()
	}) {
		return nil, errClosed
	}
	if len(handed) == 0 {
		return d, nil
	}
	cancelled := make([]bool, len(handed))
	for i, h := range handed {
		cancelled[i] = st.Cancel(h.uuid)
	}
	if !o.do(func() {
		for i, h := range handed {
			switch {
			case o.unqueue(h.uuid): // the run ended meanwhile and queued it again
				d.Steering = append(d.Steering, h.m.text)
			case cancelled[i]:
				d.Steering = append(d.Steering, h.m.text)
				o.letGo(h.uuid)
			default:
				d.Kept = append(d.Kept, h.m.text)
			}
		}
		o.queueChanged()
	}) {
		return nil, errClosed
	}
	return d, nil
}

// requeue puts steering messages handed to the CLI and never started
// back at the front of the queue, in order, each marked with the uuid it
// was handed with: unqueue finds it there, and handOver does not hand it
// again (the run delivers it as a turn of its own). On the loop.
func (o *runner) requeue(hs ...handedMsg) {
	o.onLoop()
	q := make([]message, 0, len(hs)+len(o.steerQ))
	for _, h := range hs {
		m := h.m
		m.handed = h.uuid
		q = append(q, m)
	}
	o.steerQ = append(q, o.steerQ...)
}

// unqueue removes the steering message handed with uuid from the queue,
// where a run that ended before the CLI started it put it back
// ([runner.finish]). On the loop.
func (o *runner) unqueue(uuid string) bool {
	o.onLoop()
	i := slices.IndexFunc(o.steerQ, func(m message) bool { return m.handed == uuid })
	if i < 0 {
		return false
	}
	o.steerQ = slices.Delete(o.steerQ, i, i+1)
	return true
}

// letGo forgets a steering message the CLI let go of without starting it
// (cancelled), if the run still holds it. On the loop.
func (o *runner) letGo(uuid string) {
	o.onLoop()
	r := o.cur
	if r == nil || r.turn == nil {
		return
	}
	r.handed = slices.DeleteFunc(r.handed, func(h handedMsg) bool { return h.uuid == uuid })
	if r.outstanding[uuid] {
		delete(r.outstanding, uuid)
		o.maybeRelease(r)
	}
}

// abort ends the running prompt. pi answers after agent_end; when idle, at
// once. A prompt (or compact) sent before it that has not begun yet (it
// waits for an earlier command, or for the loop) is aborted too: what runs
// now stops at once, and the abort waits, on a goroutine of its own, until
// those calls began, then ends the run they started, if any.
func (s *server) abort(c *call) (any, error) {
	if len(c.before) == 0 {
		return s.abortNow(c)
	}
	s.runs.do(func() {
		if r := s.runs.cur; r != nil {
			s.runs.abortRun(r)
		}
	})
	return s.afterBefore(c, s.abortNow)
}

// afterBefore runs handle for c once the starting calls sent before it
// have begun, on a goroutine of its own, and answers what it returns.
func (s *server) afterBefore(c *call, handle func(*call) (any, error)) (any, error) {
	if !s.goes.start(func() {
		c.waitBefore()
		data, err := handle(c)
		s.reply(c, data, err)
	}) {
		return nil, errClosed
	}
	return nil, errAnswered
}

// abortNow aborts the running prompt: answered after its agent_end, at
// once when idle.
func (s *server) abortNow(c *call) (any, error) {
	answered := false
	s.runs.do(func() {
		if r := s.runs.cur; r != nil {
			r.abortIDs = append(r.abortIDs, c)
			s.runs.abortRun(r)
			answered = true
		}
	})
	if answered {
		return nil, errAnswered
	}
	return nil, nil
}

func (s *server) abortRetry(*call) (any, error) {
	s.runs.do(func() {
		if r := s.runs.cur; r != nil && r.retrying {
			r.interrupt()
		}
	})
	return nil, nil
}

// stop aborts the running prompt, if any, and waits until it ended.
func (o *runner) stop() {
	var r *run
	o.do(func() {
		if r = o.cur; r != nil {
			r.interrupt()
		}
	})
	if r != nil {
		<-r.done
	}
}

// detach makes the bridge idle at once for a session switch: the running
// run, if any, is aborted and left to end on its own (what it learns stays
// out of the new session: state.gen), the queues are dropped, the quiet
// reader stops unseen, and then, still on the loop, switch changes the
// session. It returns the detached run's done (nil when none ran), or
// false after shutdown.
func (o *runner) detach(switchSession func()) (<-chan struct{}, bool) {
	var done chan struct{}
	ok := o.do(func() {
		o.stopQuiet(true)
		if r := o.cur; r != nil {
			r.interrupt()
			o.cur, done = nil, r.done
		}
		o.steerQ, o.followQ, o.heldSteer, o.heldFollow = nil, nil, nil, nil
		switchSession()
		if done == nil {
			o.idle()
		}
	})
	return done, ok
}

// idle calls Options.Idle when nothing runs. On the loop.
func (o *runner) idle() {
	o.onLoop()
	if o.cur != nil {
		return
	}
	o.armRest()
	if o.s.opts.Idle != nil {
		o.s.opts.Idle()
	}
}

// startRun acknowledges c and starts a run for m. On the loop.
func (o *runner) startRun(c *call, m message) {
	o.onLoop()
	// Acknowledge before agent_start: the run's first frames are queued
	// after this response.
	o.s.respond(c, okResponse(c.id, c.typ, dispositionData{Disposition: "started"}))
	r := o.launch(m)
	if c.typ == "prompt" || c.typ == "abort_and_prompt" {
		r.prompts = append(r.prompts, c)
	}
}

// launch makes a run for m the running one and starts it once the quiet
// reader, if any, stopped. On the loop.
func (o *runner) launch(m message) *run {
	o.onLoop()
	r := o.newRun()
	o.afterQuiet(func(carry []byte) {
		r.carry = carry
		o.runPrompt(r, m)
	})
	return r
}

// newRun makes a run the running one. On the loop.
func (o *runner) newRun() *run {
	o.onLoop()
	r := &run{gen: o.s.st.generation(), done: make(chan struct{}), outstanding: map[string]bool{}}
	o.cur = r
	return r
}

// afterQuiet runs start once the quiet reader, if any, has stopped (a
// run of the host's begins: its turn reads the CLI from there, and adopts
// the sub-agents), with the line that began a turn if the reader held
// one. On the loop.
func (o *runner) afterQuiet(start func(carry []byte)) {
	o.onLoop()
	q := o.quiet
	if q == nil {
		start(nil)
		return
	}
	o.stopQuiet(false)
	q.then = start
}

// stopQuiet stops the quiet reader, if any; dropped: the session changes
// (or the bridge shuts down), what it still reads is not shown. On the
// loop.
func (o *runner) stopQuiet(dropped bool) {
	o.onLoop()
	q := o.quiet
	if q == nil {
		return
	}
	o.quiet = nil
	q.stopped, q.dropped = true, dropped
	q.turn.Release()
}

// runPrompt begins a prompt's run: agent_start and the prompt's message,
// then its first CLI turn (one more follows for each steering or
// follow-up message the host queues meanwhile, all inside one agent_start
// … agent_end). On the loop.
func (o *runner) runPrompt(r *run, m message) {
	o.onLoop()
	r.tr = o.translator()
	o.emit(r, r.tr.Start(m.userMessage()))
	// The extensions' messages for this turn, then steering messages that
	// waited while idle go to the model with the prompt, in the same model
	// call (pi's order: the prompt, then each of them).
	with := o.nextTurn
	o.nextTurn = nil
	if len(o.steerQ) > 0 {
		with = append(with, o.take(&o.steerQ, o.steering)...)
		o.queueChanged()
	}
	for _, w := range with {
		o.emit(r, r.tr.With(w.userMessage()))
	}
	if len(with) > 0 {
		m = joined(append([]message{m}, with...))
	}
	o.startTurn(r, m)
}

// translator makes a run's translator. On the loop.
func (o *runner) translator() *transform.Translator {
	o.onLoop()
	s := o.s
	tr := transform.NewTranslator(nowMillis)
	tr.SetToolNames(s.opts.ToolNames)
	tr.HoldResults()
	tr.SetThinkingLevel(s.st.thinkingLevel())
	if s.capsNow().Persistent {
		// The process goes on after the turn, and background sub-agents
		// with it: their lines come in a later run.
		tr.KeepDetached()
		tr.Adopt(s.subs.take())
	}
	return tr
}

// runQueued runs a turn for what was queued, after a CLI turn that ended
// with the run going on; with nothing queued (taken by a new_session
// meanwhile) the run ends. On the loop.
func (o *runner) runQueued(r *run) {
	o.onLoop()
	next := o.dequeue()
	if len(next) == 0 {
		o.finish(r, r.tr.End())
		return
	}
	for i, q := range next {
		o.delivered(r, r.tr.Inject(q.userMessage()), i == 0)
	}
	o.startTurn(r, joined(next))
}

// ownTurn takes a turn the CLI began by itself (the stream transport's
// [claudecli.Caps.OnOwnTurn]; called on a goroutine of the transport's): when
// idle, it is read at once ([runner.startOwn]); while a run is under way
// it waits until the bridge is idle ([runner.ended]), unless a CLI turn of
// that run takes its lines first (they then show in that run, before its
// prompt's turn).
func (o *runner) ownTurn(t claudecli.OwnTurn) {
	o.post(func() {
		if o.closed {
			return
		}
		if o.cur != nil || o.quiet != nil {
			o.offered = t
			return
		}
		o.startOwn(t)
	})
}

// startOwn claims t and reads it as a quiet turn. On the loop, while idle.
func (o *runner) startOwn(t claudecli.OwnTurn) {
	o.onLoop()
	if !t.Claim() {
		return // taken over meanwhile
	}
	q := &quietTurn{turn: t, tr: o.translator()}
	o.quiet = q
	o.read(t).quiet = q
}

// quietLine handles a line of a quiet turn: until a line begins a turn of
// the CLI's own, which makes it a run (runOwn), or a run of the host's
// stops it. It reports whether its reader reads on. On the loop.
func (o *runner) quietLine(rd *lineReader, line []byte, err error) bool {
	o.onLoop()
	q := rd.quiet
	o.s.out.LineRead()
	switch {
	case errors.Is(err, jsonl.ErrLineTooLong):
		o.tooLong(err)
		return true
	case err != nil: // stopped, or the process ended
		o.quietEnded(q)
		return false
	case len(line) == 0 || line[0] != '{' || q.dropped:
		return true
	case claudecli.OpensTurn(line):
		if q.stopped {
			// A run of the host's has started: the line is the first of
			// its turn.
			q.carry = bytes.Clone(line)
			o.quietEnded(q)
			return false
		}
		o.quiet = nil
		r := o.newRun()
		r.own, r.tr = true, q.tr
		// What waited is for the next prompt, not for this run.
		o.heldSteer, o.heldFollow = o.steerQ, o.followQ
		o.steerQ, o.followQ = nil, nil
		rd.quiet, rd.run = nil, r
		o.runOwn(r, q.turn, line)
		return true
	}
	o.s.followPermissionMode(line)
	evs := q.tr.Append(nil, line)
	o.learnLine(q.tr)
	out := evs[:0]
	for _, ev := range evs {
		if ev.Subagent != nil || ev.Notice != nil {
			out = append(out, ev)
		}
	}
	o.s.toolStarts.seen(out)
	o.s.out.Events(o.notices.pass(o.s.subs.observe(out, o.s.subagentFile(q.tr))))
	return true
}

// quietEnded is a quiet turn's end: the background sub-agents it was shown
// go back for the next run to adopt, and what waited for it starts. On
// the loop.
func (o *runner) quietEnded(q *quietTurn) {
	o.onLoop()
	if o.quiet == q {
		o.quiet = nil
	}
	if !q.dropped {
		o.s.subs.keep(q.tr.Running())
	}
	if q.then != nil {
		q.then(q.carry)
	}
}

// runOwn runs a turn the CLI began by itself as a run: agent_start, the
// turn's events from first on, agent_end, with no prompt. It is a run like
// a prompt's: what the host queues during it goes on in it, abort
// interrupts it. On the loop; the turn's reader reads on for it.
func (o *runner) runOwn(r *run, turn claudecli.Turn, first []byte) {
	o.onLoop()
	o.emit(r, r.tr.StartOwn())
	o.s.log.Debug("claude began a turn by itself", "pid", turn.Pid())
	o.attach(r, turn)
	o.runLine(r, first, nil)
}

// startTurn starts r's next CLI turn for m on a goroutine of its own (the
// transport waits until the CLI is ready for it); the loop goes on with
// turnStarted. On the loop.
func (o *runner) startTurn(r *run, m message) {
	o.onLoop()
	if r.aborted {
		o.finish(r, r.tr.Abort())
		return
	}
	s := o.s
	// As in pi, bash commands the host ran reach the model with the next
	// message, not as messages of their own; so does a todo list the host
	// set.
	text := s.st.takePromptContext(m.text)
	uuid := sessions.NewID()
	first := !r.begun
	r.begun, r.starting = true, true
	o.restEnded() // the turn starts the process it needs
	o.offLoop(func() func() {
		var added []message
		if first && s.ext != nil {
			// As pi, before the run's first model call: what the
			// extensions add to the system prompt goes into its config,
			// the messages they add into the run, after the prompt's.
			added = s.extBeforeStart(m.text)
			if len(added) > 0 {
				text = joined(append([]message{{text: text}}, added...)).text
			}
		}
		session, _ := s.cliSession()
		t := s.transport()
		input := claudecli.UserLine(text, m.images)
		id := ""
		if t.Caps().Persistent {
			// The process may have run a turn of its own while idle (when
			// a background sub-agent or command finished), whose lines
			// come first: the CLI's report on this line tells where the
			// prompt's turn begins.
			input, id = claudecli.UserLineID(text, m.images, uuid), uuid
		}
		turn, err := t.Turn(session, input)
		return func() {
			for _, a := range added {
				if !r.tr.Ended() {
					o.emit(r, r.tr.With(a.userMessage()))
				}
			}
			o.turnStarted(r, turn, err, id, session)
		}
	})
}

// turnStarted makes turn r's CLI turn and reads it, its carried line
// first. On the loop.
func (o *runner) turnStarted(r *run, turn claudecli.Turn, err error, uuid string, session claudecli.Session) {
	o.onLoop()
	s := o.s
	r.starting = false
	if err != nil && r.tr.Ended() { // aborted while it started (abortRun)
		s.log.Debug("starting claude", "err", err)
		return
	}
	if err != nil {
		s.log.Error("starting claude", "err", err)
		o.finish(r, r.tr.Fail("starting claude: "+err.Error()))
		return
	}
	s.log.Debug("turn started", "transport", s.transportName(), "pid", turn.Pid(), "session", session.ID, "resume", session.Exists)
	o.attach(r, turn)
	if uuid != "" {
		r.outstanding[uuid], r.prompt = true, uuid
	}
	rd := o.read(turn)
	rd.run = r
	if first := r.carry; first != nil {
		r.carry = nil
		o.runLine(r, first, nil)
	}
}

// runLine handles a line of r's CLI turn (err: the turn's end), feeding
// the translator and writing the events. It reports whether the turn's
// reader reads on. On the loop.
func (o *runner) runLine(r *run, line []byte, err error) bool {
	o.onLoop()
	s, tr := o.s, r.tr
	s.out.LineRead()
	if s.opts.IdleTimeout > 0 && r.wd != nil {
		r.wd.Reset(s.opts.IdleTimeout)
	}
	if !tr.Ended() {
		switch {
		case r.aborted:
			// pi ends an aborted run at once; what the CLI prints while
			// it stops is drained unseen.
			o.finish(r, tr.Abort())
		case r.idle:
			o.finish(r, tr.Fail(fmt.Sprintf("claude printed nothing for %v; the turn was stopped (--idle-timeout)", s.opts.IdleTimeout)))
		}
	}
	if errors.Is(err, jsonl.ErrLineTooLong) {
		o.tooLong(err)
		return true
	}
	if err != nil {
		o.turnOver(r)
		return false
	}
	if len(line) == 0 || line[0] != '{' {
		s.log.Debug("claude printed a non-JSON line", "line", string(line))
		return true
	}
	s.followPermissionMode(line)
	if uuid, state, ok := claudecli.Lifecycle(line); ok {
		if m, started := o.reported(r, uuid, state); started {
			if tr.Ended() {
				o.delivered(r, nil, true)
			} else {
				o.delivered(r, tr.Steered(m.userMessage()), true)
			}
		}
		return true
	}
	if tr.Ended() {
		if claudecli.IsResult(line) {
			o.resultSeen(r) // the drained turn's end
		}
		return true
	}
	evs := tr.Append(r.evs[:0], line)
	r.evs = evs // reused: the writer encodes each event before the next line
	o.learnLine(tr)
	noteRetry(r, evs)
	s.noteTodos(evs)
	if len(evs) == 0 && s.log.Enabled(context.Background(), slog.LevelDebug) && !bytes.HasPrefix(line, []byte(`{"type":"stream_event"`)) {
		s.log.Debug("claude line not shown", "type", gjson.GetBytes(line, "type").String(), "subtype", gjson.GetBytes(line, "subtype").String())
	}
	if !r.sawSession && tr.SessionID() != "" {
		r.sawSession = true
		s.st.sawSessionID(r.gen, tr.SessionID())
	}
	if at, failed := tr.AtResult(); at {
		if o.resultSeen(r) || !o.continues(r, failed) {
			o.finish(r, append(evs, tr.End()...))
			return true
		}
		evs = append(evs, tr.NextTurn()...)
	}
	o.emit(r, s.subs.observe(evs, s.subagentFile(tr)))
	return true
}

// tooLong tells of a CLI line over the limit (--max-line), which the
// transport skipped: in the log, and to the host as an error notice
// (extension_ui_request notify, notifyType error; pi has no event for a
// lost line). The turn goes on; what the line held (a reply's text, a
// tool's result) is missing from it. On the loop.
func (o *runner) tooLong(err error) {
	o.onLoop()
	o.s.log.Error("claude printed a line over the limit; it is skipped", "err", err)
	o.s.out.Events(o.notices.pass([]transform.Event{transform.NotifyEvent(transform.NotifyError,
		"claude printed a line longer than claude-rpc reads (--max-line); it was skipped and the turn goes on without it: "+err.Error())}))
}

// turnOver follows the end of r's CLI turn: the run goes on with what
// was queued, or it is finished (an aborted run, a turn the CLI ended
// without a result). On the loop.
func (o *runner) turnOver(r *run) {
	o.onLoop()
	tr, turn := r.tr, r.turn
	if r.wd != nil {
		r.wd.Stop()
	}
	switch err := turn.Err(); {
	case tr.Ended():
	case tr.Between() && err == nil:
		if r.aborted {
			o.finish(r, tr.Abort())
			return
		}
		o.runQueued(r)
	case err == nil:
		o.s.log.Warn("claude ended the turn without a result", "pid", turn.Pid())
		o.finish(r, tr.Finish("the turn ended without a result"))
	default:
		o.s.log.Warn("claude ended the turn without a result", "pid", turn.Pid(), "exit", err)
		o.finish(r, tr.Finish(err.Error()))
	}
}

// resultSeen notes a result of r's CLI turn and releases the turn when the
// CLI holds no steering message of r's: the result was the turn's last
// line. It reports whether the run has been aborted (then it ends here).
// On the loop.
func (o *runner) resultSeen(r *run) (aborted bool) {
	o.onLoop()
	r.sawResult = true
	o.maybeRelease(r)
	return r.aborted
}

// continues decides at a result whether the run goes on: with steering
// messages the CLI holds (it runs them next, whatever the result was), or
// with queued messages after a result that was no error. On the loop.
func (o *runner) continues(r *run, failed bool) bool {
	o.onLoop()
	return len(r.outstanding) > 0 || !failed && o.queued()
}

// maybeRelease releases the CLI turn once a result came and no handed
// message is outstanding. On the loop.
func (o *runner) maybeRelease(r *run) {
	o.onLoop()
	if r.sawResult && len(r.outstanding) == 0 && !r.released {
		r.released = true
		r.turn.Release()
	}
}

// reported follows the CLI's report on a user line it was handed
// ([claudecli.Lifecycle]): queued, it still holds it; started, the model
// gets it now; any other state, it let it go. It returns the message when
// the CLI started it, and hands the next one over in one-at-a-time mode.
// A steering message the CLI let go of without starting it (cancelled,
// discarded, refused) goes back to the front of the queue, where
// clear_queue finds it, and is not handed again: the run delivers it as
// its next turn (the queue shown is the same: handed messages are shown
// as waiting). On the loop.
func (o *runner) reported(r *run, uuid, state string) (message, bool) {
	o.onLoop()
	if claudecli.LifecycleHeld(state) || !r.outstanding[uuid] {
		return message{}, false
	}
	delete(r.outstanding, uuid)
	started := state == "started"
	if uuid == r.prompt {
		if started {
			r.sawResult = false // a result before it ended a turn the CLI ran by itself
		}
		o.maybeRelease(r)
		return message{}, false
	}
	var m message
	if i := slices.IndexFunc(r.handed, func(h handedMsg) bool { return h.uuid == uuid }); i >= 0 {
		h := r.handed[i]
		m = h.m
		r.handed = slices.Delete(r.handed, i, i+1)
		if !started && state != "completed" {
			o.requeue(h)
		}
	}
	if started {
		r.sawResult = false // the CLI runs it: the turn goes on to its result
		o.handOver(r)       // one-at-a-time: the next one for the next boundary
	}
	o.maybeRelease(r)
	return m, started
}

// attach makes turn the run's CLI turn: an abort that came while the CLI
// started stops it, and steering that came meanwhile is handed over. On
// the loop.
func (o *runner) attach(r *run, turn claudecli.Turn) {
	o.onLoop()
	r.turn, r.sawResult, r.released = turn, false, false
	if r.compaction == nil {
		r.wd = o.watchdog(r, turn)
	}
	if r.aborted {
		turn.Interrupt()
	}
	o.handOver(r)
}

// handOver sends queued steering messages to the CLI while its turn runs,
// when the transport takes them ([claudecli.Steerer]: the stream
// transport). The CLI gives them to the model at the next tool boundary,
// after the tool results, or runs them right after the turn; the run shows
// each where the CLI started it. In one-at-a-time mode the next is handed
// only once the previous one started, so each boundary delivers one, as pi
// does. Per-turn transports keep them queued until the CLI turn ends. On
// the loop.
func (o *runner) handOver(r *run) {
	o.onLoop()
	if !o.s.capsNow().Steer || r.aborted || r.compaction != nil || r.released {
		return
	}
	st := r.turn.(claudecli.Steerer) // Caps.Steer: the transport's turns are
	s := o.s
	for len(o.steerQ) > 0 && (o.steering == modeAll || len(r.handed) == 0) {
		m := o.steerQ[0]
		if m.handed != "" {
			return // the CLI let it go: delivered as a turn of its own
		}
		id := sessions.NewID()
		text := s.st.pendingContext() + m.text
		if !st.Steer(id, claudecli.UserLineID(text, m.images, id)) {
			return // the turn is over: the run delivers the queue as its next turn
		}
		s.st.dropContext()
		r.handed = append(r.handed, handedMsg{uuid: id, m: m})
		r.outstanding[id] = true
		o.steerQ = o.steerQ[1:]
	}
}

// watchdog stops a turn during which the CLI prints nothing for
// IdleTimeout (an API or a process that hangs). Each line read resets it;
// with no IdleTimeout it never fires.
func (o *runner) watchdog(r *run, turn claudecli.Turn) *time.Timer {
	d := o.s.opts.IdleTimeout
	if d <= 0 {
		d = time.Duration(1<<63 - 1)
	}
	return time.AfterFunc(d, func() {
		o.post(func() {
			if r.turn != turn {
				return // that turn is over
			}
			o.s.log.Error("claude printed nothing for too long; stopping the turn", "idle", d, "pid", turn.Pid())
			r.idle = true
			turn.Interrupt()
		})
	})
}

// noteRetry keeps r.retrying in step with the retry events, for abort_retry.
func noteRetry(r *run, evs []transform.Event) {
	for i := range evs {
		switch evs[i].Type {
		case transform.EventAutoRetryStart:
			r.retrying = true
		case transform.EventAutoRetryEnd:
			r.retrying = false
		}
	}
}

// finish records the run's outcome and queues its last events (ending in
// agent_end) and the answers to abort commands: a command that sees the
// bridge idle is handled after agent_end was queued, so a host that
// prompts on agent_end is never refused as busy. On the loop.
//
// When the extensions handle agent_end, the events before it are queued
// now, and the rest waits, off the loop, for their handlers
// (server.extAgentEnd): the run is current meanwhile, as pi's run is
// active while its extensions see agent_end. The loop lives while that
// wait does (alive counts it).
func (o *runner) finish(r *run, evs []transform.Event) {
	o.onLoop()
	if n := len(evs); n > 0 && evs[n-1].Type == transform.EventAgentEnd && !o.closed && o.s.extEvents.Wants("agent_end") {
		end := evs[n-1]
		o.emit(r, o.s.subs.observe(evs[:n-1], o.s.subagentFile(r.tr)))
		o.alive++
		wait := func() {
			o.s.extAgentEnd(&end)
			o.post(func() {
				o.alive--
				o.finishNow(r, []transform.Event{end})
			})
		}
		if !o.s.goes.start(wait) {
			o.alive--
			o.finishNow(r, []transform.Event{end})
		}
		return
	}
	o.finishNow(r, evs)
}

// finishNow is finish once the extensions saw agent_end. On the loop.
func (o *runner) finishNow(r *run, evs []transform.Event) {
	o.onLoop()
	s, tr := o.s, r.tr
	// The run's last messages are noted before the session learns the
	// run (a /clear in its last turn starts the session over after them).
	o.note(r, evs)
	if r.resets < tr.Resets() {
		o.startOver(r)
	}
	if s.st.learn(r.gen, tr, true) {
		s.saveLimitsLater()
	}
	if s.st.current(r.gen) {
		s.subs.keep(tr.Detached())
	}
	// Handed to the CLI and never started (the run was aborted, the CLI
	// died): back to the front of the queue, as pi keeps an aborted run's
	// queue.
	if len(r.handed) > 0 && o.cur == r {
		o.requeue(r.handed...)
	}
	r.handed = nil
	if n := len(evs); n > 0 && evs[n-1].Type == transform.EventAgentEnd {
		evs[n-1].Continues = o.cur == r && (r.then != nil || !r.aborted && o.queued())
	}
	o.write(s.subs.observe(evs, s.subagentFile(tr)))
	o.ended(r, tr.Messages())
}

// ended makes the bridge idle after r, whose last frames are queued: it
// starts what waits (abort_and_prompt's prompt, messages queued after the
// last result), or, when nothing does, says the bridge settled
// (prompt_result for each prompt that waited for it, agent_settled,
// session_settled), then answers r's abort commands. msgs are r's
// messages (none for a compaction). On the loop.
func (o *runner) ended(r *run, msgs []transform.Message) {
	o.onLoop()
	s := o.s
	defer close(r.done)
	s.link.CancelAll()
	s.toolStarts.forget()
	// What runs next, if anything: decided now, started after this run's
	// last frames (its prompt results among them) are queued.
	var next *message
	var carried []*call
	if o.cur == r { // else replaced by a new session: nothing of it waits
		o.cur = nil
		switch {
		case o.closed: // shutting down: nothing more runs
		case r.then != nil: // abort_and_prompt's prompt
			next = r.then
			if r.thenCall != nil {
				carried = append(carried, r.thenCall)
			}
		case !r.aborted && o.queued():
			// Queued after the run's last result was read: a new run
			// delivers them (an aborted run keeps its queue for the next
			// prompt, as pi).
			m := joined(o.dequeue())
			next = &m
			o.queueChanged()
			carried = r.prompts // they report when that run settles
		}
		if r.own { // what waited for the next prompt is queued again
			o.steerQ = append(o.heldSteer, o.steerQ...)
			o.followQ = append(o.heldFollow, o.followQ...)
			o.heldSteer, o.heldFollow = nil, nil
		}
	}
	// The extensions' messages sent without a turn while r ran join the
	// session now (pi: after the turn they came in).
	for _, m := range o.after {
		o.appendCustom(m)
	}
	o.after = nil
	if r.compaction == nil && (next == nil || r.then != nil) {
		status, failure := promptStatus(msgs)
		for _, c := range r.prompts {
			s.out.Send(promptResultJSON{Type: "prompt_result", ID: c.id, AgentInvoked: true,
				Status: status, Error: failure, SessionSettled: next == nil})
		}
		if next == nil {
			s.out.Send(agentSettledJSON{Type: "agent_settled", Aborted: r.aborted})
			s.out.Send(sessionSettledJSON{Type: "session_settled"})
		}
	}
	for _, c := range r.abortIDs {
		s.respond(c, okResponse(c.id, c.typ, nil))
	}
	if next != nil {
		o.launch(*next).prompts = carried
		return
	}
	if t := o.offered; o.cur == nil && t != nil {
		// A turn the CLI began by itself during r: read it now.
		o.offered = nil
		if !o.closed {
			o.startOwn(t)
		}
	}
	o.idle()
}

// appendCustom adds an extension's message to the session outside a run,
// with pi's message_start and message_end for it. On the loop.
func (o *runner) appendCustom(m message) {
	o.onLoop()
	msg := m.userMessage()
	o.s.st.appendCustomMessage(msg)
	o.s.out.Events([]transform.Event{{Type: transform.EventMessageStart, Message: msg}, {Type: transform.EventMessageEnd, Message: msg}})
}

// sendCustom carries out an extension's sendMessage as pi's AgentSession
// does: deliverAs nextTurn waits for the next prompt's run; while a run
// goes on it is steered (the default) or a follow-up unless triggerTurn
// is false, when it joins the session after the run; idle, triggerTurn
// starts a run with it, else it joins the session at once. On the loop.
func (o *runner) sendCustom(m message, deliverAs string, trigger gjson.Result) {
	o.onLoop()
	switch {
	case deliverAs == "nextTurn":
		o.nextTurn = append(o.nextTurn, m)
	case o.cur != nil && trigger.Type != gjson.False:
		o.queue(m, deliverAs != "followUp")
	case o.cur != nil:
		o.after = append(o.after, m)
	case trigger.Bool():
		o.launch(m)
	default:
		o.appendCustom(m)
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
