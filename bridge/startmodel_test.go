package bridge

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestNamedModel: the model id the CLI's start-up names, in the CLI's
// order (--model; ANTHROPIC_MODEL in a settings file's env, then in the
// environment; the files' model: the project's settings.local.json and
// settings.json, the user's settings.json); none for an alias, or where
// the CLI may decide otherwise than the files read say.
func TestNamedModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flag  string
		env   []string
		files map[string]string // local, project, user: the settings file's text
		want  string
	}{
		{name: "nothing"},
		{name: "--model, a model id", flag: "claude-x-1", env: []string{"ANTHROPIC_MODEL=claude-y-1"}, want: "claude-x-1"},
		{name: "--model, an alias", flag: "sonnet", env: []string{"ANTHROPIC_MODEL=claude-y-1"}},
		{name: "--model, an alias for 1M", flag: "Opus[1m]"},
		{name: "--model, a model id for 1M", flag: "claude-x-1[1m]", want: "claude-x-1[1m]"},
		{name: "ANTHROPIC_MODEL over the settings", env: []string{"ANTHROPIC_MODEL=us.anthropic.claude-y-1:0"}, files: map[string]string{"local": `{"model":"claude-z-1"}`}, want: "us.anthropic.claude-y-1:0"},
		{name: "an empty ANTHROPIC_MODEL", env: []string{"ANTHROPIC_MODEL="}, files: map[string]string{"user": `{"model":"claude-z-1"}`}, want: "claude-z-1"},
		{name: "local over project over user", files: map[string]string{"local": `{"model":"claude-l-1"}`, "project": `{"model":"claude-p-1"}`, "user": `{"model":"claude-u-1"}`}, want: "claude-l-1"},
		{name: "project over user", files: map[string]string{"local": `{"permissions":{}}`, "project": `{"model":"claude-p-1"}`, "user": `{"model":"claude-u-1"}`}, want: "claude-p-1"},
		{name: "the user's", files: map[string]string{"user": `{"model":"claude-u-1"}`}, want: "claude-u-1"},
		{name: "an alias first", files: map[string]string{"project": `{"model":"haiku"}`, "user": `{"model":"claude-u-1"}`}},
		{name: "a file that is not JSON", files: map[string]string{"project": `{"model":"claude-p-1",}`, "user": `{"model":"claude-u-1"}`}},
		{name: "a file's env over the environment and the files' model", env: []string{"ANTHROPIC_MODEL=claude-y-1"}, files: map[string]string{"local": `{"model":"claude-l-1"}`, "user": `{"env":{"ANTHROPIC_MODEL":"claude-e-1"}}`}, want: "claude-e-1"},
		{name: "the files' env in their order", files: map[string]string{"project": `{"env":{"ANTHROPIC_MODEL":"claude-p-1"}}`, "user": `{"env":{"ANTHROPIC_MODEL":"claude-u-1"}}`}, want: "claude-p-1"},
		{name: "an alias in a file's env", env: []string{"ANTHROPIC_MODEL=claude-y-1"}, files: map[string]string{"user": `{"env":{"ANTHROPIC_MODEL":"opus"}}`}},
		{name: "a file that is not JSON, beside ANTHROPIC_MODEL", env: []string{"ANTHROPIC_MODEL=claude-y-1"}, files: map[string]string{"user": `not json`}},
		{name: "--model over a file's env", flag: "claude-x-1", files: map[string]string{"user": `{"env":{"ANTHROPIC_MODEL":"claude-e-1"}}`}, want: "claude-x-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd, config := t.TempDir(), t.TempDir()
			for which, text := range tc.files {
				p := map[string]string{
					"local":   filepath.Join(cwd, ".claude", "settings.local.json"),
					"project": filepath.Join(cwd, ".claude", "settings.json"),
					"user":    filepath.Join(config, "settings.json"),
				}[which]
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
				require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
			}
			managedDir = filepath.Join(t.TempDir(), "none")
			assert.Equal(t, tc.want, namedModel(tc.flag, tc.env, cwd, config))
			if tc.want != "" && tc.flag == "" {
				managedDir = t.TempDir()
				assert.Empty(t, namedModel(tc.flag, tc.env, cwd, config), "with managed settings on the machine")
			}
		})
	}
}

