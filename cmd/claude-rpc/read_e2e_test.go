//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// readFile is a file whose text looks like the CLI's numbered Read
// results: tabs, leading numbers, an arrow, a blank line.
const readFile = "1\tone\n     2\ttwo, numbered as cat -n does\n\tan indented line\twith a tab inside\n\n  5→ an arrow\nlast line\n"

// TestPiReadResult: with pi's tool names, a read's result reaches the host
// as pi's read gives it (tool_execution_end, the toolResult message,
// get_messages, the session read back from the CLI's transcript): the
// file's text as it is, with pi's notice when a limit left lines unread;
// the model is given the CLI's numbered lines, as before. With the CLI's
// names, the host gets what the model got.
func TestPiReadResult(t *testing.T) {
	t.Parallel()
	for _, names := range []string{"pi", "claude"} {
		t.Run(names, func(t *testing.T) {
			t.Parallel()
			b := startBridge(t, "--transport", "stream", "--tool-names", names)
			notes := filepath.Join(b.dir, "notes.txt")
			require.NoError(t, os.WriteFile(notes, []byte(readFile), 0o644))
			// One read a turn: the CLI's transcript chains them (parallel
			// calls' results may land on side branches).
			read := func(prompt string) *toolCallFrames {
				calls, order := toolCallsOf(t, b.runPrompt(prompt))
				require.Len(t, order, 1, "one read")
				return calls[order[0]]
			}
			whole := read("[[read:" + notes + "]]")
			part := read(`[[tool:Read:{"file_path":` + jsonString(notes) + `,"offset":2,"limit":2}]]`)

			// What the model was given: the CLI's numbered lines.
			var given []string
			for _, m := range b.lastRequest().Get("messages").Array() {
				for _, c := range m.Get("content").Array() {
					if c.Get("type").String() == "tool_result" {
						given = append(given, c.Get("content").String()+c.Get("content.0.text").String())
					}
				}
			}
			require.Len(t, given, 2, "the model's request has both results")
			assert.Contains(t, strings.Join(given, "\n"), "1\t1\tone\n2\t     2\ttwo", "the model sees the CLI's numbered lines")

			wantWhole, wantPart := readFile, "     2\ttwo, numbered as cat -n does\n\tan indented line\twith a tab inside\n\n[4 more lines in file. Use offset=4 to continue.]"
			if names == "claude" {
				wantWhole = "1\t1\tone\n2\t     2\ttwo, numbered as cat -n does\n3\t\tan indented line\twith a tab inside\n4\t\n5\t  5→ an arrow\n6\tlast line\n7\t"
				wantPart = "2\t     2\ttwo, numbered as cat -n does\n3\t\tan indented line\twith a tab inside"
			}
			for _, c := range []struct {
				what  string
				frame *toolCallFrames
				want  string
			}{{"the whole file", whole, wantWhole}, {"lines 2-3", part, wantPart}} {
				assert.Equal(t, c.want, c.frame.execEnd.Get("result.content.0.text").String(), "%s: tool_execution_end", c.what)
				assert.Equal(t, c.want, c.frame.msg.Get("content.0.text").String(), "%s: the toolResult message", c.what)
				assert.False(t, c.frame.execEnd.Get("isError").Bool())
			}

			results := func(msgs []gjson.Result) []string {
				var out []string
				for _, m := range msgs {
					if m.Get("role").String() == "toolResult" {
						out = append(out, m.Get("content.0.text").String())
					}
				}
				return out
			}
			live := b.call(map[string]any{"type": "get_messages"})
			require.True(t, live.Get("success").Bool(), live.Raw)
			assert.ElementsMatch(t, []string{wantWhole, wantPart}, results(live.Get("data.messages").Array()), "get_messages")

			sid := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
			require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
			r := b.call(map[string]any{"type": "switch_session", "sessionPath": sid})
			require.True(t, r.Get("success").Bool(), r.Raw)
			reloaded := b.call(map[string]any{"type": "get_messages"})
			assert.Equal(t, []string{wantWhole, wantPart}, results(reloaded.Get("data.messages").Array()), "the session read back")
		})
	}
}
