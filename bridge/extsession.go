package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/extensions"
)

// extSession is the session as the extensions' calls reach it
// ([extensions.Session]): what their API calls do ([extensions.Actions])
// and the state the pump tells them ([extensions.Pump]), each through the
// server's owners as a host's command would reach them.
type extSession struct{ s *server }

var _ extensions.Session = extSession{}

func (e extSession) Context() context.Context { return e.s.ctx }

func (e extSession) Go(f func()) bool { return e.s.goes.start(f) }

func (e extSession) Call(cmd map[string]any) (gjson.Result, error) { return e.s.internalCall(cmd) }

func (e extSession) WaitIdle() { e.s.waitIdle() }

func (e extSession) Shutdown() { e.s.stop(errShutdown) }

func (e extSession) AppendEntry(customType string, data json.RawMessage) {
	entry := e.s.st.appendCustom(customType, data)
	e.s.out.Send(entryAppendedJSON{Type: "entry_appended", Entry: entry})
}

func (e extSession) Label(entryID, label string) error { return e.s.st.label(entryID, label) }

func (e extSession) SendMessage(msg gjson.Result, deliverAs string, triggerTurn gjson.Result) error {
	m, err := customMessage(msg)
	if err != nil {
		return err
	}
	if !e.s.runs.do(func() { e.s.runs.sendCustom(m, deliverAs, triggerTurn) }) {
		return errClosed
	}
	return nil
}

func (e extSession) SetActiveTools(names []string) { e.s.setActiveTools(names) }

func (e extSession) Error(err extensions.Error) { e.s.extError(err) }

func (e extSession) State() map[string]any { return e.s.extState() }

func (e extSession) WaitModel(ctx context.Context) { _, _ = e.s.cliInfo(ctx) }

// customMessage is an extension's sendMessage argument as a message: its
// content (a string or pi's blocks; none: empty, as pi normalizes it)
// shown to hosts as it is, its text for the model.
func customMessage(v gjson.Result) (message, error) {
	m, err := customFromJSON(v)
	if err != nil {
		return message{}, fmt.Errorf("sendMessage: %w", err)
	}
	m.Timestamp = nowMillis()
	return message{text: m.Text(), custom: &m}, nil
}

// waitIdle returns once no run is going (or the server ends).
func (s *server) waitIdle() {
	for s.ctx.Err() == nil {
		if !s.runs.status().streaming {
			return
		}
		select {
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// extState is the session's state as the extensions read it (ctx.model,
// ctx.isIdle(), ctx.sessionManager's file, ...).
func (s *server) extState() map[string]any {
	rs := s.runs.status()
	info, known := s.knownInfo()
	d, _, _ := s.st.stateData(info, known)
	m := map[string]any{
		"thinkingLevel":   d.ThinkingLevel,
		"idle":            !rs.streaming && !rs.compacting,
		"sessionFile":     d.SessionFile,
		"sessionId":       d.SessionID,
		"pendingMessages": rs.pending,
		"contextUsage":    d.ContextUsage,
		"messageCount":    d.MessageCount,
	}
	if d.SessionName != "" {
		m["sessionName"] = d.SessionName
	}
	if d.Model != nil {
		m["model"] = d.Model
	}
	if known {
		m["models"] = s.st.models(info) // ctx.modelRegistry's lists
	}
	m["allTools"], m["activeTools"] = s.extTools()
	return m
}

// internalSeq numbers the bridge's own calls.
var internalSeq atomic.Int64

// internalCall runs a command as if the host had sent it, through the
// dispatcher and its ordering rules, and returns its response (never
// written to stdout). It blocks until answered or the server ends: call it
// off the dispatcher's goroutine and the runner's loop.
func (s *server) internalCall(cmd map[string]any) (gjson.Result, error) {
	cmd["id"] = fmt.Sprintf("claude-rpc-ext-%d", internalSeq.Add(1))
	line, err := json.Marshal(cmd)
	if err != nil {
		return gjson.Result{}, err
	}
	got := make(chan response, 1)
	l := inLine{b: line, reply: func(r response) {
		select {
		case got <- r:
		default:
		}
	}}
	select {
	case s.internal <- l:
	case <-s.ctx.Done():
		return gjson.Result{}, context.Cause(s.ctx)
	}
	select {
	case r := <-got:
		b, _ := json.Marshal(r)
		res := gjson.ParseBytes(b)
		if !res.Get("success").Bool() {
			return res, errors.New(res.Get("error").String())
		}
		return res.Get("data"), nil
	case <-s.ctx.Done():
		return gjson.Result{}, context.Cause(s.ctx)
	}
}
