//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestRealModel: get_state's model is always an entry of
// get_available_models, the model the CLI runs (the next API request's),
// and get_state, the list and get_session_stats agree on its context
// window and output cap: before the first turn, after it, after set_model;
// with the model chosen by the CLI's settings file too.
func TestRealModel(t *testing.T) { forStreamAndPipe(t, testRealModel) }

func testRealModel(t *testing.T, tp string) {
	for _, tc := range []struct {
		name     string
		settings string // the user's settings.json
		want     string // the model before any set_model
	}{
		{"the CLI's default", "", "claude-opus-5-5"},
		{"the settings' model", `{"model":"sonnet"}`, "claude-sonnet-5-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.settings != "" {
				require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(tc.settings), 0o600))
			}
			srv := claudetest.Start(t)
			b := startBridgeWith(t, bridgeOpts{srv: srv, home: home}, "--transport", tp)
			agree := func(when, want string) {
				t.Helper()
				list := b.call(map[string]any{"type": "get_available_models"})
				require.True(t, list.Get("success").Bool(), list.Raw)
				model := b.call(map[string]any{"type": "get_state"}).Get("data.model")
				assert.Equal(t, want, model.Get("id").String(), when)
				entry := list.Get(`data.models.#(id=="` + model.Get("id").String() + `")`)
				if assert.True(t, entry.Exists(), "%s: get_state's model %s is listed", when, model.Get("id")) {
					assert.JSONEq(t, entry.Raw, model.Raw, when)
				}
				stats := b.call(map[string]any{"type": "get_session_stats"})
				assert.Equal(t, model.Get("contextWindow").Int(), stats.Get("data.contextUsage.contextWindow").Int(), when)
			}
			agree("before the first turn", tc.want)
			b.runPrompt("[[say:one]]")
			assert.Equal(t, tc.want, b.lastRequest().Get("model").String(), "the model get_state said is the one run")
			agree("after the first turn", tc.want)
			require.True(t, b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": "fable"}).Get("success").Bool())
			agree("after set_model", "claude-fable-5-2")
			b.runPrompt("[[say:two]]")
			assert.Equal(t, "claude-fable-5-2", b.lastRequest().Get("model").String())
			agree("after a turn on the new model", "claude-fable-5-2")
		})
	}
}
