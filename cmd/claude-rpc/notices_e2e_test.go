//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// noticesOf are the extension_ui_request notify and setStatus frames of
// frames, each as method|key or level|text.
func noticesOf(t *testing.T, frames []gjson.Result) []string {
	var out []string
	for _, f := range frames {
		if f.Get("type").String() != "extension_ui_request" {
			continue
		}
		assert.NotEmpty(t, f.Get("id").String(), "a notice has an id: %s", f.Raw)
		switch f.Get("method").String() {
		case "notify":
			out = append(out, "notify|"+f.Get("notifyType").String()+"|"+f.Get("message").String())
		case "setStatus":
			key := f.Get("statusKey").String()
			if strings.HasPrefix(key, "claude.hook.") {
				key = "claude.hook.ID"
			}
			out = append(out, "setStatus|"+key+"|"+f.Get("statusText").String())
		}
	}
	return out
}

// TestHookNotices: the project's hooks (its .claude/settings.json) show
// as the CLI runs them: a status while each runs, cleared when it ends,
// and a warning for the one that failed, on each transport.
func TestHookNotices(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tp := range claudecli.Transports() {
		t.Run(tp, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, ".claude"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"hooks":{
 "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo checking"}]}],
 "PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo post-hook broke >&2; exit 1"}]}]}}`), 0o644))
			b := startBridgeWith(t, bridgeOpts{dir: dir}, "--transport", tp)
			got := noticesOf(t, b.runPrompt("[[bash:echo hooked]]"))
			assert.Equal(t, []string{
				"setStatus|claude.hook.ID|hook PreToolUse:Bash running",
				"setStatus|claude.hook.ID|",
				"setStatus|claude.hook.ID|hook PostToolUse:Bash running",
				"setStatus|claude.hook.ID|",
				"notify|warning|hook PostToolUse:Bash failed (exit 1): post-hook broke",
			}, got)
		})
	}
}

// TestClearStartsOver: /clear is said (a notify), and the conversation
// starts over: get_messages no longer lists what came before, and the
// model's next call does not get it, on each transport; also in a run
// that goes on after the clear (testClearThenFollowUp).
func TestClearStartsOver(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tp := range []string{"stream", "pipe"} {
		t.Run(tp, func(t *testing.T) {
			b := startBridge(t, "--transport", tp)
			b.runPrompt("Remember pelican [[say:noted]]")
			assert.Contains(t, b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Raw, "pelican")
			got := noticesOf(t, b.runPrompt("/clear"))
			assert.Contains(t, got, "notify|info|The conversation was cleared: it starts over")
			msgs := b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
			assert.NotContains(t, msgs.Raw, "pelican", "get_messages after /clear")
			b.runPrompt("after [[say:two]]")
			assert.NotContains(t, b.lastRequest().Get("messages").Raw, "pelican", "the model's context after /clear")
			msgs = b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
			assert.NotContains(t, msgs.Raw, "pelican")
			assert.Contains(t, msgs.Raw, "after")
		})
		t.Run(tp+"/follow-up", func(t *testing.T) { testClearThenFollowUp(t, tp) })
	}
}

// testClearThenFollowUp: /clear in a run that goes on (a follow-up
// queued while it runs) starts the session over at the clear: the
// follow-up's model call does not get what came before, its CLI turn
// works on the CLI's new session, and its messages go to the new
// session's pi file, not the old one's.
func testClearThenFollowUp(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("Remember pelican [[say:noted]]")
	old := b.call(map[string]any{"type": "get_state"}).Get("data")
	// One write: the follow-up is queued while /clear's run is under
	// way (the dispatcher takes them in order).
	b.send(`{"id":"clear","type":"prompt","message":"/clear"}` + "\n" + `{"id":"then","type":"follow_up","message":"after [[say:two]]"}`)
	frames := b.until(60*time.Second, isType("agent_end"))
	b.settled(frames[len(frames)-1])
	assert.Equal(t, []string{"/clear", "after [[say:two]]"}, userTexts(frames[len(frames)-1]), "one run")
	assert.NotContains(t, b.lastRequest().Get("messages").Raw, "pelican", "the follow-up's model call after /clear")

	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	require.NotEqual(t, old.Get("sessionFile").String(), st.Get("sessionFile").String(), "a new pi file")
	require.NotEqual(t, old.Get("sessionId").String(), st.Get("sessionId").String(), "the CLI's new session")
	oldPi, err := os.ReadFile(old.Get("sessionFile").String())
	require.NoError(t, err)
	assert.NotContains(t, string(oldPi), "after [[say:two]]", "the old session's pi file")
	pf, err := sessions.ReadPi(st.Get("sessionFile").String())
	require.NoError(t, err, "the new session's pi file")
	assert.Equal(t, st.Get("sessionId").String(), pf.Header.ClaudeSessionID)
	var texts []string
	for _, e := range pf.Entries {
		if e.Type == "message" {
			texts = append(texts, gjson.GetBytes(e.Raw, "message.content.0.text").String())
		}
	}
	assert.Equal(t, []string{"after [[say:two]]", "two"}, texts)
	msgs := b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
	assert.NotContains(t, msgs.Raw, "pelican")
	assert.Len(t, msgs.Array(), 2)

	// The next run goes on in the new session.
	b.runPrompt("next [[say:three]]")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "after [[say:two]]")
	assert.NotContains(t, b.lastRequest().Get("messages").Raw, "pelican")
}

// TestCommandsChangedMidSession: a command file added while the stream
// transport's CLI runs reaches get_commands once the CLI reports it
// (commands_changed; 2.1.328 reports it with its next turn's lines).
func TestCommandsChangedMidSession(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	dir := t.TempDir()
	b := startBridgeWith(t, bridgeOpts{dir: dir}, "--transport", "stream")
	b.runPrompt("[[say:one]]")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".claude", "commands"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude", "commands", "hello-notices.md"), []byte("Say hi\n"), 0o644))
	has := func() bool {
		return b.call(map[string]any{"type": "get_commands"}).Get(`data.commands.#(name=="hello-notices")`).Exists()
	}
	deadline := time.Now().Add(20 * time.Second)
	for !has() && time.Now().Before(deadline) {
		b.runPrompt("/cost")
	}
	assert.True(t, has(), "get_commands lists the command added mid-session")
}
