//go:build linux

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// transcripts lists the session files under the bridge's HOME.
func (b *rpcProc) transcripts() []string {
	files, _ := filepath.Glob(filepath.Join(b.home, ".claude", "projects", "*", "*.jsonl"))
	return files
}

// TestPrewarm: the stream transport starts its CLI with the bridge, before
// any prompt, and that process calls no API and writes no transcript; the
// first prompt runs in it, on the session get_state reported. After
// new_session the next process is warm too. --prewarm=false starts none.
// (Turn processes: a query process may ask the CLI for its models beside
// it on a fresh machine, under load.)
func TestPrewarm(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t)
		var warm []int
		require.Eventually(t, func() bool { warm = b.turnPids(); return len(warm) == 1 }, 15*time.Second, 20*time.Millisecond,
			"a CLI process starts with the bridge")
		sessionID := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
		// It has initialized: the models come from it, not from a process
		// of their own.
		require.True(t, b.call(map[string]any{"type": "get_available_models"}).Get("success").Bool())
		time.Sleep(500 * time.Millisecond)
		assert.Empty(t, b.srv.Requests(), "no API request while warming")
		assert.Empty(t, b.transcripts(), "no transcript while warming")
		assert.Equal(t, warm, b.turnPids(), "still the one process")

		frames := b.runPrompt("first [[say:warm]]")
		assert.Equal(t, "warm", deltaText(frames))
		assert.Equal(t, warm, b.turnPids(), "the first prompt ran in the warm process")
		files := b.transcripts()
		require.Len(t, files, 1)
		assert.Equal(t, sessionID+".jsonl", filepath.Base(files[0]), "on the session get_state reported")

		require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
		require.Eventually(t, func() bool {
			p := b.turnPids()
			return len(p) == 1 && p[0] != warm[0]
		}, 15*time.Second, 20*time.Millisecond, "the new session's process starts at once")
		requests := len(b.srv.MessagesRequests())
		time.Sleep(300 * time.Millisecond)
		assert.Len(t, b.srv.MessagesRequests(), requests, "no API request while warming")
		assert.Len(t, b.transcripts(), 1, "no transcript for the new session yet")
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--prewarm=false")
		b.call(map[string]any{"type": "get_state"})
		time.Sleep(time.Second)
		assert.Empty(t, b.turnPids(), "no CLI process before the first prompt")
		frames := b.runPrompt("[[say:cold]]")
		assert.Equal(t, "cold", deltaText(frames))
	})
}

// TestPrewarmKeepsTheExtensionsText: an extension's before_agent_start
// text (title.ts's paragraph) is known only at a prompt, so the first
// bridge's warm process is replaced at its first prompt; the bridge keeps
// the text, and the next bridge on the same folder warms its process with
// it: its first prompt runs in the warm process, the paragraph in the
// model's system prompt.
func TestPrewarmKeepsTheExtensionsText(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	ext := extensionFixture(t, "title.ts")
	const paragraph = "Name this chat with the name_chat tool"
	for i, replaced := range []bool{true, false} {
		b := startBridgeWith(t, bridgeOpts{home: home, dir: dir, env: piNode(t)}, "-e", ext)
		var warm []int
		require.Eventually(t, func() bool { warm = b.turnPids(); return len(warm) == 1 }, 30*time.Second, 20*time.Millisecond,
			"bridge %d: a warm CLI process", i)
		frames := b.runPrompt("hello [[say:hi]]")
		assert.Equal(t, "hi", deltaText(frames))
		assert.Contains(t, b.lastRequest().Get("system").Raw, paragraph, "bridge %d", i)
		if replaced {
			assert.NotEqual(t, warm, b.turnPids(), "bridge %d: the warm process lacked the text: replaced", i)
		} else {
			assert.Equal(t, warm, b.turnPids(), "bridge %d: the first prompt ran in the warm process", i)
		}
		code, _ := b.closeAndWait(30 * time.Second)
		require.Equal(t, 0, code)
	}
}
