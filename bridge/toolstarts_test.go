package bridge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/claude-rpc/claude-rpc/transform"
)

func TestToolStartsWaitsForTheStart(t *testing.T) {
	start := func(id string) []transform.Event {
		return []transform.Event{{Type: transform.EventToolExecutionStart, ToolCallID: id}}
	}
	sub := func(id string) []transform.Event {
		inner := start(id)[0]
		return []transform.Event{{Type: transform.EventSubagentEvent, Subagent: &transform.Subagent{ID: "a", Event: &inner}}}
	}
	for _, tc := range []struct {
		name string
		evs  func(string) []transform.Event
	}{{"the run's", start}, {"a sub-agent's", sub}} {
		t.Run(tc.name, func(t *testing.T) {
			var ts toolStarts
			// Seen first: the wait returns at once.
			ts.seen(tc.evs("t1"))
			done := make(chan struct{})
			go func() { ts.wait(context.Background(), "t1"); close(done) }()
			select {
			case <-done:
			case <-time.After(toolStartWait / 2):
				t.Fatal("a start seen before the wait did not release it")
			}
			// Waited for first: released by the start, not before.
			waited := make(chan struct{})
			go func() { ts.wait(context.Background(), "t2"); close(waited) }()
			ts.seen(start("other"))
			select {
			case <-waited:
				t.Fatal("released by another call's start")
			case <-time.After(50 * time.Millisecond):
			}
			ts.seen(tc.evs("t2"))
			select {
			case <-waited:
			case <-time.After(toolStartWait / 2):
				t.Fatal("the start did not release the wait")
			}
			// A start seen twice does not panic; forget keeps what is waited for.
			ts.seen(start("t3"))
			ts.seen(start("t3"))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); ts.wait(ctx, "t4") }()
			assert.Eventually(t, func() bool { ts.mu.Lock(); defer ts.mu.Unlock(); return ts.byID["t4"] != nil }, time.Second, time.Millisecond)
			ts.forget()
			ts.mu.Lock()
			assert.NotContains(t, ts.byID, "t3", "a start nobody waited for is forgotten")
			assert.Contains(t, ts.byID, "t4", "a wait's channel is kept")
			ts.mu.Unlock()
			cancel() // its context ends it
			wg.Wait()
		})
	}
}
