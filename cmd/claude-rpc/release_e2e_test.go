//go:build linux

package main

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// released waits until the bridge runs no CLI process: --release-idle
// ended it.
func (b *rpcProc) released() {
	b.t.Helper()
	require.Eventually(b.t, func() bool { return len(b.cliPids()) == 0 }, 15*time.Second, 20*time.Millisecond,
		"the resting session's CLI process is released")
}

// messagesSent is what the fake API's last Messages request held.
func (b *rpcProc) messagesSent() string {
	b.t.Helper()
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(b.t, reqs)
	return reqs[len(reqs)-1].Messages().Raw
}

// TestReleaseIdle: --release-idle on the stream transport ends the CLI
// process of a session that rests, and nothing of the session is lost:
// each command on a released session, a dialog open when the time comes,
// a prompt racing the release, the bridge killed while released.
func TestReleaseIdle(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	t.Run("commands on a released session", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--release-idle", "300ms")
		assert.Equal(t, "one", deltaText(b.runPrompt("[[say:one]]")))
		b.released()

		// Queued while released: they go with the next prompt, which
		// resumes the session in a new process (no return signal first).
		require.True(t, b.call(map[string]any{"type": "steer", "message": "steered while released"}).Get("success").Bool())
		require.True(t, b.call(map[string]any{"type": "follow_up", "message": "followed while released"}).Get("success").Bool())
		frames := b.runPrompt("[[say:two]]")
		assert.Contains(t, deltaText(frames), "two")
		assert.Equal(t, []string{"[[say:two]]", "steered while released", "followed while released"}, userTexts(frames[len(frames)-1]))
		sent := b.messagesSent()
		assert.Contains(t, sent, "[[say:one]]", "the new process resumed the session")
		assert.Contains(t, sent, "followed while released")
		assert.LessOrEqual(t, len(b.cliPids()), 1)
		b.released()

		// get_messages answers from the bridge, and is a return signal:
		// the process starts again before any prompt.
		msgs := b.call(map[string]any{"type": "get_messages"})
		require.True(t, msgs.Get("success").Bool(), msgs.Raw)
		count := len(msgs.Get("data.messages").Array())
		assert.GreaterOrEqual(t, count, 5, msgs.Raw)
		require.Eventually(t, func() bool { return len(b.cliPids()) == 1 }, 15*time.Second, 20*time.Millisecond,
			"get_messages on a released session starts its process again")
		b.released()
		assert.Len(t, b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array(), count, "the same messages")
		b.released()

		// abort with nothing running; set_model: the next process runs the
		// new model on the same session.
		require.True(t, b.call(map[string]any{"type": "abort"}).Get("success").Bool())
		require.True(t, b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": "sonnet"}).Get("success").Bool())
		b.released()
		assert.Equal(t, "three", deltaText(b.runPrompt("[[say:three]]")))
		assert.Contains(t, b.lastRequest().Get("model").String(), "sonnet")
		assert.Contains(t, b.messagesSent(), "[[say:two]]")
		state := b.call(map[string]any{"type": "get_state"})
		first, file := state.Get("data.sessionId").String(), state.Get("data.sessionFile").String()
		assert.Contains(t, state.Get("data.model.id").String(), "sonnet", state.Raw)
		require.NotEmpty(t, file)
		b.released()

		// A session switch while released, and back.
		require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
		assert.Equal(t, "other", deltaText(b.runPrompt("[[say:other]]")))
		assert.NotContains(t, b.messagesSent(), "[[say:three]]")
		b.released()
		sw := b.call(map[string]any{"type": "switch_session", "sessionPath": file})
		require.True(t, sw.Get("success").Bool(), sw.Raw)
		b.released()
		assert.Equal(t, "back", deltaText(b.runPrompt("[[say:back]]")))
		sent = b.messagesSent()
		assert.Contains(t, sent, "[[say:three]]", "the first session, resumed")
		assert.NotContains(t, sent, "[[say:other]]")
		assert.Equal(t, first, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())

		code, _ := b.closeAndWait(30 * time.Second)
		assert.Zero(t, code)
		b.requireNoLeftovers()
	})
	t.Run("a dialog open is not rest", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--ask", "--release-idle", "300ms")
		prompt, path := b.writePrompt("out.txt")
		require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
		frames := b.until(30*time.Second, isType("extension_ui_request"))
		req := frames[len(frames)-1]
		pids := b.cliPids()
		require.Len(t, pids, 1)
		time.Sleep(1500 * time.Millisecond) // five times --release-idle
		assert.Equal(t, pids, b.cliPids(), "the process stays while its dialog is open")
		b.sendJSON(map[string]any{"type": "extension_ui_response", "id": req.Get("id").String(), "value": "Allow once"})
		b.until(30*time.Second, isType("agent_end"))
		_, err := os.Stat(path)
		require.NoError(t, err, "the answer reached the CLI")
		b.released()
		assert.Equal(t, "after", deltaText(b.runPrompt("[[say:after]]")))
	})
	t.Run("a release racing a prompt", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--release-idle", "300ms")
		b.runPrompt("[[say:first]]")
		var most atomic.Int32
		stop := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				n := int32(len(b.cliPids()))
				if n > most.Load() {
					most.Store(n)
				}
			}
		}()
		// From the end of a run, the release comes ~300 ms later: prompts
		// sent from 200 to 425 ms after it land before, during and after
		// the release.
		for i := range 10 {
			time.Sleep(200*time.Millisecond + time.Duration(i)*25*time.Millisecond)
			word := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}[i]
			frames := b.runPrompt("[[say:" + word + "]]")
			assert.Equal(t, word, deltaText(frames), "prompt %d", i)
			assert.Equal(t, "completed", b.promptStatus(frames), "prompt %d", i)
		}
		close(stop)
		<-watched
		assert.EqualValues(t, 1, most.Load(), "never two CLI processes for the session")
		assert.Contains(t, b.messagesSent(), "[[say:first]]", "one session throughout")
	})
	t.Run("the bridge killed while released", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--release-idle", "300ms")
		b.runPrompt("[[say:one]]")
		b.released()
		require.NoError(t, b.cmd.Process.Kill())
		b.requireNoLeftovers()
	})
}

// promptStatus is the status of the last assistant message in frames'
// agent_end: completed, or its stopReason.
func (b *rpcProc) promptStatus(frames []gjson.Result) string {
	end := frames[len(frames)-1]
	msgs := end.Get("messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").String() == "assistant" {
			if r := msgs[i].Get("stopReason").String(); r != "stop" {
				return r
			}
			return "completed"
		}
	}
	return "no assistant message"
}