// TestFirstStateWaitsForTheModel: with no model named at start and the
// CLI not yet answered, get_state is answered once the CLI said its
// model, with the state as of when it was sent; a command sent after it
// is not held back.
func TestFirstStateWaitsForTheModel(t *testing.T) {
	release := make(chan struct{})
	info := claudecli.Info{Models: []claudecli.ModelInfo{{Value: "default", ResolvedModel: "claude-opus-9", DisplayName: "Opus"}}, Model: "claude-opus-9", ContextWindow: 1_000_000}
	opts := Options{query: func(ctx context.Context, _ claudecli.Config, _ time.Duration) (claudecli.Info, error) {
		select {
		case <-release:
			return info, nil
		case <-ctx.Done():
			return claudecli.Info{}, ctx.Err()
		}
	}}
	r := newRig(t, &claudetest.Transport{Per: true}, opts)
	state := r.sendf(`{"type":"get_state"}`)
	name := r.sendf(`{"type":"set_session_name","name":"later"}`)
	assert.True(t, r.answer(name).Get("success").Bool())
	close(release)
	got := r.answer(state)
	require.True(t, got.Get("success").Bool(), got.Raw)
	assert.Equal(t, "claude-opus-9", got.Get("data.model.id").String())
	assert.Equal(t, "Opus", got.Get("data.model.name").String(), "the list's entry")
	assert.Equal(t, int64(1_000_000), got.Get("data.contextUsage.contextWindow").Int())
	assert.False(t, got.Get("data.sessionName").Exists(), "the state as of get_state: %s", got.Get("data.sessionName").Raw)
	assert.Greater(t, r.index("response:"+state), r.index("response:"+name), "answered after set_session_name")
}

// TestFirstStateWaitIsBounded: when the CLI has not said its model by
// the bound after the start, get_state answers without one; past the
// bound it waits for nothing.
func TestFirstStateWaitIsBounded(t *testing.T) {
	const bound = 300 * time.Millisecond
	opts := Options{firstModelWait: bound, query: func(ctx context.Context, _ claudecli.Config, _ time.Duration) (claudecli.Info, error) {
		<-ctx.Done() // a CLI that never answers
		return claudecli.Info{}, ctx.Err()
	}}
	began := time.Now()
	r := newRig(t, &claudetest.Transport{Per: true}, opts)
	got := r.answer(r.sendf(`{"type":"get_state"}`))
	require.True(t, got.Get("success").Bool(), got.Raw)
	assert.False(t, got.Get("data.model").Exists(), got.Get("data.model").Raw)
	assert.GreaterOrEqual(t, time.Since(began), bound)
	asked := time.Now()
	got = r.answer(r.sendf(`{"type":"get_state"}`))
	assert.False(t, got.Get("data.model").Exists())
	t.Logf("get_state past the bound: %v", time.Since(asked))
	assert.Less(t, time.Since(asked), bound, "past the bound, answered from state")
}

// TestFirstStateNamedModel: a model id named at start is get_state's
// model at once, and once the CLI has answered, its list's entry.
func TestFirstStateNamedModel(t *testing.T) {
	info := claudecli.Info{Models: []claudecli.ModelInfo{{Value: "default", ResolvedModel: "claude-opus-9"}, {Value: "claude-x-1", ResolvedModel: "claude-x-1", DisplayName: "X 1"}}, Model: "claude-x-1", ContextWindow: 400_000}
	opts := Options{query: func(ctx context.Context, _ claudecli.Config, _ time.Duration) (claudecli.Info, error) {
		return info, nil
	}}
	opts.CLI.Env = []string{"ANTHROPIC_MODEL=claude-x-1"}
	r := newRig(t, &claudetest.Transport{Per: true}, opts)
	got := r.answer(r.sendf(`{"type":"get_state"}`))
	assert.Equal(t, "claude-x-1", got.Get("data.model.id").String())
	assert.Equal(t, "claude-x-1", got.Get("data.model.name").String(), "before the CLI answered: the id")
	require.True(t, r.answer(r.sendf(`{"type":"get_available_models"}`)).Get("success").Bool())
	got = r.answer(r.sendf(`{"type":"get_state"}`))
	assert.Equal(t, "claude-x-1", got.Get("data.model.id").String())
	assert.Equal(t, "X 1", got.Get("data.model.name").String(), "the list's entry")
	assert.Equal(t, int64(400_000), got.Get("data.model.contextWindow").Int())
}
