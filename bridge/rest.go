package bridge

import "time"

// Releasing the CLI process of a session that rests (Options.ReleaseIdle).
// The stream transport keeps a CLI process between prompts so the next one
// starts at once; a session nobody prompts pays for it (~180 MB each).
// Once the bridge has rested for ReleaseIdle, the runner asks the
// transport to end the process ([claudecli.Caps.Rest]); everything else
// (the session, its settings and name, the queues, open dialogs of the
// host's) is the bridge's and stays. The next prompt resumes the session
// in a new process; a command by which a host shows it is back
// (returnSignals) starts that process at once (prewarm), so the prompt
// that follows does not wait for it.
//
// What rests means: no run (a prompt's, a compaction, a turn the CLI ran
// by itself) and, in the transport, no turn open, no task of
// the CLI's running (its end would be lost with the process), no control
// request under way (a permission dialog, a host tool call: it is not
// released while one is open; the release waits until it is answered) and
// no change of process. A session that does not rest when the time comes
// is looked at again ReleaseIdle later; a run's end and a return signal
// start the wait again.

// returnSignals are the commands by which a host shows it is back with a
// session, before it prompts: what hosts send as a session is opened or
// shown (pi-acp's loadSession asks get_messages and get_state; pi's
// RpcClient and hapi ask get_state and the models and commands; a session
// view reads get_entries or a page of messages). A settings change
// (set_model, set_thinking_level …) needs no entry: it starts the process
// it needs anyway (applySettings' prewarm), as a session switch does.
var returnSignals = map[string]bool{
	"get_state": true, "get_messages": true, "get_messages_page": true, "get_entries": true, "get_tree": true,
	"get_session_stats": true, "get_available_models": true, "get_commands": true, "get_available_commands": true,
	"get_last_assistant_text": true,
}

// restTimer calls the runner's rest on its loop once the bridge has been
// idle for the configured time. Owned by the loop (arm, stop); its timer's
// func only posts.
type restTimer struct {
	after time.Duration
	t     *time.Timer
	// released: the process was released and none started since (by a
	// run's turn, or a prewarm).
	released bool
}

// arm (re)starts the wait, when releasing is on and the transport can.
// On the loop.
func (o *runner) armRest() {
	o.onLoop()
	rt := &o.rest
	if rt.after <= 0 || o.closed || o.s.capsNow().Rest == nil {
		return
	}
	if rt.t == nil {
		rt.t = time.AfterFunc(rt.after, func() { o.post(o.restNow) })
		return
	}
	rt.t.Reset(rt.after)
}

// stopRest stops the wait (shutdown). On the loop.
func (o *runner) stopRest() {
	o.onLoop()
	if o.rest.t != nil {
		o.rest.t.Stop()
	}
}

// restNow releases the CLI process when the bridge rests; when the
// transport says its process is busy, it looks again later. A run under way looks again at its end (idle). On
// the loop: a prompt is either handled before (the bridge does not rest)
// or after (its turn waits for the process's exit, then resumes the
// session in a new one).
func (o *runner) restNow() {
	o.onLoop()
	rest := o.s.capsNow().Rest
	if o.closed || rest == nil || o.cur != nil {
		return
	}
	// A quiet turn that began no turn of the CLI's own is what the CLI
	// printed after a turn's result while none was open (its report on
	// the prompt's line, a status) or a background task's lines: it holds
	// the turn open, and is stopped here. The transport then says whether
	// the process rests (a task running does not); if not, the CLI's next
	// line is read as a quiet turn again.
	o.stopQuiet(false)
	released, err := rest()
	switch {
	case err != nil:
		o.s.log.Debug("the CLI process does not rest; not released", "why", err)
		o.armRest()
	case released:
		o.rest.released = true
		o.s.log.Debug("the session rests: its CLI process is released", "after", o.rest.after)
	}
}

// restEnded says a process runs the session again (or is about to): a
// run's turn starts one, or a prewarm did. On the loop.
func (o *runner) restEnded() {
	o.onLoop()
	o.rest.released = false
}

// wake is a return signal's: the wait starts again, and the process the
// next prompt runs in is started now if it was released (a host that
// asks while the process runs keeps it: a host polling get_state more
// often than ReleaseIdle keeps its session warm).
func (s *server) wake() {
	if s.opts.ReleaseIdle <= 0 {
		return
	}
	o := s.runs
	o.post(func() {
		o.armRest()
		if o.rest.released && o.cur == nil {
			o.rest.released = false
			s.goes.start(func() { <-s.prewarm() })
		}
	})
}
