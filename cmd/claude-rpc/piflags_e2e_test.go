//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestPiHostStartupFlags starts claude-rpc as pi 1.5.2's RpcClient starts
// its agent for new RpcClient({provider: "anthropic", model, args}):
// `--mode rpc --provider anthropic --model M` and then args, here a pi
// host's usual flags. The bridge starts (no exit status 2), passes what it
// maps on to the CLI, and warns about the rest.
func TestPiHostStartupFlags(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--provider", "anthropic", "--model", "anthropic/claude-sonnet-4-5:high",
		"--name", "pi host", "--session-dir", t.TempDir(), "--offline", "--no-mcp",
		"-t", "read,bash", "-xt", "write",
		"--api-key", "sk-from-the-flag",
		"--system-prompt", "You are a test agent.", "--append-system-prompt", "Answer briefly.",
		"-ne", "-e", "./extension.ts", "-nc", "--models", "anthropic/*", "-a")

	st := b.call(map[string]any{"type": "get_state"})
	require.True(t, st.Get("success").Bool(), st.Raw)
	b.runPrompt("hello [[say:hi]]")

	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	r := reqs[len(reqs)-1]
	assert.Equal(t, "claude-sonnet-4-5", gjson.GetBytes(r.Body, "model").String(), "--model without its provider and thinking suffix")
	assert.Equal(t, "sk-from-the-flag", r.Header.Get("x-api-key"), "--api-key")
	system := gjson.GetBytes(r.Body, "system").Raw
	assert.Contains(t, system, "You are a test agent.", "--system-prompt")
	assert.Contains(t, system, "Answer briefly.", "--append-system-prompt")
	var tools []string
	for _, tool := range gjson.GetBytes(r.Body, "tools.#.name").Array() {
		tools = append(tools, tool.String())
	}
	assert.Contains(t, tools, "Read", "--tools read,bash")
	assert.Contains(t, tools, "Bash", "--tools read,bash")
	assert.NotContains(t, tools, "Write", "--tools read,bash; -xt write")
	assert.NotContains(t, tools, "Edit", "--tools read,bash")

	// One warning for each flag without effect (written before the first
	// frame).
	for _, w := range []string{"--no-extensions ignored", "--extension ignored", "--no-context-files ignored", "--models ignored", "--approve ignored"} {
		assert.Contains(t, b.stderr.String(), w)
	}
	assert.NotContains(t, b.stderr.String(), "--name ignored")
}

// TestPiHostNoTools: pi's -nt becomes the CLI's --tools= (empty) and
// --strict-mcp-config, which the CLI takes: the turn runs, with no tools.
func TestPiHostNoTools(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "-nt")
	b.runPrompt("hello [[say:hi]]")
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	for _, name := range []string{"Read", "Bash", "Edit", "Write"} {
		assert.NotContains(t, gjson.GetBytes(reqs[len(reqs)-1].Body, "tools.#.name").Raw, `"`+name+`"`)
	}
}
