//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// slowStart is how long the wrapper of TestCommandsDoNotWaitForEachOther
// makes every CLI start take: a cold machine, a slow disk, an antivirus.
const slowStart = 2500 * time.Millisecond

// TestCommandsDoNotWaitForEachOther drives the real CLI behind a wrapper
// that delays each of its starts: commands that need a CLI process of
// their own (the models and commands of a CLI not running yet) must not
// hold up the others, and an abort must not wait for anything.
func TestCommandsDoNotWaitForEachOther(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tp := range []string{"pipe", "stream"} {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.Start(t)
			wrapper := filepath.Join(t.TempDir(), "slow-claude")
			script := fmt.Sprintf("#!/bin/sh\nsleep %.1f\nexec '%s' \"$@\"\n", slowStart.Seconds(), claudetest.CLI(t))
			require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
			b := startBridgeWith(t, bridgeOpts{srv: srv, cli: wrapper}, "--transport", tp)
			// The bridge is up (it reads the CLI's version after ready,
			// through the same slow wrapper): from here on, no command may
			// wait.
			select {
			case <-b.ready:
			case <-time.After(30 * time.Second):
				t.Fatal("no ready frame")
			}

			// A cold get_available_models, then get_state right behind it.
			// The first get_state of a fresh start (nothing cached, no model
			// named) waits for the CLI to name its model, at most 2 s: hapi
			// reads the model only there (README, "The real model"); it
			// waits for that, not for get_available_models, and the next
			// one is answered at once.
			b.sendJSON(map[string]any{"type": "get_available_models", "id": "models"})
			start := time.Now()
			state := b.call(map[string]any{"type": "get_state"})
			assert.Less(t, time.Since(start), 2*time.Second+500*time.Millisecond, "the first get_state: its bounded wait for the model")
			assert.True(t, state.Get("success").Bool())
			b.sendJSON(map[string]any{"type": "get_state", "id": "again"})
			order, answers := b.answers(30*time.Second, "again", "models")
			t.Logf("the second get_state: %v", answers["again"].took)
			assert.Equal(t, []string{"again", "models"}, order, "get_state behind a cold get_available_models is answered first")
			assert.True(t, answers["again"].Get("success").Bool())
			assert.True(t, answers["models"].Get("success").Bool(), answers["models"].Raw)
			assert.GreaterOrEqual(t, time.Since(start), slowStart, "the models came from a CLI started through the wrapper")

			// During a streaming reply: a cold get_commands (pipe: a query
			// process through the wrapper; stream: the running CLI's
			// answer), then abort right behind it.
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"}).Get("success").Bool())
			b.until(30*time.Second, func(f gjson.Result) bool { return f.Get("assistantMessageEvent.type").String() == "text_delta" })
			b.sendJSON(map[string]any{"type": "get_commands", "id": "commands"})
			start = time.Now()
			b.sendJSON(map[string]any{"type": "abort", "id": "abort"})
			b.until(10*time.Second, isType("agent_end"))
			assert.Less(t, time.Since(start), time.Second, "abort behind a cold get_commands ends the run")
			b.until(30*time.Second, func(f gjson.Result) bool { return f.Get("id").String() == "abort" })

			// get_state while a long bash command runs.
			b.sendJSON(map[string]any{"type": "bash", "command": "sleep 2; echo done", "id": "bash"})
			time.Sleep(100 * time.Millisecond)
			b.sendJSON(map[string]any{"type": "get_state", "id": "state"})
			order, answers = b.answers(30*time.Second, "state", "bash")
			t.Logf("get_state during bash: %v", answers["state"].took)
			assert.Equal(t, []string{"state", "bash"}, order, "get_state during bash is answered before it ends")

			// get_state while new_session ends a running prompt.
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"}).Get("success").Bool())
			b.until(30*time.Second, func(f gjson.Result) bool { return f.Get("assistantMessageEvent.type").String() == "text_delta" })
			before := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
			b.sendJSON(map[string]any{"type": "new_session", "id": "new"})
			b.sendJSON(map[string]any{"type": "get_state", "id": "state"})
			order, answers = b.answers(30*time.Second, "state", "new")
			// new_session answers when the run it ended has ended, a round
			// trip to the CLI (30-60 ms under -race, quiet); get_state, when
			// the session has changed (its early settle). So get_state comes
			// first, or, when the run's end was quicker than the bridge's
			// own answer on a loaded machine, within the bound this test had
			// before it checked the order.
			t.Logf("during new_session: get_state %v, new_session %v", answers["state"].took, answers["new"].took)
			if order[0] != "state" {
				assert.Less(t, answers["state"].took, 100*time.Millisecond, "get_state during new_session, answered after it")
			}
			assert.NotEqual(t, before, answers["state"].Get("data.sessionId").String(), "get_state sees the new session")
			frames := b.runPrompt("after [[say:fresh]]")
			assert.Equal(t, "fresh", deltaText(frames))
		})
	}
}

// answer is a response frame and when it came, after the answers call
// that read it began.
type answer struct {
	gjson.Result
	took time.Duration
}

// answers reads frames until the commands sent with the ids given are all
// answered, and returns those ids in the order of their answers, and the
// answers. Timing-free checks of "X is answered while Y runs" compare the
// order: Y's answer ends Y.
func (b *rpcProc) answers(timeout time.Duration, ids ...string) ([]string, map[string]answer) {
	b.t.Helper()
	began := time.Now()
	var order []string
	got := map[string]answer{}
	for len(got) < len(ids) {
		f := b.next(time.Until(began.Add(timeout)))
		id := f.Get("id").String()
		if f.Get("type").String() != "response" || !slices.Contains(ids, id) {
			continue
		}
		if _, dup := got[id]; dup {
			b.t.Fatalf("%s answered twice: %s", id, f.Raw)
		}
		order = append(order, id)
		got[id] = answer{f, time.Since(began)}
	}
	return order, got
}
