//go:build linux

package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestBackgroundBashWhileIdle (stream): a Bash command the model runs in
// the background ends after the prompt's run; the CLI then runs a turn by
// itself about it, which reaches the host at once as a run of its own,
// not inside the next prompt's run.
func TestBackgroundBashWhileIdle(t *testing.T) {
	b := startBridge(t, "--transport", "stream")
	first := b.runPrompt(`[[tool:Bash:{"command":"sleep 1; echo bg-done","run_in_background":true,"description":"background sleep"}]] [[notified:{{say:the task ended}}]] go`)
	assert.Equal(t, "stop", last(first, "message_end", "assistant").Get("message.stopReason").String())
	began := time.Now()
	own := b.until(15*time.Second, isType("agent_end"))
	t.Logf("the CLI's own run ended %v after the prompt's", time.Since(began))
	// The background tasks' status (a notice) may come first: the task
	// ended before the CLI's turn about it.
	own = slices.DeleteFunc(own, func(f gjson.Result) bool { return f.Get("method").String() == "setStatus" })
	assert.Equal(t, "agent_start", own[0].Get("type").String(), "%v", shape(own))
	assert.Equal(t, "the task ended", last(own, "message_end", "assistant").Get("message.content.0.text").String())
	assert.Equal(t, []string{"agent_settled", "session_settled"}, shape(b.until(10*time.Second, isType("session_settled"))))
	next := b.runPrompt("[[say:next reply]]")
	msgs := next[len(next)-1].Get("messages").Array()
	require.Len(t, msgs, 2, "only the prompt's own turn")
	assert.Equal(t, "next reply", msgs[1].Get("content.0.text").String())
}
