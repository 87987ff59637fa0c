//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestSettingsStayOutOfTheConversation: set_model, set_thinking_level,
// cycle_model and set_fast_mode between prompts add nothing to the next
// API request (no local-command blocks: the CLI records a model changed on
// a running process as a /model command), no message to the run, to
// get_messages or to the session loaded again; the next request runs the
// new model.
func TestSettingsStayOutOfTheConversation(t *testing.T) {
	forStreamAndPipe(t, testSettingsStayOut)
}

func testSettingsStayOut(t *testing.T, tp string) {
	srv := claudetest.Start(t)
	home, dir := t.TempDir(), t.TempDir()
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, "--transport", tp)
	// Only what the host typed, in each user message of a request (the
	// CLI's own <system-reminder> blocks aside).
	typed := func(req gjson.Result) []string {
		var out []string
		for _, m := range req.Get("messages").Array() {
			if m.Get("role").String() != "user" {
				continue
			}
			for _, c := range m.Get("content").Array() {
				txt := c.Get("text").String()
				if c.Get("type").String() == "text" && !strings.HasPrefix(txt, "<system-reminder>") {
					out = append(out, txt)
				}
			}
		}
		return out
	}
	prompt := func(text string) {
		t.Helper()
		frames := b.runPrompt(text)
		n := 0
		for _, f := range frames {
			if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
				n++
				assert.NotContains(t, f.Get("message.content.0.text").String(), "Set model to")
			}
		}
		assert.Equal(t, 1, n, "%s: one assistant message in the run", text)
	}

	prompt("one [[say:1]]")
	for _, cmd := range []map[string]any{
		{"type": "set_model", "provider": "anthropic", "modelId": "fable"},
		{"type": "set_thinking_level", "level": "high"},
		{"type": "set_fast_mode", "enabled": true},
	} {
		r := b.call(cmd)
		require.True(t, r.Get("success").Bool(), r.Raw)
	}
	began := time.Now()
	prompt("two [[say:2]]")
	t.Logf("the prompt after the changes took %v", time.Since(began))
	req := b.lastRequest()
	assert.Equal(t, "claude-fable-5-2", req.Get("model").String())
	assert.Equal(t, []string{"one [[say:1]]", "two [[say:2]]"}, typed(req), "the request carries what the host typed and nothing else")
	assert.NotContains(t, req.Get("messages").Raw, "local-command")

	cyc := b.call(map[string]any{"type": "cycle_model"})
	require.True(t, cyc.Get("success").Bool(), cyc.Raw)
	next := cyc.Get("data.model.id").String()
	prompt("three [[say:3]]")
	req = b.lastRequest()
	assert.Equal(t, next, req.Get("model").String())
	assert.Equal(t, []string{"one [[say:1]]", "two [[say:2]]", "three [[say:3]]"}, typed(req))
	assert.NotContains(t, req.Get("messages").Raw, "local-command")

	msgs := b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
	assert.Equal(t, int64(6), msgs.Get("#").Int(), "three prompts, three answers: %s", msgs.Raw)
	assert.NotContains(t, msgs.Raw, "Set model to")
	session := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	// The session loaded again.
	b = startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, "--transport", tp, "--session", session)
	msgs = b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
	assert.Equal(t, int64(6), msgs.Get("#").Int(), "loaded: %s", msgs.Raw)
	assert.NotContains(t, msgs.Raw, "Set model to")
}
