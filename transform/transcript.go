package transform

import (
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// TranscriptPrompt reports whether a transcript entry (one line of the
// CLI's session file) is a message the user typed, not a tool result nor
// one the CLI added (meta lines, compaction summaries, local command
// records), and returns its text.
func TranscriptPrompt(entry []byte) (string, bool) {
	v := gjson.ParseBytes(entry)
	if v.Get("type").String() != "user" || v.Get("isMeta").Bool() || v.Get("isCompactSummary").Bool() ||
		v.Get("isVisibleInTranscriptOnly").Bool() {
		return "", false
	}
	c := v.Get("message.content")
	if c.Type == gjson.String {
		return c.String(), !strings.HasPrefix(c.String(), "<")
	}
	var parts []string
	for _, b := range c.Array() {
		switch b.Get("type").String() {
		case "tool_result":
			return "", false
		case "text":
			if t := b.Get("text").String(); !strings.HasPrefix(t, "<") {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

// FromTranscript rebuilds pi messages from a session's conversation entries
// (user and assistant lines of its current branch, oldest first), shaped as
// the live events showed them: each prompt and what followed it are run
// through a [Translator] as the CLI's lines would be, its tool calls shown
// with names.
func FromTranscript(entries [][]byte, names ToolNames) []Message {
	return fromTranscript(entries, names, false)
}

// FromTranscriptPart is [FromTranscript] for a part of a transcript, read
// from a byte offset (a sub-agent's, read as it grows): what comes before
// the part's first prompt is shown as the continuation of a conversation.
func FromTranscriptPart(entries [][]byte, names ToolNames) []Message {
	return fromTranscript(entries, names, true)
}

func fromTranscript(entries [][]byte, names ToolNames, part bool) []Message {
	var out []Message
	var ts int64
	var tr *Translator
	end := func() {
		if tr != nil {
			tr.Line([]byte(`{"type":"result","subtype":"success","is_error":false}`))
			out = append(out, tr.Messages()...)
		}
	}
	modelOutput := false // the entry after a /model record: its output
	for _, e := range entries {
		v := gjson.ParseBytes(e)
		if t, err := time.Parse(time.RFC3339Nano, v.Get("timestamp").String()); err == nil {
			ts = t.UnixMilli()
		}
		if after := modelOutput; after || isModelCommand(v) {
			modelOutput = !after
			if !after || isLocalOutput(v) {
				continue
			}
		}
		if text, ok := TranscriptPrompt(e); ok {
			end()
			tr = NewTranslator(func() int64 { return ts })
			tr.SetToolNames(names)
			content := []Content{}
			if text != "" {
				content = append(content, TextContent(text))
			}
			for _, b := range v.Get("message.content").Array() {
				if b.Get("type").String() == "image" {
					content = append(content, Content{Type: "image", Data: b.Get("source.data").String(), MimeType: b.Get("source.media_type").String()})
				}
			}
			tr.Start(UserMessage(content, ts))
			continue
		}
		if typ := v.Get("type").String(); typ != "user" && typ != "assistant" || v.Get("isMeta").Bool() || v.Get("isCompactSummary").Bool() {
			continue // the CLI's own notes
		}
		if tr == nil {
			if !part {
				continue // before the first prompt (a fork's copy)
			}
			tr = NewTranslator(func() int64 { return ts })
			tr.SetToolNames(names)
		}
		tr.Line(cliLine(v))
	}
	end()
	return out
}

// cliLine writes a transcript entry as the line the CLI printed for it.
func cliLine(v gjson.Result) []byte {
	line := []byte(`{"type":` + v.Get("type").Raw + `,"message":` + v.Get("message").Raw)
	if d := v.Get("toolUseResult"); d.Exists() {
		line = append(append(line, `,"tool_use_result":`...), d.Raw...)
	}
	if v.Get("isApiErrorMessage").Bool() {
		line = append(line, `,"is_api_error_message":true`...)
	}
	return append(line, '}')
}

// isModelCommand reports whether a transcript entry is the CLI's record of
// a /model command: what it writes when the model of a running process
// changes (the control protocol's set_model; claude-rpc restarts the
// process instead now). A model change is a setting, not a message (pi
// shows none): the record and its output are left out of the messages.
func isModelCommand(v gjson.Result) bool {
	return v.Get("type").String() == "user" && strings.HasPrefix(entryText(v), "<command-name>/model</command-name>")
}

// isLocalOutput reports whether a transcript entry is a local command's
// output.
func isLocalOutput(v gjson.Result) bool {
	t := entryText(v)
	return v.Get("type").String() == "user" && (strings.HasPrefix(t, "<local-command-stdout>") || strings.HasPrefix(t, "<local-command-stderr>"))
}

// entryText is a user entry's text: its string content, or its first text
// block.
func entryText(v gjson.Result) string {
	c := v.Get("message.content")
	if c.Type == gjson.String {
		return c.String()
	}
	return c.Get("#(type==\"text\").text").String()
}
