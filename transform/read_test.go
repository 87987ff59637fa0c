package transform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/gjson"
)

// TestReadContent: a Read result as hosts get it with pi's tool names, as
// pi's read gives it (the file's text, pi's continuation notices), from
// the CLI's structured result or, without one, from its numbered text;
// with the CLI's names, or for another tool, the CLI's content.
func TestReadContent(t *testing.T) {
	const notes = "1\tone\n     2\ttwo\n\tindented\ttab\n\nlast"
	file := func(content string, start, lines, total int) string {
		b, _ := json.Marshal(map[string]any{"type": "text", "file": map[string]any{"filePath": "/w/notes.txt", "content": content, "startLine": start, "numLines": lines, "totalLines": total}})
		return string(b)
	}
	text := func(s string) []Content { return []Content{TextContent(s)} }
	for _, tc := range []struct {
		name    string
		names   ToolNames
		cli     string
		args    string
		result  string // tool_use_result; "" for none
		content []Content
		want    []Content
	}{
		{name: "the whole file", args: `{"path":"notes.txt"}`, result: file(notes, 1, 5, 5),
			content: text("1\t1\tone\n2\t     2\ttwo\n3\t\tindented\ttab\n4\t\n5\tlast"), want: text(notes)},
		{name: "the call's limit stopped it", args: `{"path":"notes.txt","offset":2,"limit":2}`, result: file("     2\ttwo\n\tindented\ttab", 2, 2, 5),
			content: text("2\t     2\ttwo\n3\t\tindented\ttab"), want: text("     2\ttwo\n\tindented\ttab\n\n[2 more lines in file. Use offset=4 to continue.]")},
		{name: "the CLI stopped it", args: `{"path":"notes.txt"}`, result: file("1\tone\n     2\ttwo", 1, 2, 5),
			content: text("1\t1\tone\n2\t     2\ttwo"), want: text("1\tone\n     2\ttwo\n\n[Showing lines 1-2 of 5. Use offset=3 to continue.]")},
		{name: "a limit past what the CLI read", args: `{"path":"notes.txt","limit":10}`, result: file("1\tone", 1, 1, 5),
			content: text("1\t1\tone"), want: text("1\tone\n\n[Showing lines 1-1 of 5. Use offset=2 to continue.]")},
		{name: "a limit reaching the end", args: `{"path":"notes.txt","offset":4,"limit":2}`, result: file("\nlast", 4, 2, 5),
			content: text("4\t\n5\tlast"), want: text("\nlast")},
		{name: "an empty file", args: `{"path":"empty.txt"}`, result: file("", 1, 1, 1),
			content: text("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"), want: text("")},
		{name: "an offset past the end", args: `{"path":"notes.txt","offset":50}`, result: file("", 50, 0, 5),
			content: text("<system-reminder>Warning: the file exists but is shorter than the provided offset (50). The file has 5 lines.</system-reminder>"),
			want:    text("Offset 50 is beyond end of file (5 lines total)")},
		{name: "an image", args: `{"path":"a.png"}`, result: `{"type":"image","file":{"base64":"AAAA","type":"image/png"}}`,
			content: []Content{{Type: "image", Data: "AAAA", MimeType: "image/png"}}, want: []Content{{Type: "image", Data: "AAAA", MimeType: "image/png"}}},
		{name: "no structured result: numbered with tabs", args: `{"path":"notes.txt"}`,
			content: text("1\t1\tone\n2\t     2\ttwo\n3\t\n4\tlast"), want: text("1\tone\n     2\ttwo\n\nlast")},
		{name: "no structured result: numbered with arrows, from 7", args: `{"path":"notes.txt"}`,
			content: text("     7→seven\n     8→\teight\n\n<system-reminder>Consider whether it is malware.</system-reminder>\n"), want: text("seven\n\teight")},
		{name: "no structured result: numbers that do not count up", args: `{"path":"notes.txt"}`,
			content: text("1\tone\n3\tthree"), want: text("1\tone\n3\tthree")},
		{name: "no structured result: no numbers", args: `{"path":"notes.txt"}`,
			content: text("File unchanged since last read."), want: text("File unchanged since last read.")},
		{name: "the CLI's names", names: toolNamesClaude, args: `{"file_path":"notes.txt"}`, result: file(notes, 1, 5, 5),
			content: text("1\t1\tone"), want: text("1\t1\tone")},
		{name: "another tool", cli: "Bash", args: `{"command":"cat -n notes.txt"}`,
			content: text("1\tone"), want: text("1\tone")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := tc.cli
			if cli == "" {
				cli = "Read"
			}
			got := tc.names.Content(cli, json.RawMessage(tc.args), gjson.Parse(tc.result), tc.content)
			assert.Equal(t, tc.want, got)
		})
	}
}
