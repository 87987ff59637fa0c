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
func TestPrewarm(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t)
		var warm []int
		require.Eventually(t, func() bool { warm = b.cliPids(); return len(warm) == 1 }, 15*time.Second, 20*time.Millisecond,
			"a CLI process starts with the bridge")
		sessionID := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
		// It has initialized: the models come from it, not from a process
		// of their own.
		require.True(t, b.call(map[string]any{"type": "get_available_models"}).Get("success").Bool())
		time.Sleep(500 * time.Millisecond)
		assert.Empty(t, b.srv.Requests(), "no API request while warming")
		assert.Empty(t, b.transcripts(), "no transcript while warming")
		assert.Equal(t, warm, b.cliPids(), "still the one process")

		frames := b.runPrompt("first [[say:warm]]")
		assert.Equal(t, "warm", deltaText(frames))
		assert.Equal(t, warm, b.cliPids(), "the first prompt ran in the warm process")
		files := b.transcripts()
		require.Len(t, files, 1)
		assert.Equal(t, sessionID+".jsonl", filepath.Base(files[0]), "on the session get_state reported")

		require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
		require.Eventually(t, func() bool {
			p := b.cliPids()
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
		assert.Empty(t, b.cliPids(), "no CLI process before the first prompt")
		frames := b.runPrompt("[[say:cold]]")
		assert.Equal(t, "cold", deltaText(frames))
	})
}
