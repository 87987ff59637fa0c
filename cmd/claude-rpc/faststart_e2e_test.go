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

// TestFastStart: with a CLI whose every start (--version too) takes
// slowStart (2.5 s), the bridge writes ready first and at once, answers
// get_state without waiting for the CLI longer than firstModelWait (the
// CLI's default model: only the CLI can say it, and this one cannot in
// time, so the model is left out), and a prompt sent at once has its
// answer and agent_start after ready. The second start, with the info
// cache the first one wrote, answers get_available_models, get_commands
// and get_state from it; a changed CLI binary misses the cache.
//
// The bounds: the cached answers are asserted under slowStart/5 = 500 ms,
// get_state at a cold start under firstModelWait + slowStart/5 (the cold
// get_state took 106 ms once under -race in a loaded CI run, 15 ms here,
// before it waited for the model): anything that waited for the CLI takes
// at least slowStart, so the bound tells the two apart with a wide margin
// on a loaded machine; the figures measured are logged.
func TestFastStart(t *testing.T) {
	t.Parallel()
	for _, tp := range []string{"pipe", "stream"} {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.Start(t)
			wrapper := filepath.Join(t.TempDir(), "slow-claude")
			write := func(comment string) {
				script := fmt.Sprintf("#!/bin/sh\n# %s\nsleep %.1f\nexec '%s' \"$@\"\n", comment, slowStart.Seconds(), claudetest.CLI(t))
				require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
			}
			write("first")
			home, dir, cache := t.TempDir(), t.TempDir(), t.TempDir()
			start := func() *rpcProc {
				return startBridgeWith(t, bridgeOpts{srv: srv, cli: wrapper, home: home, dir: dir}, "--transport", tp, "--cache-dir", cache)
			}

			// Cold: nothing cached.
			b := start()
			began := time.Now()
			b.sendJSON(map[string]any{"type": "get_state", "id": "state"})
			b.sendJSON(map[string]any{"type": "prompt", "id": "prompt", "message": "[[say:first]]"})
			select {
			case <-b.ready: // closed only when ready is the first frame
			case <-time.After(slowStart / 2):
				t.Fatal("no ready frame first, at once")
			}
			state := b.until(firstModelWait+slowStart/2, func(f gjson.Result) bool { return f.Get("id").String() == "state" })
			took := time.Since(began)
			t.Logf("cold get_state: %v", took)
			assert.Less(t, took, firstModelWait+slowStart/5, "get_state at a cold start")
			assert.True(t, state[len(state)-1].Get("success").Bool())
			assert.False(t, state[len(state)-1].Get("data.model").Exists(), "a model the CLI did not say in time")
			frames := b.until(60*time.Second, isType("agent_end"))
			types := []string{}
			for _, f := range append(state, frames...) {
				if f.Get("type").String() != "message_update" {
					types = append(types, f.Get("type").String()+":"+f.Get("id").String())
				}
			}
			require.Contains(t, types, "response:prompt")
			require.Contains(t, types, "agent_start:")
			assert.Less(t, slices.Index(types, "response:prompt"), slices.Index(types, "agent_start:"), "%v", types)
			assert.GreaterOrEqual(t, time.Since(began), slowStart, "the prompt ran through the wrapper")
			assert.Equal(t, "first", deltaText(frames))
			models := b.call(map[string]any{"type": "get_available_models"})
			require.True(t, models.Get("success").Bool(), models.Raw)
			commands := b.call(map[string]any{"type": "get_commands"})
			require.True(t, commands.Get("success").Bool(), commands.Raw)
			code, _ := b.closeAndWait(30 * time.Second)
			require.Equal(t, 0, code)

			// Warm: the same CLI and settings.
			b = start()
			<-b.ready
			for _, cmd := range []string{"get_available_models", "get_commands", "get_state"} {
				began := time.Now()
				r := b.call(map[string]any{"type": cmd})
				took := time.Since(began)
				t.Logf("warm %s: %v", cmd, took)
				assert.Less(t, took, slowStart/5, "%s from the cache", cmd)
				assert.True(t, r.Get("success").Bool(), r.Raw)
				switch cmd {
				case "get_available_models":
					assert.JSONEq(t, models.Get("data").Raw, r.Get("data").Raw)
				case "get_commands":
					assert.Equal(t, commands.Get("data.commands.#").Int(), r.Get("data.commands.#").Int())
				case "get_state":
					id := r.Get("data.model.id").String()
					assert.True(t, models.Get(`data.models.#(id=="`+id+`")`).Exists(), "get_state's model %s is one of the list", id)
				}
			}
			code, _ = b.closeAndWait(30 * time.Second)
			require.Equal(t, 0, code)

			// A changed CLI: the cache misses, the models come from it.
			write("second, a new version")
			b = start()
			<-b.ready
			began = time.Now()
			r := b.call(map[string]any{"type": "get_available_models"})
			assert.True(t, r.Get("success").Bool(), r.Raw)
			assert.GreaterOrEqual(t, time.Since(began), slowStart, "a changed CLI is asked again")
		})
	}
}
