// Package htmlexport turns a pi session (the messages get_messages returns)
// into one self-contained HTML page: inline CSS, no scripts, no external
// resources, so the file can be mailed, archived or opened offline.
//
// Every piece of message text goes through html/template, whose contextual
// escaping is what keeps a message such as "</script><b>x</b>" literal text.
// Nothing here builds markup by string concatenation.
package htmlexport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/transform"
)

// Render writes one HTML document titled title that shows messages in order.
// Each message is pi's message JSON. Unknown roles, content blocks and fields
// are shown generically, and a message that is not JSON at all is shown as
// raw text, so a session never fails to export; the only errors are w's.
func Render(w io.Writer, title string, messages []json.RawMessage) error {
	views := make([]messageView, 0, len(messages))
	for _, raw := range messages {
		views = append(views, toView(raw))
	}
	return page.Execute(w, pageView{Title: title, Messages: views})
}

type pageView struct {
	Title    string
	Messages []messageView
}

// messageView is one message ready for the template: the role decides the
// frame, Blocks the body, and the rest is a short header or footer.
type messageView struct {
	Role      string // CSS class and label: "user", "assistant", "toolResult", or other
	Label     string
	Time      string
	Meta      []string // model, stop reason, usage: shown small under the header
	Blocks    []blockView
	IsError   bool
	ErrorText string // assistant errorMessage, or why a message could not be read
}

// blockView is one content block. Exactly one of its shapes is used, by Kind.
type blockView struct {
	Kind     string // "text", "thinking", "toolCall", "image", "raw"
	Segments []segment
	Name     string // tool name, or the unknown block's type
	ID       string // tool call id
	Code     string // pretty JSON: tool arguments, unknown blocks
	ImageURL template.URL
	Mime     string
}

// segment is a run of message text: prose, or the inside of a ``` fence.
type segment struct {
	Code bool
	Lang string
	Text string
}

// message holds the fields we show; everything else in pi's JSON is ignored
// for known roles and shown as JSON for unknown ones. It is not
// transform.Message because content may be a bare string here, and a block
// we cannot read must not lose the rest of the message.
type message struct {
	Role         string           `json:"role"`
	Content      json.RawMessage  `json:"content"`
	Timestamp    int64            `json:"timestamp"`
	Model        string           `json:"model"`
	StopReason   string           `json:"stopReason"`
	ErrorMessage string           `json:"errorMessage"`
	Usage        *transform.Usage `json:"usage"`
	ToolCallID   string           `json:"toolCallId"`
	ToolName     string           `json:"toolName"`
	IsError      bool             `json:"isError"`
}

func toView(raw json.RawMessage) messageView {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return messageView{
			Role: "other", Label: "unreadable message", IsError: true,
			ErrorText: err.Error(),
			Blocks:    []blockView{{Kind: "raw", Code: string(raw)}},
		}
	}
	v := messageView{Role: m.Role, IsError: m.IsError}
	if m.Timestamp > 0 {
		v.Time = time.UnixMilli(m.Timestamp).UTC().Format("2006-01-02 15:04:05 UTC")
	}
	switch m.Role {
	case transform.RoleUser:
		v.Label = "User"
		v.Blocks = contentBlocks(m.Content)
	case transform.RoleAssistant:
		v.Label = "Assistant"
		v.Blocks = contentBlocks(m.Content)
		v.Meta = assistantMeta(m)
		if m.StopReason == transform.StopError || m.StopReason == transform.StopAborted || m.ErrorMessage != "" {
			v.IsError = true
			v.ErrorText = m.ErrorMessage
			if v.ErrorText == "" {
				v.ErrorText = "stopped: " + m.StopReason
			}
		}
	case transform.RoleToolResult:
		v.Label = "Tool result"
		if m.ToolName != "" {
			v.Label += ": " + m.ToolName
		}
		if m.ToolCallID != "" {
			v.Meta = []string{"call " + m.ToolCallID}
		}
		if m.IsError {
			v.Label += " (error)"
		}
		v.Blocks = contentBlocks(m.Content)
	default:
		// pi has more roles (bashExecution, custom, ...) and will grow others:
		// show the whole message rather than guess at its fields.
		v.Role = "other"
		v.Label = m.Role
		if v.Label == "" {
			v.Label = "message"
		}
		v.Blocks = []blockView{{Kind: "raw", Code: prettyJSON(raw)}}
	}
	return v
}

func assistantMeta(m message) []string {
	var meta []string
	if m.Model != "" {
		meta = append(meta, m.Model)
	}
	if m.StopReason != "" {
		meta = append(meta, "stop: "+m.StopReason)
	}
	if u := m.Usage; u != nil {
		s := "tokens in " + itoa(u.Input) + " · out " + itoa(u.Output)
		if u.CacheRead > 0 || u.CacheWrite > 0 {
			s += " · cache read " + itoa(u.CacheRead) + " · write " + itoa(u.CacheWrite)
		}
		meta = append(meta, s)
	}
	return meta
}

// contentBlocks reads pi's content, which is an array of blocks or, for
// user messages, sometimes a bare string.
func contentBlocks(content json.RawMessage) []blockView {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || string(content) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []blockView{{Kind: "text", Segments: splitFences(s)}}
	}
	var raws []json.RawMessage
	if json.Unmarshal(content, &raws) != nil {
		return []blockView{{Kind: "raw", Name: "content", Code: prettyJSON(content)}}
	}
	out := make([]blockView, 0, len(raws))
	for _, r := range raws {
		out = append(out, toBlock(r))
	}
	return out
}

