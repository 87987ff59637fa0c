// Package htmlexport turns a pi session (the messages get_messages returns)
// into one self-contained HTML page: inline CSS, no scripts, no external
// resources, so the file can be mailed, archived or opened offline.
//
// The page is written by [page], which spells out the markup and writes
// every piece of message text through html/template's own escaping, for
// the context the text lands in: [escapeHTML] in element text, RCDATA
// (<title>) and quoted attribute values, [normalizeURL] before it in the
// one URL attribute. That is what keeps a message such as
// "</script><b>x</b>" literal text. It is what html/template wrote for this
// page byte for byte (the tests render the former template, pageTemplate,
// and compare), without running a template: text/template's executor looks
// methods up by name, which makes the linker keep every exported method of
// every type in the binary, resident in every bridge process
// (docs/performance.md, 'Figures behind the code').
package htmlexport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/transform"
)

// Render writes one HTML document titled title that shows messages in order.
// Each message is pi's message JSON. Unknown roles, content blocks and fields
// are shown generically, and a message that is not JSON at all is shown as
// raw text, so a session never fails to export; the only errors are w's,
// and ctx's cause once ctx has ended (checked between messages: a long
// session stops within one message's work).
func Render(ctx context.Context, w io.Writer, title string, messages []json.RawMessage) error {
	views := make([]messageView, 0, len(messages))
	for _, raw := range messages {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		views = append(views, toView(raw))
	}
	return page(ctx, w, pageView{Title: title, Messages: views})
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
	ImageURL string // a data: URL that dataURL vouched for
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
// in src as unsafe unless vouched for (template.URL), and so does page: it
// takes ImageURL as it is. We may vouch only because the mime type is one
// of imageTypes and data is strict base64: no character of it can end the
// attribute or change the URL's scheme.
func dataURL(mime, data string) (string, bool) {
	if !imageTypes[mime] || data == "" {
		return "", false
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return "", false
	}
	return "data:" + mime + ";base64," + data, true
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

// page writes the document: what the template below (pageTemplate in
// the tests, which check that both write the same bytes) wrote through
// html/template. Each {{.X}} of the template is an esc (element text,
// <title>, quoted attribute values) or, for the image's src, a url.
//
//	<title>{{.Title}}</title> ... <h1>{{.Title}}</h1>
//	{{range .Messages}}<section class="msg {{.Role}}{{if .IsError}} error{{end}}">
//	<div class="head">{{.Label}}{{if .Time}} <time>{{.Time}}</time>{{end}}</div>
//	{{if .Meta}}<div class="meta">{{range .Meta}}<span>{{.}}</span>{{end}}</div>
//	{{end}}{{range .Blocks}} ... {{end}}{{if .ErrorText}}<div class="errmsg">{{.ErrorText}}</div>
//	{{end}}</section>
//	{{end}}</body>
//	</html>
func page(ctx context.Context, w io.Writer, v pageView) error {
	p := pageWriter{bufio.NewWriter(w)}
	p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>")
	p.esc(v.Title)
	p.raw("</title>\n<style>\n" + pageCSS + "</style>\n</head>\n<body>\n<h1>")
	p.esc(v.Title)
	p.raw("</h1>\n")
	for _, m := range v.Messages {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		p.raw(`<section class="msg `)
		p.esc(m.Role)
		if m.IsError {
			p.raw(" error")
		}
		p.raw("\">\n<div class=\"head\">")
		p.esc(m.Label)
		if m.Time != "" {
			p.raw(" <time>")
			p.esc(m.Time)
			p.raw("</time>")
		}
		p.raw("</div>\n")
		if len(m.Meta) > 0 {
			p.raw(`<div class="meta">`)
			for _, s := range m.Meta {
				p.raw("<span>")
				p.esc(s)
				p.raw("</span>")
			}
			p.raw("</div>\n")
		}
		for _, b := range m.Blocks {
			p.block(b)
		}
		if m.ErrorText != "" {
			p.raw(`<div class="errmsg">`)
			p.esc(m.ErrorText)
			p.raw("</div>\n")
		}
		p.raw("</section>\n")
	}
	p.raw("</body>\n</html>\n")
	return p.w.Flush()
}

// block writes one content block:
//
//	{{if eq .Kind "text"}}{{template "segments" .Segments}}
//	{{else if eq .Kind "thinking"}}<details class="thinking"><summary>Thinking</summary>{{template "segments" .Segments}}</details>
//	{{else if eq .Kind "toolCall"}}<div class="tool">Tool call <span class="name">{{.Name}}</span>{{if .ID}} <span class="meta">{{.ID}}</span>{{end}}<pre><code>{{.Code}}</code></pre></div>
//	{{else if eq .Kind "image"}}<div><img src="{{.ImageURL}}" alt="image ({{.Mime}})"></div>
//	{{else}}<div class="raw">{{if .Name}}<div class="meta">{{.Name}}</div>{{end}}{{if .Code}}<pre><code>{{.Code}}</code></pre>{{end}}</div>
//	{{end}}
func (p pageWriter) block(b blockView) {
	switch b.Kind {
	case "text":
		p.segments(b.Segments)
	case "thinking":
		p.raw(`<details class="thinking"><summary>Thinking</summary>`)
		p.segments(b.Segments)
		p.raw("</details>")
	case "toolCall":
		p.raw(`<div class="tool">Tool call <span class="name">`)
		p.esc(b.Name)
		p.raw("</span>")
		if b.ID != "" {
			p.raw(` <span class="meta">`)
			p.esc(b.ID)
			p.raw("</span>")
		}
		p.raw("<pre><code>")
		p.esc(b.Code)
		p.raw("</code></pre></div>")
	case "image":
		p.raw(`<div><img src="`)
		p.url(b.ImageURL)
		p.raw(`" alt="image (`)
		p.esc(b.Mime)
		p.raw(`)"></div>`)
	default:
		p.raw(`<div class="raw">`)
		if b.Name != "" {
			p.raw(`<div class="meta">`)
			p.esc(b.Name)
			p.raw("</div>")
		}
		if b.Code != "" {
			p.raw("<pre><code>")
			p.esc(b.Code)
			p.raw("</code></pre>")
		}
		p.raw("</div>")
	}
	p.raw("\n")
}

// segments writes message text:
//
//	{{range .}}{{if .Code}}<pre><code{{if .Lang}} data-lang="{{.Lang}}"{{end}}>{{.Text}}</code></pre>{{else}}<div class="text">{{.Text}}</div>{{end}}{{end}}
func (p pageWriter) segments(segs []segment) {
	for _, s := range segs {
		if !s.Code {
			p.raw(`<div class="text">`)
			p.esc(s.Text)
			p.raw("</div>")
			continue
		}
		p.raw("<pre><code")
		if s.Lang != "" {
			p.raw(` data-lang="`)
			p.esc(s.Lang)
			p.raw(`"`)
		}
		p.raw(">")
		p.esc(s.Text)
		p.raw("</code></pre>")
	}
}

// pageWriter writes the page; the first write error sticks and is what
// page returns.
type pageWriter struct{ w *bufio.Writer }

func (p pageWriter) raw(s string) { _, _ = p.w.WriteString(s) }

// esc writes s escaped for element text, RCDATA or a quoted attribute
// value: html/template's htmlEscaper, rcdataEscaper and attrEscaper, which
// agree on strings.
func (p pageWriter) esc(s string) { _, _ = p.w.WriteString(escapeHTML(s)) }

// url writes a vouched-for URL in a quoted attribute: html/template's
// urlFilter (which lets a vouched-for URL through), urlNormalizer and
// attrEscaper.
func (p pageWriter) url(s string) { p.esc(normalizeURL(s)) }

// escapeHTML is html/template's htmlReplacer with its htmlReplacementTable.
// The table has ASCII characters only, and html/template copies every other
// rune, and every byte that is not valid UTF-8, as it is: so a byte loop
// does the same.
func escapeHTML(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		if written == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[written:i])
		b.WriteString(repl)
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// normalizeURL is html/template's urlNormalizer on a vouched-for URL: it
// percent-encodes each byte that may not appear in a URL, and keeps
// reserved characters and valid %xx escapes.
func normalizeURL(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		case strings.IndexByte("!#$&*+,/:;=?@[]-._~", c) >= 0:
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		b.WriteString(s[written:i])
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// pageCSS is the page's style sheet.
const pageCSS = `body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 960px; padding: 1.5em; color: #1f2328; background: #fff; }
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
`
