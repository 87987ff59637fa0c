//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestCLILineOverMaxLine: a line the CLI prints that is longer than
// --max-line (the assistant message calling Write with a content just
// under the limit, the prompt's line fitting in it) is skipped, logged,
// and shown to the host as an error notice (extension_ui_request notify,
// notifyType error) among the turn's events; the turn goes on: the tool
// runs, the reply comes, the run ends as usual. The limit is above the
// CLI's answer to initialize (26 KB on 2.1.328), which a smaller one
// skips too.
func TestCLILineOverMaxLine(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp string) {
		content := strings.Repeat("x", 40000)
		prompt, err := json.Marshal(map[string]any{"type": "prompt", "message": "[[write:big.txt|" + content + "]]", "id": "0123456789abcdef"})
		require.NoError(t, err)
		limit := len(prompt) + 100 // the prompt's line fits; the assistant line calling Write with it does not
		b := startBridge(t, "--transport", tp, "--max-line", strconv.Itoa(limit), "--permission-mode", "acceptEdits")
		frames := b.runPrompt("[[write:big.txt|" + content + "]]")
		var notices []gjson.Result
		reply := ""
		for _, f := range frames {
			switch {
			case f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "notify":
				notices = append(notices, f)
			case f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant":
				reply = f.Get("message.content.#(type==\"text\").text").String()
			}
		}
		require.NotEmpty(t, notices, "a notice of the skipped line")
		assert.Equal(t, "error", notices[0].Get("notifyType").String())
		assert.Contains(t, notices[0].Get("message").String(), "more than the limit of "+strconv.Itoa(limit))
		assert.Contains(t, b.stderr.String(), "claude printed a line over the limit")
		got, err := os.ReadFile(filepath.Join(b.dir, "big.txt"))
		require.NoError(t, err, "the turn went on: the tool ran")
		assert.Equal(t, content, string(got))
		assert.True(t, strings.HasPrefix(reply, "tool said: "), "the reply after the tool: %q", reply)
		assert.Equal(t, "agent_end", frames[len(frames)-1].Get("type").String())
	})
}
