package transform

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Content is the content of a result of the CLI's tool cli as hosts are
// given it (tool_execution_end's result, the toolResult message): the
// CLI's (content) except for the tools pi has whose result pi shapes
// otherwise. args are the call's arguments as shown (pi's, for pi's
// tools); result is the CLI's structured result (tool_use_result), if
// any. What the model was given is the CLI's and stays as it is.
func (n ToolNames) Content(cli string, args json.RawMessage, result gjson.Result, content []Content) []Content {
	if n == toolNamesPi && cli == "Read" {
		return piRead(args, result, content)
	}
	return content
}

// piRead is a Read result as pi's read gives it (pi 1.6.0's
// dist/core/tools/read.js): the file's text as it is, where the CLI gives
// the model each line numbered ("12\tline", cat -n style) and, for an
// empty file or an offset past its end, only a system-reminder. When the
// CLI read less than the rest of the file, pi's continuation notice
// follows the text: "[R more lines in file. Use offset=N to continue.]"
// when the call's limit stopped it, "[Showing lines A-B of T. Use
// offset=N to continue.]" otherwise (2.1.328 reads a file whole without
// a limit: 2,100 lines checked). An offset past the end is pi's
// words for it ("Offset 50 is beyond end of file (6 lines total)"; pi
// fails the call, the CLI does not, and neither does the result here).
// pi's own caps (2,000 lines, 50 KB) are not applied: hosts see the text
// the model was given. Images, and text results without the CLI's
// structured result, keep their content, but for the line numbers and
// system-reminders removed from text that has them.
func piRead(args json.RawMessage, result gjson.Result, content []Content) []Content {
	file := result.Get("file")
	if result.Get("type").String() != "text" || !file.Get("content").Exists() {
		out := make([]Content, len(content))
		for i, c := range content {
			if c.Type == "text" {
				c.Text = unnumbered(c.Text)
			}
			out[i] = c
		}
		return out
	}
	text := file.Get("content").String()
	start, lines, total := file.Get("startLine").Int(), file.Get("numLines").Int(), file.Get("totalLines").Int()
	if start < 1 {
		start = 1
	}
	limit := gjson.GetBytes(args, "limit")
	switch end := start - 1 + lines; {
	case lines == 0 && start > total:
		text = "Offset " + strconv.FormatInt(start, 10) + " is beyond end of file (" + strconv.FormatInt(total, 10) + " lines total)"
	case end >= total:
	case limit.Exists() && limit.Int() <= lines:
		text += "\n\n[" + strconv.FormatInt(total-end, 10) + " more lines in file. Use offset=" + strconv.FormatInt(end+1, 10) + " to continue.]"
	default:
		text += "\n\n[Showing lines " + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end, 10) + " of " + strconv.FormatInt(total, 10) +
			". Use offset=" + strconv.FormatInt(end+1, 10) + " to continue.]"
	}
	return []Content{TextContent(text)}
}

// unnumbered is a Read result's text without the CLI's line numbers, when
// every line has one ("12\t" or "    12→", counting up by one from the
// first) and without its system-reminders; otherwise text as it is.
func unnumbered(text string) string {
	text = withoutReminders(text)
	if text == "" {
		return text
	}
	lines := strings.Split(text, "\n")
	next := -1
	for i, l := range lines {
		rest := strings.TrimLeft(l, " ")
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		num, err := strconv.Atoi(rest[:digits])
		if digits == 0 || err != nil || next >= 0 && num != next {
			return text
		}
		switch rest = rest[digits:]; {
		case strings.HasPrefix(rest, "\t"):
			rest = rest[1:]
		case strings.HasPrefix(rest, "→"):
			rest = rest[len("→"):]
		default:
			return text
		}
		lines[i], next = rest, num+1
	}
	return strings.Join(lines, "\n")
}

// withoutReminders is text without the <system-reminder> blocks the CLI
// adds for the model, and the blank lines around them.
func withoutReminders(text string) string {
	const open, end = "<system-reminder>", "</system-reminder>"
	for {
		i := strings.Index(text, open)
		if i < 0 {
			return text
		}
		j := strings.Index(text[i:], end)
		if j < 0 {
			return text
		}
		text = strings.TrimRight(text[:i], "\n") + strings.TrimLeft(text[i+j+len(end):], "\n")
	}
}
