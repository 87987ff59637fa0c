//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// TestCoalescedDeltas streams a reply in 10-byte deltas through the real
// CLI with coalescing (the default) and without (--coalesce 0): the host
// sees the same events and the same text either way; coalesced, fewer
// delta frames, each carrying the deltas it merged and the message so far.
func TestCoalescedDeltas(t *testing.T) { forStreamAndPipe(t, testCoalescedDeltas) }

func testCoalescedDeltas(t *testing.T, tp string) {
	const size, chunk = 20_000, 10
	want := fakeapi.HugeText(size)
	deltaFrames := map[string]int{}
	for _, co := range []string{"0", "4ms"} {
		b := startBridge(t, "--transport", tp, "--coalesce", co)
		frames := b.runPrompt("[[huge:20000]][[chunk:10]]")
		assert.Equal(t, []string{
			"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant", "turn_end", "agent_end",
		}, shape(frames), "coalesce %s", co)
		assert.True(t, want == deltaText(frames), "coalesce %s: the deltas add up to the reply", co)
		var sofar string
		for _, f := range frames {
			ae := f.Get("assistantMessageEvent")
			if ae.Get("type").String() != "text_delta" {
				continue
			}
			deltaFrames[co]++
			sofar += ae.Get("delta").String()
			require.True(t, sofar == f.Get("message.content.0.text").String(), "coalesce %s: the message so far", co)
			require.True(t, sofar == ae.Get("partial.content.0.text").String(), "coalesce %s: partial = message", co)
		}
		end := last(frames, "message_end", "assistant")
		assert.True(t, want == end.Get("message.content.0.text").String())
		assert.True(t, want == gjson.Get(b.call(map[string]any{"type": "get_last_assistant_text"}).Raw, "data.text").String())
	}
	assert.Equal(t, size/chunk, deltaFrames["0"], "without coalescing, one frame per delta")
	assert.Less(t, deltaFrames["4ms"], deltaFrames["0"], "coalesced: fewer frames")
}

// TestPiClientSeesTheSameWithCoalescing drives claude-rpc through pi's own
// RpcClient (scripts/install-pi) with and without coalescing, on a reply
// with thinking, 10-byte text deltas and a tool call (testdata/pi-coalesce.mjs):
// the host sees the same events, text and messages, in fewer updates.
func TestPiClientSeesTheSameWithCoalescing(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs pi's RpcClient")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pi, err := exec.Command("bash", filepath.Join(root, "scripts", "install-pi")).Output()
	require.NoError(t, err, "scripts/install-pi")
	dir := t.TempDir()
	for src, dst := range map[string]string{
		filepath.Join(root, "scripts", "examples", "node", "claude-rpc-launcher.mjs"): "claude-rpc-launcher.mjs",
		"testdata/pi-coalesce.mjs": "pi-coalesce.mjs",
	} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, dst), b, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(strings.TrimSpace(string(pi)), "node_modules"), filepath.Join(dir, "node_modules")))
	srv := claudetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "pi-coalesce.mjs", "[[think:Plan it.]][[huge:20000]][[chunk:10]][[bash:echo hi]]")
	cmd.Dir = dir
	cmd.Env = append(srv.CLIEnv(t.TempDir()), "CLAUDE_RPC_BIN="+binary(t), "CLAUDE_RPC_CLI="+claudetest.CLI(t), "CLAUDE_RPC_CWD="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr:\n%s", tail(stderr.String(), 3000))
	v := gjson.ParseBytes(out)
	assert.True(t, v.Get("sameEvents").Bool(), "same events: %s", out)
	assert.True(t, v.Get("sameText").Bool(), "same text: %s", out)
	assert.True(t, v.Get("sameMessages").Bool(), "same messages: %s", out)
	assert.True(t, v.Get("soFar").Bool(), "every update's message is the text so far: %s", out)
	assert.Less(t, v.Get("updates.1").Int(), v.Get("updates.0").Int()/10, "far fewer updates coalesced: %s", out)
	assert.Contains(t, v.Get("shape").String(), "tool_execution_end")
	assert.Equal(t, int64(len("tool said: hi")), v.Get("textLength").Int())
}
