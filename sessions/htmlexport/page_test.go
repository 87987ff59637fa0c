package htmlexport

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageTemplate is the html/template page Render executed until page
// replaced it (text/template's executor cost the binary 2 MB, see the
// package doc). page must write what it writes, byte for byte: these tests
// render both.
var pageTemplate = template.Must(template.New("page").Parse(pageTemplateText))

// renderTemplate is Render through pageTemplate.
func renderTemplate(t testing.TB, v pageView) string {
	t.Helper()
	type blockT struct {
		Kind     string
		Segments []segment
		Name     string
		ID       string
		Code     string
		ImageURL template.URL
		Mime     string
	}
	type messageT struct {
		Role      string
		Label     string
		Time      string
		Meta      []string
		Blocks    []blockT
		IsError   bool
		ErrorText string
	}
	var msgs []messageT
	for _, m := range v.Messages {
		mt := messageT{Role: m.Role, Label: m.Label, Time: m.Time, Meta: m.Meta, IsError: m.IsError, ErrorText: m.ErrorText}
		for _, b := range m.Blocks {
			mt.Blocks = append(mt.Blocks, blockT{Kind: b.Kind, Segments: b.Segments, Name: b.Name, ID: b.ID, Code: b.Code, ImageURL: template.URL(b.ImageURL), Mime: b.Mime})
		}
		msgs = append(msgs, mt)
	}
	var buf bytes.Buffer
	require.NoError(t, pageTemplate.Execute(&buf, struct {
		Title    string
		Messages []messageT
	}{v.Title, msgs}))
	return buf.String()
}

func renderPage(t testing.TB, v pageView) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, page(context.Background(), &buf, v))
	return buf.String()
}

// TestPageMatchesTemplate renders every message of TestRender's kinds, and
// a session of all of them, through page and through pageTemplate.
func TestPageMatchesTemplate(t *testing.T) {
	msgs := []string{
		`{"role":"user","content":[{"type":"text","text":"hello\n  indented"}],"timestamp":1700000000000}`,
		`{"role":"user","content":"plain string"}`,
		mustJSON(t, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": hostile}}}),
		mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Look:\n```go\nif a < b && c {\n\treturn\n}\n```\nDone."}}}),
		mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "a\n```\ncode"}}}),
		mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "thinking": "hmm <b>bold</b>"}}}),
		`{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"echo '<b>' && ls","timeout":5}}],"model":"claude-x","stopReason":"toolUse","usage":{"input":10,"output":20,"cacheRead":3,"cacheWrite":0,"totalTokens":33}}`,
		`{"role":"assistant","content":[{"type":"toolCall","id":"","name":"x","arguments":null}]}`,
		`{"role":"toolResult","toolCallId":"toolu_1","toolName":"bash","content":[{"type":"text","text":"total 0\n<b>"}],"isError":false}`,
		`{"role":"toolResult","toolCallId":"t2","toolName":"read","content":[{"type":"text","text":"ENOENT"}],"isError":true}`,
		`{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded <b>now</b>"}`,
		`{"role":"assistant","content":[{"type":"text","text":"partial"}],"stopReason":"aborted"}`,
		`{"role":"user","content":[{"type":"image","data":"` + png1x1 + `","mimeType":"image/png"}]}`,
		`{"role":"user","content":[{"type":"image","data":"` + png1x1[:20] + `\r\n` + png1x1[20:] + `","mimeType":"image/jpeg"}]}`,
		`{"role":"user","content":[{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}]}`,
		`{"role":"user","content":[{"type":"image","data":"\" onerror=\"alert(1)","mimeType":"image/png"}]}`,
		`{"role":"bashExecution","command":"ls <b>","output":"x","exitCode":0,"extra":{"deep":[1,2]}}`,
		mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": "t", "name": "bash", "arguments": map[string]any{"command": "a </pre><b>y</b> && b"}}}}),
		`{"role":"assistant","content":[{"type":"redacted","blob":"<b>"},{"type":"text","text":"ok","sig":1}],"newField":{"a":1}}`,
		`{"role":"user","content":{"weird":true}}`,
		`<b>not json`,
		`{}`,
		"{\"role\":\"user\",\"content\":\"nul \\u0000, + and ' \\\" \\ufdd0 \\uffff \\u2028 é 🙂\"}",
	}
	var all []json.RawMessage
	for _, m := range msgs {
		all = append(all, json.RawMessage(m))
		t.Run("", func(t *testing.T) {
			v := pageView{Title: "Session <b>&amp;</b> + 'q' \"dq\"", Messages: []messageView{toView(json.RawMessage(m))}}
			assert.Equal(t, renderTemplate(t, v), renderPage(t, v), "%s", m)
		})
	}
	for _, title := range []string{"", "s", "t\x00\xff\xfe<>"} {
		v := pageView{Title: title}
		for _, m := range all {
			v.Messages = append(v.Messages, toView(m))
		}
		assert.Equal(t, renderTemplate(t, v), renderPage(t, v))
	}
	assert.Equal(t, renderTemplate(t, pageView{Title: "empty"}), renderPage(t, pageView{Title: "empty"}))
}

// FuzzPageMatchesTemplate puts arbitrary text in every field a view has.
func FuzzPageMatchesTemplate(f *testing.F) {
	f.Add("t", "user", "a < b", "```go\nx\n```", "data:image/png;base64,"+png1x1, true)
	f.Add(hostile, "", "\x00'\"+&", "\xff\xfe\ufdd0", "data:x y%zz%41%", false)
	f.Fuzz(func(t *testing.T, title, role, text, fenced, url string, isErr bool) {
		segs := append(splitFences(fenced), segment{Code: true, Lang: text, Text: fenced}, segment{Text: text})
		v := pageView{Title: title, Messages: []messageView{{
			Role: role, Label: text, Time: title, Meta: []string{text, role}, IsError: isErr, ErrorText: text,
			Blocks: []blockView{
				{Kind: "text", Segments: segs},
				{Kind: "thinking", Segments: segs},
				{Kind: "toolCall", Name: text, ID: role, Code: fenced},
				{Kind: "toolCall", Name: text, Code: fenced},
				{Kind: "image", ImageURL: url, Mime: text},
				{Kind: "raw", Name: role, Code: text},
				{Kind: role, Code: fenced},
				{Kind: "raw"},
			},
		}, {Role: role}}}
		want := renderTemplate(t, v)
		if got := renderPage(t, v); got != want {
			t.Fatalf("page and pageTemplate differ at byte %d:\npage:     %q\ntemplate: %q", firstDiff(got, want), got, want)
		}
	})
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

const pageTemplateText = `<!DOCTYPE html>
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
