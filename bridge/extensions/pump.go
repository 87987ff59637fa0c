package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Pump owns the hand-over of frames to the extension host: the frame
// writer's tap (its goroutine: it must not block, nor take the state's
// lock, which a queuer may hold while it waits for the writer) copies the
// frames of the types the extensions handle into its queue (Tapped,
// Tap); its own goroutine tells the host the session's state before the
// frames that follow a change of it, then the frame. Its mutex is taken
// only in its methods, for short sections that call nothing.
type Pump struct {
	h       *Host
	s       Session
	log     *slog.Logger
	handled atomic.Pointer[map[string]bool] // nil until the extensions loaded

	mu      sync.Mutex
	q       [][]byte
	started bool
	startup chan struct{} // closed once the startup session_start's handlers returned
	wake    chan struct{}
	done    chan struct{}
}

// NewPump returns the pump from the bridge's frames to h, which tells it
// s's state.
func NewPump(h *Host, s Session, log *slog.Logger) *Pump {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pump{h: h, s: s, log: log, startup: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// stateBefore are the frames after which the session's state changed:
// the host hears the state before them.
var stateBefore = map[string]bool{
	"agent_start": true, "agent_end": true, "turn_start": true, "turn_end": true, "message_end": true,
	"tool_execution_start": true, "tool_execution_end": true, "agent_settled": true,
}

// Wants reports whether the extensions handle frames of type typ (none
// without extensions: a nil Pump). Any goroutine.
func (p *Pump) Wants(typ string) bool {
	if p == nil {
		return false
	}
	h := p.handled.Load()
	return h != nil && (*h)[typ]
}

// Started reports whether the extensions loaded and the hand-over began
// (Loaded): from then on they know the session. Any goroutine.
func (p *Pump) Started() bool {
	return p != nil && p.handled.Load() != nil
}

// Tapped reports whether the writer hands frames of type typ to Tap:
// those the extensions handle, but agent_end, which the runner gives them
// itself before the host sees it (the bridge's extAgentEnd). On the
// writer's goroutine.
func (p *Pump) Tapped(typ string) bool {
	return typ != "agent_end" && p.Wants(typ)
}

// Tap queues a frame the extensions handle. On the writer's goroutine:
// never blocks.
func (p *Pump) Tap(frame []byte) {
	p.mu.Lock()
	p.q = append(p.q, frame)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Loaded starts the hand-over once the extensions loaded: the state, then
// session_start (reason startup) as pi fires it when it binds them, whose
// handlers it waits for (ctx); then the frames, in order.
func (p *Pump) Loaded(ctx context.Context) {
	p.mu.Lock()
	first := !p.started
	p.started = true
	p.mu.Unlock()
	if first {
		h := p.h.HandledEvents()
		p.handled.Store(&h)
		go func() {
			// As pi's: the session's model is known when its extensions
			// start (the CLI says it: the info cache, or its process).
			info, cancel := context.WithTimeout(p.s.Context(), startupInfoWait)
			p.s.WaitModel(info)
			cancel()
			if _, err := p.Ask(p.s.Context(), "session_start", json.RawMessage(`{"type":"session_start","reason":"startup"}`)); err != nil {
				p.log.Warn("extensions: session_start", "err", err)
			}
			close(p.startup)
			p.run()
		}()
	}
	select {
	case <-p.startup:
	case <-ctx.Done():
	}
}

// startupInfoWait bounds how long the startup session_start waits for the
// CLI to say its model (ctx.model).
const startupInfoWait = 10 * time.Second

// FlushState tells the host the session's state as it is now. Off the
// writer's goroutine and the runner's loop; nothing for a nil Pump.
func (p *Pump) FlushState() {
	if p == nil {
		return
	}
	p.h.SetState(p.s.State())
}

// Ask gives the extensions' handlers an event whose answer the bridge
// waits on (a session_before_*, input, user_bash, agent_end, the startup
// session_start): the session's state first, then event (of type typ),
// and returns what they answered. It waits CallWait at most ("typ took
// too long"), or until ctx ends. Off the writer's goroutine and the
// runner's loop.
func (p *Pump) Ask(ctx context.Context, typ string, event any) (gjson.Result, error) {
	p.FlushState()
	ctx, cancel := context.WithTimeoutCause(ctx, CallWait, errors.New(typ+" took too long"))
	defer cancel()
	return p.h.Emit(ctx, event)
}

func (p *Pump) run() {
	for {
		p.mu.Lock()
		q := p.q
		p.q = nil
		p.mu.Unlock()
		for _, f := range q {
			if stateBefore[gjson.GetBytes(f, "type").String()] {
				p.FlushState()
			}
			p.h.Event(f)
		}
		select {
		case <-p.wake:
		case <-p.done:
			return
		}
	}
}

// Stop ends the pump's goroutine; the frames still queued are not handed
// over.
func (p *Pump) Stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
}
