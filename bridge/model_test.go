package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestStateModelIsListed: get_state's model is an entry of
// get_available_models, the model the CLI will run (get_settings'
// applied.model, which follows the settings where the "default" entry
// does not), and get_state, the list and get_session_stats agree on its
// limits: before a turn, after set_model.
func TestStateModelIsListed(t *testing.T) {
	models := []claudecli.ModelInfo{
		{Value: "default", ResolvedModel: "claude-opus-9", DisplayName: "Default (recommended)"},
		{Value: "opus", ResolvedModel: "claude-opus-9", DisplayName: "Opus"},
		{Value: "sonnet", ResolvedModel: "claude-sonnet-9", DisplayName: "Sonnet"},
	}
	for _, tc := range []struct {
		name    string
		info    claudecli.Info
		setTo   string // set_model first, if not ""
		want    string
		wantCtx int64
	}{
		{"the CLI says its model", claudecli.Info{Models: models, Model: "claude-sonnet-9", ContextWindow: 1_000_000}, "", "claude-sonnet-9", 1_000_000},
		{"an older CLI: the default entry", claudecli.Info{Models: models}, "", "claude-opus-9", 200_000},
		{"after set_model", claudecli.Info{Models: models, Model: "claude-sonnet-9", ContextWindow: 1_000_000}, "opus", "claude-opus-9", 200_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) { return tc.info, nil }}
			r := newRig(t, &claudetest.Transport{Per: true}, opts)
			list := r.answer(r.sendf(`{"type":"get_available_models"}`))
			if tc.setTo != "" {
				require.True(t, r.answer(r.sendf(`{"type":"set_model","provider":"anthropic","modelId":%q}`, tc.setTo)).Get("success").Bool())
				list = r.answer(r.sendf(`{"type":"get_available_models"}`))
			}
			state := r.answer(r.sendf(`{"type":"get_state"}`)).Get("data.model")
			assert.Equal(t, tc.want, state.Get("id").String())
			entry := list.Get(`data.models.#(id=="` + tc.want + `")`)
			require.True(t, entry.Exists(), "get_state's model is listed: %s", list.Raw)
			assert.JSONEq(t, entry.Raw, state.Raw, "get_state's model is the list's entry")
			assert.Equal(t, tc.wantCtx, state.Get("contextWindow").Int())
			stats := r.answer(r.sendf(`{"type":"get_session_stats"}`))
			assert.Equal(t, tc.wantCtx, stats.Get("data.contextUsage.contextWindow").Int())
		})
	}
}