func toBlock(raw json.RawMessage) blockView {
	var b transform.Content
	if json.Unmarshal(raw, &b) != nil {
		return blockView{Kind: "raw", Code: prettyJSON(raw)}
	}
	switch b.Type {
	case "text":
		return blockView{Kind: "text", Segments: splitFences(b.Text)}
	case "thinking":
		return blockView{Kind: "thinking", Segments: splitFences(b.Thinking)}
	case "toolCall":
		return blockView{Kind: "toolCall", Name: b.Name, ID: b.ID, Code: prettyJSON(b.Arguments)}
	case "image":
		if u, ok := dataURL(b.MimeType, b.Data); ok {
			return blockView{Kind: "image", ImageURL: u, Mime: b.MimeType}
		}
		return blockView{Kind: "raw", Name: "image (" + b.MimeType + ", not shown)"}
	}
	return blockView{Kind: "raw", Name: b.Type, Code: prettyJSON(raw)}
}

// imageTypes are the mime types a browser shows inline and that cannot carry
// script (unlike image/svg+xml).
var imageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

// dataURL builds a data: URL for an image. html/template rejects data: URLs
// in src as unsafe, so we vouch for it with template.URL, and may only
// because the mime type is one of imageTypes and data is strict base64: no
// character of it can end the attribute or change the URL's scheme.
func dataURL(mime, data string) (template.URL, bool) {
	if !imageTypes[mime] || data == "" {
		return "", false
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return "", false
	}
	return template.URL("data:" + mime + ";base64," + data), true
}

// splitFences cuts text into prose and ``` fenced code. A fence opens on a
// line that starts with ``` (after up to three spaces; the rest of the line is
// the language) and closes on the next such line; an unclosed fence runs to
// the end, as in CommonMark.
func splitFences(text string) []segment {
	var segs []segment
	var cur strings.Builder
	inCode, lang := false, ""
	flush := func() {
		s := cur.String()
		cur.Reset()
		if inCode {
			segs = append(segs, segment{Code: true, Lang: lang, Text: strings.TrimSuffix(s, "\n")})
			return
		}
		if strings.TrimSpace(s) != "" {
			segs = append(segs, segment{Text: strings.TrimSuffix(s, "\n")})
		}
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```") {
			flush()
			if !inCode {
				lang = strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			}
			inCode = !inCode
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return segs
}

// prettyJSON indents JSON for a <pre>; what is not JSON is shown as it is.
// Go's encoder writes <, > and & as \u003c, \u003e and \u0026, which would
// show as such in the page; they are turned back into the characters, since
// the template escapes them anyway. Keys keep their order.
func prettyJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return unescapeHTMLEscapes(buf.String())
}

// unescapeHTMLEscapes undoes Go's HTML-safe escapes in valid JSON text. It
// walks escapes pairwise, so an escaped backslash followed by "u003c" stays.
func unescapeHTMLEscapes(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if i+5 < len(s) && s[i+1] == 'u' {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

var page = template.Must(template.New("page").Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 960px; padding: 1.5em; color: #1f2328; background: #fff; }
h1 { font-size: 1.5em; border-bottom: 1px solid #d0d7de; padding-bottom: .3em; }
.msg { border: 1px solid #d0d7de; border-left-width: 4px; border-radius: 6px; margin: 1em 0; padding: .6em 1em; }
.msg.user { border-left-color: #0969da; background: #f6f8fa; }
.msg.assistant { border-left-color: #8250df; }
.msg.toolResult { border-left-color: #1a7f37; background: #fbfdfb; }
.msg.other { border-left-color: #6e7781; }
.msg.error { border-left-color: #cf222e; background: #fff5f5; }
.head { font-weight: 600; font-size: .85em; color: #57606a; }
.head time, .meta { font-weight: normal; color: #6e7781; font-size: .85em; }
.meta span + span::before { content: " · "; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .5em 0; }
pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: .6em; overflow-x: auto; white-space: pre; tab-size: 4; }
details.thinking { color: #57606a; font-style: italic; border-left: 2px dashed #d0d7de; padding-left: .8em; margin: .5em 0; }
details.thinking summary { cursor: pointer; font-style: normal; }
.tool { margin: .5em 0; }
.tool .name { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; }
.errmsg { color: #cf222e; font-weight: 600; white-space: pre-wrap; }
img { max-width: 100%; border: 1px solid #d0d7de; border-radius: 4px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Messages}}<section class="msg {{.Role}}{{if .IsError}} error{{end}}">
<div class="head">{{.Label}}{{if .Time}} <time>{{.Time}}</time>{{end}}</div>
{{if .Meta}}<div class="meta">{{range .Meta}}<span>{{.}}</span>{{end}}</div>
{{end}}{{range .Blocks}}{{if eq .Kind "text"}}{{template "segments" .Segments}}
{{else if eq .Kind "thinking"}}<details class="thinking"><summary>Thinking</summary>{{template "segments" .Segments}}</details>
{{else if eq .Kind "toolCall"}}<div class="tool">Tool call <span class="name">{{.Name}}</span>{{if .ID}} <span class="meta">{{.ID}}</span>{{end}}<pre><code>{{.Code}}</code></pre></div>
{{else if eq .Kind "image"}}<div><img src="{{.ImageURL}}" alt="image ({{.Mime}})"></div>
{{else}}<div class="raw">{{if .Name}}<div class="meta">{{.Name}}</div>{{end}}{{if .Code}}<pre><code>{{.Code}}</code></pre>{{end}}</div>
{{end}}{{end}}{{if .ErrorText}}<div class="errmsg">{{.ErrorText}}</div>
{{end}}</section>
{{end}}</body>
</html>
{{define "segments"}}{{range .}}{{if .Code}}<pre><code{{if .Lang}} data-lang="{{.Lang}}"{{end}}>{{.Text}}</code></pre>{{else}}<div class="text">{{.Text}}</div>{{end}}{{end}}{{end}}`
