package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/transform"
)

func nowMillis() int64 { return time.Now().UnixMilli() }

// runPrompt runs one prompt: a turn of the transport, and one more for each
// steering or follow-up message the host queues meanwhile, all inside one
// agent_start … agent_end. It relays the CLI's lines as events and owns the
// run until [server.finish]; after that it drains what the CLI still
// prints for the turn.
func (s *server) runPrompt(r *run, m message) {
	defer s.wg.Done()
	tr := transform.NewTranslator(nowMillis)
	// Messages queued after this answer (between the last result and
	// finish) are delivered by a new run that finish starts. Steering
	// messages already handed to the CLI run whatever the result was: the
	// CLI runs them next.
	tr.SetMoreComing(func(failed bool) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !r.aborted && (len(r.handed) > 0 || !failed && s.queued())
	})
	tr.SetSteered(func(uuid string) (transform.Message, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		m, ok := r.started(uuid)
		if ok {
			s.handOver(r) // one-at-a-time: the next one for the next boundary
		}
		return m.userMessage(), ok
	})
	s.emit(tr.Start(m.userMessage()))
	for {
		if !s.runTurn(r, tr, m) {
			return
		}
		// The CLI turn ended and the run goes on with what was queued.
		s.mu.Lock()
		next := s.dequeue()
		s.mu.Unlock()
		if len(next) == 0 { // taken by a new_session meanwhile
			s.finish(r, tr, tr.End())
			return
		}
		for _, q := range next {
			s.emit(tr.Inject(q.userMessage()))
		}
		m = joined(next)
	}
}

// runTurn runs one CLI turn of the run for m. It reports whether the run
// goes on with a queued message; otherwise the run is finished.
func (s *server) runTurn(r *run, tr *transform.Translator, m message) bool {
	s.mu.Lock()
	aborted := r.aborted
	session := s.session()
	// As in pi, bash commands the host ran reach the model with the next
	// message, not as messages of their own; so does a todo list the host
	// set.
	text := s.takeBashContext() + m.text + s.takeTodoContext()
	s.mu.Unlock()
	if aborted {
		s.finish(r, tr, tr.Abort())
		return false
	}
	// Turn waits until the CLI is ready (the previous turn fully over).
	turn, err := s.transport.Turn(session, claudecli.UserLine(text, m.images))
	if err != nil {
		s.log.Error("starting claude", "err", err)
		s.finish(r, tr, tr.Fail("starting claude: "+err.Error()))
		return false
	}
	s.log.Debug("turn started", "transport", s.transport.Name(), "pid", turn.Pid(), "session", session.ID, "resume", session.Exists)
	s.attach(r, turn)

	// The watchdog: a turn during which the CLI prints nothing for
	// IdleTimeout is stopped (an API or a process that hangs).
	var watchdog *time.Timer
	if d := s.opts.IdleTimeout; d > 0 {
		watchdog = time.AfterFunc(d, func() {
			s.log.Error("claude printed nothing for too long; stopping the turn", "idle", d, "pid", turn.Pid())
			r.idle.Store(true)
			turn.Interrupt()
		})
		defer watchdog.Stop()
	}

	sawSession := false
	var evs []transform.Event // reused: emit encodes each event before the next line
	for {
		line, err := turn.Next()
		s.w.lineRead()
		if watchdog != nil {
			watchdog.Reset(s.opts.IdleTimeout)
		}
		if !tr.Ended() {
			s.mu.Lock()
			aborted = r.aborted
			s.mu.Unlock()
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
		if tr.Ended() {
			continue // drain what follows the result or the abort
		}
		if len(line) == 0 || line[0] != '{' {
			s.log.Debug("claude printed a non-JSON line", "line", string(line))
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
			s.mu.Lock()
			s.sessionID = tr.SessionID()
			s.mu.Unlock()
		}
		if tr.Ended() {
			s.finish(r, tr, evs)
			continue
		}
		s.emit(evs)
	}
	switch {
	case tr.Ended():
		return false
	case tr.Between() && turn.ExitDescription() == "":
		s.mu.Lock()
		aborted = r.aborted
		s.mu.Unlock()
		if aborted {
			s.finish(r, tr, tr.Abort())
			return false
		}
		return true
	}
	desc := turn.ExitDescription()
	if desc == "" {
		desc = "the turn ended without a result"
	}
	s.log.Warn("claude ended the turn without a result", "pid", turn.Pid(), "exit", desc)
	s.finish(r, tr, tr.Finish(desc))
	return false
}

// attach makes turn the run's CLI turn: an abort that came while the CLI
// started stops it, and steering that came meanwhile is handed over.
func (s *server) attach(r *run, turn claudecli.Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.turn = turn
	if r.aborted {
		turn.Interrupt()
	}
	s.handOver(r)
}

// emit queues events for the host.
func (s *server) emit(evs []transform.Event) { s.w.events(evs) }

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
// agent_end) and the answers to abort commands, all under s.mu: a command
// that sees the bridge idle is handled after agent_end was queued, so a host
// that prompts on agent_end is never refused as busy.
func (s *server) finish(r *run, tr *transform.Translator, evs []transform.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, tr.Messages()...)
	// Handed to the CLI and never started (the run was aborted, the CLI
	// died): back to the front of the queue, as pi keeps an aborted run's
	// queue.
	for i := len(r.handed) - 1; i >= 0; i-- {
		s.steerQ = append([]message{r.handed[i].m}, s.steerQ...)
	}
	r.handed = nil
	if sid := tr.SessionID(); sid != "" {
		s.sessionID = sid
	}
	if m := tr.Model(); m != "" {
		s.model = m
	}
	if l := tr.Limits(); l.ContextWindow > 0 {
		s.limits = l
	}
	s.emit(evs)
	s.ended(r)
}

