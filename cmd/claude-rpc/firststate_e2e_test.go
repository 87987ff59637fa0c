//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// firstModelWait is the bridge's (bridge/startmodel.go): how long after
// its start get_state waits for the CLI to say its model.
const firstModelWait = 2 * time.Second

// startFile is a settings file a case writes: in the home ("~/…"), the
// working folder ("./…") or another folder ("@/…", the case's
// CLAUDE_CONFIG_DIR=@).
type startFile struct{ path, body string }

// firstStateCases are what the CLI may be started with, and the model it
// then runs (checked against the fake API's requests: the CLI's order is
// --model; ANTHROPIC_MODEL in a settings file's env, then in its
// environment; the model of the project's settings.local.json, its
// settings.json, the user's settings.json).
var firstStateCases = []struct {
	name  string
	files []startFile
	env   []string
	args  []string
	want  string
}{
	{name: "the CLI's default", want: "claude-opus-5-5"},
	{name: "an alias in the user's settings", files: []startFile{{"~/.claude/settings.json", `{"model":"sonnet"}`}}, want: "claude-sonnet-5-5"},
	{name: "the project's settings over the user's", files: []startFile{{"~/.claude/settings.json", `{"model":"claude-sonnet-4-5-20250929"}`}, {"./.claude/settings.json", `{"model":"haiku"}`}}, want: "claude-haiku-5-5"},
	{name: "the project's local settings over its settings", files: []startFile{{"./.claude/settings.json", `{"model":"haiku"}`}, {"./.claude/settings.local.json", `{"model":"claude-sonnet-4-5-20250929"}`}}, want: "claude-sonnet-4-5-20250929"},
	{name: "ANTHROPIC_MODEL over the settings", env: []string{"ANTHROPIC_MODEL=claude-custom-1"}, files: []startFile{{"./.claude/settings.local.json", `{"model":"fable"}`}}, want: "claude-custom-1"},
	{name: "a settings file's env over ANTHROPIC_MODEL", env: []string{"ANTHROPIC_MODEL=claude-custom-1"}, files: []startFile{{"./.claude/settings.json", `{"model":"fable"}`}, {"~/.claude/settings.json", `{"env":{"ANTHROPIC_MODEL":"claude-custom-2"}}`}}, want: "claude-custom-2"},
	{name: "--model over ANTHROPIC_MODEL", args: []string{"--model", "fable"}, env: []string{"ANTHROPIC_MODEL=claude-custom-1"}, want: "claude-fable-5-2"},
	{name: "CLAUDE_CONFIG_DIR's settings", env: []string{"CLAUDE_CONFIG_DIR=@"}, files: []startFile{{"@/settings.json", `{"model":"claude-haiku-4-5-20251001"}`}, {"~/.claude/settings.json", `{"model":"sonnet"}`}}, want: "claude-haiku-4-5-20251001"},
	{name: "settings that are not JSON", files: []startFile{{"~/.claude/settings.json", `{"model":"sonnet",}`}}, want: "claude-opus-5-5"},
}

// writeStart writes a case's files and returns its environment, for a
// bridge with home and folder dir.
func writeStart(t *testing.T, home, dir string, files []startFile, env []string) []string {
	t.Helper()
	other := t.TempDir()
	for _, f := range files {
		p := strings.NewReplacer("~", home, ".", dir, "@", other).Replace(f.path[:1]) + f.path[1:]
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(f.body), 0o600))
	}
	var out []string
	for _, kv := range env {
		out = append(out, strings.Replace(kv, "=@", "="+other, 1))
	}
	return out
}

