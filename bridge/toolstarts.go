package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/claude-rpc/claude-rpc/transform"
)

// toolStarts tells the tools the bridge runs for the CLI (an extension's
// or the host's, over MCP) when their call's tool_execution_start was
// queued for the host: the CLI calls such a tool while the lines of the
// message that asked for it may still be on their way, and a tool's
// progress (tool_execution_update) must not reach the host before its
// start, as pi runs a tool only after it announced it.
//
// The runner's loop marks (seen); the tool calls' goroutines wait. Any
// goroutine may call either; neither blocks under the lock.
type toolStarts struct {
	mu sync.Mutex
	// byID holds a channel per tool call id, closed once its start was
	// queued; made by whichever of seen and wait comes first.
	byID map[string]chan struct{}
}

// toolStartWait bounds how long a tool call waits for its start: a call
// the bridge never shows a start for (none is known to exist) runs after
// it.
const toolStartWait = 2 * time.Second

// seen marks the tool calls whose tool_execution_start is among evs (a
// sub-agent's too).
func (t *toolStarts) seen(evs []transform.Event) {
	for i := range evs {
		ev := &evs[i]
		if ev.Type == transform.EventSubagentEvent && ev.Subagent != nil && ev.Subagent.Event != nil {
			ev = ev.Subagent.Event
		}
		if ev.Type == transform.EventToolExecutionStart && ev.ToolCallID != "" {
			t.mu.Lock()
			c := t.chLocked(ev.ToolCallID)
			select {
			case <-c: // a start seen twice
			default:
				close(c)
			}
			t.mu.Unlock()
		}
	}
}

// wait returns once id's start was queued, ctx ended, or toolStartWait
// passed; the id is forgotten then (a call is waited for once).
func (t *toolStarts) wait(ctx context.Context, id string) {
	if id == "" {
		return
	}
	t.mu.Lock()
	ch := t.chLocked(id)
	t.mu.Unlock()
	timer := time.NewTimer(toolStartWait)
	defer timer.Stop()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-timer.C:
	}
	t.mu.Lock()
	delete(t.byID, id)
	t.mu.Unlock()
}

// chLocked is id's channel, made if missing. Under t.mu.
func (t *toolStarts) chLocked(id string) chan struct{} {
	if t.byID == nil {
		t.byID = map[string]chan struct{}{}
	}
	c, ok := t.byID[id]
	if !ok {
		c = make(chan struct{})
		t.byID[id] = c
	}
	return c
}

// forget drops the starts nobody waited for (the CLI's own tools): the
// runner calls it when a run ends.
func (t *toolStarts) forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, c := range t.byID {
		select {
		case <-c:
			delete(t.byID, id)
		default: // a call still waits for it
		}
	}
}
