package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/transform"
)

// Actions carries out the extensions' API calls ([Callbacks].Action) on a
// [Session], as the host's commands of the same effect would be, and
// answers the extension when it waits. The calls it does not wait for run
// one after another, in the order it made them, as pi makes them
// (setThinkingLevel, sendMessage, ...), with what else the bridge queues
// among them (Push: ctx.ui's notices); each awaited one on a goroutine of
// its own (waitForIdle may wait for a run to end). Its methods may be
// called from any goroutine; Do and Push never block (the host's reader
// calls them).
type Actions struct {
	s    Session
	log  *slog.Logger
	q    queue
	cmds atomic.Int32 // extension commands running (Command)
}

// NewActions returns the actions carried out on s.
func NewActions(s Session, log *slog.Logger) *Actions {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Actions{s: s, log: log}
	a.q.start = s.Go
	return a
}

// Do carries out act: off the host's reader (an internal call waits for
// the bridge's dispatcher). Never blocks.
func (a *Actions) Do(act Action) {
	if act.Awaited() {
		a.s.Go(func() { a.run(act) })
		return
	}
	a.q.push(func() { a.run(act) })
}

// Push queues f among the calls the extensions do not wait for, after
// those made before (a notify after pi.setThinkingLevel comes after
// thinking_level_changed, as under pi). Never blocks.
func (a *Actions) Push(f func()) { a.q.push(f) }

// Settle returns once what was asked without waiting before it was
// carried out (5 s at most), or ctx ends: pi carries such calls out
// before the handler that made them returns, so the bridge settles after
// an awaited handler (input, a command, agent_end) before it goes on
// (bridge/doc.go's rule 6). Not from f of Push.
func (a *Actions) Settle(ctx context.Context) { a.q.settle(ctx) }

// Command runs run, an extension command's handler and its answer: the
// shutdown an extension asks for meanwhile waits for it (5 s at most), so
// that the command that asked is answered first.
func (a *Actions) Command(run func()) {
	a.cmds.Add(1)
	defer a.cmds.Add(-1)
	run()
}

// run carries out act and answers it.
func (a *Actions) run(act Action) {
	v, err := a.do(act)
	if err != nil {
		a.log.Warn("extension: "+act.Name+" failed", "err", err)
		if !act.Awaited() {
			a.s.Error(Error{ExtensionPath: "<runtime>", Event: snake(act.Name), Error: err.Error()})
		}
	}
	act.Reply(v, err)
}

// snake is pi's name of an action's event in extension_error
// (sendMessage → send_message).
func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// errNotYet is an API call claude-rpc does not carry out (yet): the README's
// extension table says which and why.
func errNotYet(name string) error {
	return fmt.Errorf("%s is not supported by claude-rpc", name)
}

// shutdownWaitsForCommands bounds how long an extension's shutdown waits
// for the extension commands that run (the one that asked among them) to
// be answered.
const shutdownWaitsForCommands = 5 * time.Second

// do is what act does to the session: mostly the host's command of the
// same effect, through the dispatcher (Session.Call).
func (a *Actions) do(act Action) (any, error) {
	s, args := a.s, act.Args
	cancelled := func(v gjson.Result, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return map[string]any{"cancelled": v.Get("cancelled").Bool()}, nil
	}
	switch act.Name {
	case "setSessionName":
		_, err := s.Call(map[string]any{"type": "set_session_name", "name": args.Get("name").String()})
		return nil, err
	case "setModel":
		_, err := s.Call(map[string]any{"type": "set_model", "provider": args.Get("provider").String(), "modelId": args.Get("id").String()})
		return err == nil, nil
	case "setThinkingLevel":
		_, err := s.Call(map[string]any{"type": "set_thinking_level", "level": args.Get("level").String()})
		return nil, err
	case "abort":
		_, err := s.Call(map[string]any{"type": "abort"})
		return nil, err
	case "compact":
		v, err := s.Call(map[string]any{"type": "compact", "customInstructions": args.Get("customInstructions").String()})
		return v.Value(), err
	case "newSession":
		return cancelled(s.Call(map[string]any{"type": "new_session", "parentSession": args.Get("parentSession").String()}))
	case "switchSession":
		return cancelled(s.Call(map[string]any{"type": "switch_session", "sessionPath": args.Get("sessionPath").String()}))
	case "fork":
		return cancelled(s.Call(map[string]any{"type": "fork", "entryId": args.Get("entryId").String()}))
	case "waitForIdle":
		s.WaitIdle()
		return nil, nil
	case "sendUserMessage":
		text := transform.ContentText(args.Get("content"))
		cmd := map[string]any{"type": "prompt", "message": text}
		switch args.Get("options.deliverAs").String() {
		case "steer":
			cmd["streamingBehavior"] = "steer"
		case "followUp":
			cmd["streamingBehavior"] = "followUp"
		}
		_, err := s.Call(cmd)
		return nil, err
	case "shutdown":
		// pi's RPC mode exits once idle, after answering the command that
		// asked; claude-rpc ends as at stdin's end.
		go func() {
			s.WaitIdle()
			for wait := time.Now().Add(shutdownWaitsForCommands); a.cmds.Load() > 0 && time.Now().Before(wait) && s.Context().Err() == nil; {
				time.Sleep(20 * time.Millisecond)
			}
			s.Shutdown()
		}()
		return nil, nil
	case "appendEntry":
		var data json.RawMessage
		if d := args.Get("data"); d.Exists() {
			data = json.RawMessage(d.Raw)
		}
		s.AppendEntry(args.Get("customType").String(), data)
		return nil, nil
	case "setLabel":
		return nil, s.Label(args.Get("entryId").String(), args.Get("label").String())
	case "sendMessage":
		return nil, s.SendMessage(args.Get("message"), args.Get("options.deliverAs").String(), args.Get("options.triggerTurn"))
	case "setActiveTools":
		var active []string
		for _, n := range args.Get("toolNames").Array() {
			active = append(active, n.String())
		}
		s.SetActiveTools(active)
		return nil, nil
	case "navigateTree":
		return nil, errors.New("navigateTree is not supported by claude-rpc: a Claude session does not branch in place (fork starts a new session from an entry)")
	}
	return nil, errNotYet(act.Name)
}