// TestFirstStateModel: on a machine where the CLI has never said anything
// (no info cache), the first get_state, sent with the bridge's start,
// names the model the CLI then runs (the first request's), an entry of
// get_available_models: from what the CLI is started with when that names
// a model id, else from the CLI's own answer, waited for at most
// firstModelWait (past it, on a machine too loaded, the model is left
// out: the test then checks that it waited that long). How long it took
// is logged.
func TestFirstStateModel(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tp := range []string{"stream", "pipe"} {
		for _, tc := range firstStateCases {
			t.Run(tp+"/"+tc.name, func(t *testing.T) {
				home, dir := t.TempDir(), t.TempDir()
				env := writeStart(t, home, dir, tc.files, tc.env)
				began := time.Now()
				b := startBridgeWith(t, bridgeOpts{home: home, dir: dir, env: env}, append([]string{"--transport", tp}, tc.args...)...)
				state := b.call(map[string]any{"type": "get_state"})
				took := time.Since(began)
				t.Logf("first get_state %v after the start: model %s", took.Round(time.Millisecond), state.Get("data.model.id"))
				require.True(t, state.Get("success").Bool(), state.Raw)
				model := state.Get("data.model.id").String()
				list := b.call(map[string]any{"type": "get_available_models"})
				require.True(t, list.Get("success").Bool(), list.Raw)
				if model == "" && took >= firstModelWait {
					// A machine too loaded for the CLI to answer within
					// the bound: then the model is left out, and the
					// next get_state has it.
					t.Logf("the CLI did not answer within %v", firstModelWait)
					model = b.call(map[string]any{"type": "get_state"}).Get("data.model.id").String()
				}
				assert.Equal(t, tc.want, model, "the first get_state's model")
				assert.True(t, list.Get(`data.models.#(id=="`+model+`")`).Exists(), "get_state's model %q is listed: %s", model, list.Get("data.models.#.id"))
				b.runPrompt("[[say:one]]")
				assert.Equal(t, strings.TrimSuffix(tc.want, "[1m]"), b.lastRequest().Get("model").String(), "the model run")
			})
		}
	}
}

// TestFirstStateModelSlowCLI: with a CLI whose every start takes slowStart
// (2.5 s, longer than firstModelWait), the first get_state names at once
// a model id the CLI's start-up names (read from its settings, not asked:
// the CLI could not have answered), and without one answers once
// firstModelWait has passed, leaving the model out. Other commands sent
// meanwhile are not held back.
func TestFirstStateModelSlowCLI(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files []startFile
		env   []string
		want  string // "": no model
	}{
		{name: "a model id in the project's settings", files: []startFile{{"./.claude/settings.json", `{"model":"claude-sonnet-4-5-20250929"}`}}, want: "claude-sonnet-4-5-20250929"},
		{name: "a model id in ANTHROPIC_MODEL", env: []string{"ANTHROPIC_MODEL=us.anthropic.claude-opus-4-1-20250805-v1:0"}, want: "us.anthropic.claude-opus-4-1-20250805-v1:0"},
		{name: "an alias", files: []startFile{{"~/.claude/settings.json", `{"model":"sonnet"}`}}},
		{name: "nothing named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wrapper := filepath.Join(t.TempDir(), "slow-claude")
			script := fmt.Sprintf("#!/bin/sh\nsleep %.1f\nexec '%s' \"$@\"\n", slowStart.Seconds(), claudetest.CLI(t))
			require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
			home, dir := t.TempDir(), t.TempDir()
			env := writeStart(t, home, dir, tc.files, tc.env)
			began := time.Now()
			b := startBridgeWith(t, bridgeOpts{cli: wrapper, home: home, dir: dir, env: env}, "--transport", "stream")
			b.sendJSON(map[string]any{"type": "get_state", "id": "state"})
			b.sendJSON(map[string]any{"type": "set_session_name", "id": "name", "name": "first"})
			frames := b.until(slowStart, func(f gjson.Result) bool { return f.Get("id").String() == "state" })
			took := time.Since(began)
			t.Logf("first get_state %v after the start: model %s", took.Round(time.Millisecond), frames[len(frames)-1].Get("data.model.id"))
			state := frames[len(frames)-1]
			require.True(t, state.Get("success").Bool(), state.Raw)
			if tc.want != "" {
				assert.Equal(t, tc.want, state.Get("data.model.id").String())
				assert.Less(t, took, slowStart/5, "answered at once")
				return
			}
			assert.False(t, state.Get("data.model").Exists(), "no model the CLI did not say: %s", state.Get("data.model").Raw)
			assert.GreaterOrEqual(t, took, firstModelWait, "waited for the CLI")
			assert.Empty(t, state.Get("data.sessionName").String(), "the state as of when it was sent: set_session_name came after it")
			var ids []string
			for _, f := range frames {
				if f.Get("type").String() == "response" {
					ids = append(ids, f.Get("id").String())
				}
			}
			assert.Equal(t, []string{"name", "state"}, ids, "set_session_name was answered first, not held back")
		})
	}
}