// ended makes the bridge idle after r, whose last frames are queued:
// answers its abort commands and starts what waits. Called with s.mu held.
func (s *server) ended(r *run) {
	s.run = nil
	s.cancelWaiting()
	for _, id := range r.abortIDs {
		s.w.send(okResponse(id, "abort", nil))
	}
	switch {
	case r.then != nil: // abort_and_prompt's prompt
		s.launch(*r.then)
	case !r.aborted && s.queued():
		// Queued after the run's last result was read: a new run delivers
		// them (an aborted run keeps its queue for the next prompt, as pi).
		s.launch(joined(s.dequeue()))
	}
}

// stateData is get_state's data: pi's fields in pi's order, plus
// interruptMode and queuedMessageCount, which pi's forks (omp, xcsh) add.
type stateData struct {
	Model                 modelInfo `json:"model"`
	ThinkingLevel         string    `json:"thinkingLevel"`
	IsStreaming           bool      `json:"isStreaming"`
	IsCompacting          bool      `json:"isCompacting"`
	SteeringMode          string    `json:"steeringMode"`
	FollowUpMode          string    `json:"followUpMode"`
	InterruptMode         string    `json:"interruptMode"`
	SessionFile           string    `json:"sessionFile,omitempty"`
	SessionID             string    `json:"sessionId"`
	SessionName           string    `json:"sessionName,omitempty"`
	AutoCompactionEnabled bool      `json:"autoCompactionEnabled"`
	MessageCount          int       `json:"messageCount"`
	PendingMessageCount   int       `json:"pendingMessageCount"`
	QueuedMessageCount    int       `json:"queuedMessageCount"`
	// TodoPhases is xcsh's: the session's todo list.
	TodoPhases []transform.TodoPhase `json:"todoPhases"`
	// Transport is claude-rpc's own: how the CLI is driven.
	Transport string `json:"transport"`
}

// modelInfo is pi's Model.
type modelInfo struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	API           string    `json:"api"`
	Provider      string    `json:"provider"`
	BaseURL       string    `json:"baseUrl"`
	Reasoning     bool      `json:"reasoning"`
	Input         []string  `json:"input"`
	Cost          modelCost `json:"cost"`
	ContextWindow int64     `json:"contextWindow"`
	MaxTokens     int64     `json:"maxTokens"`
}

// modelCost is a model's price in dollars per million tokens, as far as the
// CLI's model descriptions tell it (priceOf): cache prices never.
type modelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// state is get_state's data.
func (s *server) state() stateData {
	s.mu.Lock()
	defer s.mu.Unlock()
	return stateData{
		Model:                 s.modelInfo(),
		ThinkingLevel:         s.thinkingLevel(),
		IsStreaming:           s.run != nil && !s.run.compact,
		IsCompacting:          s.run != nil && s.run.compact,
		SteeringMode:          s.steeringMode,
		FollowUpMode:          s.followUpMode,
		InterruptMode:         s.interruptMode,
		SessionFile:           s.transcriptPath(),
		SessionID:             s.sessionID,
		SessionName:           s.sessionName,
		AutoCompactionEnabled: !s.settings.noAutoCompact,
		MessageCount:          len(s.messages),
		PendingMessageCount:   s.pending(),
		QueuedMessageCount:    s.pending(),
		TodoPhases:            s.todos.list.Phases(),
		Transport:             s.transport.Name(),
	}
}

// modelInfo describes the model the CLI runs: the one it reported, else the
// one asked for with --model, else "default" (the CLI's name for its default
// model). Context window and output cap are the CLI's figures once a turn
// reported them; until then, those of current Claude models.
func (s *server) modelInfo() modelInfo {
	id := s.model
	if id == "" {
		id = "default"
	}
	return s.describeModel(id)
}

// describeModel is pi's Model for a model id, with the limits known so far.
func (s *server) describeModel(id string) modelInfo {
	limits := s.limits
	if limits.ContextWindow == 0 {
		limits = transform.Limits{ContextWindow: 200_000, MaxTokens: 32_000}
	}
	return modelInfo{
		ID: id, Name: id, API: transform.API, Provider: transform.Provider, BaseURL: s.baseURL,
		Reasoning: true, Input: []string{"text", "image"},
		ContextWindow: limits.ContextWindow, MaxTokens: limits.MaxTokens,
	}
}
