//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestCoalescedDeltas streams a reply in 10-byte deltas through the real
// CLI with coalescing (the default) and without (--coalesce 0): the host
// sees the same events and the same text either way; coalesced, fewer
// delta frames, each carrying the deltas it merged and the message so far.
func TestCoalescedDeltas(t *testing.T) { forEachTransport(t, testCoalescedDeltas) }

func testCoalescedDeltas(t *testing.T, tp string) {
	const size, chunk = 20_000, 10
	want := claudetest.HugeText(size)
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
