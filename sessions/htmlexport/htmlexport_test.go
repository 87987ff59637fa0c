package htmlexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile is message text that would become markup if it were not escaped.
// Its scripts mark the DOM rather than call alert, which would hang a
// headless browser instead of failing the test.
const hostile = `</script><b>x</b><img src=x onerror=this.dataset.pwned=1> &amp; <script>document.body.dataset.pwned=2</script>`

// hostileEscaped is how hostile must appear in the HTML source: as text.
const hostileEscaped = `&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;&lt;img src=x onerror=this.dataset.pwned=1&gt; &amp;amp; &lt;script&gt;document.body.dataset.pwned=2&lt;/script&gt;`

// png1x1 is a valid 1x1 PNG, base64.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		want    []string // substrings of the output
		notWant []string
	}{{
		name: "user text blocks",
		msg:  `{"role":"user","content":[{"type":"text","text":"hello\n  indented"}],"timestamp":1700000000000}`,
		want: []string{`class="msg user"`, `<div class="text">hello` + "\n" + `  indented</div>`, "2023-11-14 22:13:20 UTC"},
	}, {
		name: "user string content",
		msg:  `{"role":"user","content":"plain string"}`,
		want: []string{`<div class="text">plain string</div>`},
	}, {
		name:    "hostile user text",
		msg:     mustJSON(t, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": hostile}}}),
		want:    []string{hostileEscaped},
		notWant: []string{"<b>", "<script", "<img src=x"},
	}, {
		name: "fenced code",
		msg:  mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Look:\n```go\nif a < b && c {\n\treturn\n}\n```\nDone."}}}),
		want: []string{
			`<div class="text">Look:</div>`,
			`<pre><code data-lang="go">if a &lt; b &amp;&amp; c {` + "\n\treturn\n}</code></pre>",
			`<div class="text">Done.</div>`,
		},
	}, {
		name: "unclosed fence runs to the end",
		msg:  mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "a\n```\ncode"}}}),
		want: []string{`<pre><code>code</code></pre>`},
	}, {
		name:    "thinking is collapsible",
		msg:     mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "thinking": "hmm <b>bold</b>"}}}),
		want:    []string{`<details class="thinking"><summary>Thinking</summary><div class="text">hmm &lt;b&gt;bold&lt;/b&gt;</div></details>`},
		notWant: []string{"<b>"},
	}, {
		name: "tool call with pretty arguments",
		msg:  `{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"echo '<b>' && ls","timeout":5}}],"model":"claude-x","stopReason":"toolUse","usage":{"input":10,"output":20,"cacheRead":3,"cacheWrite":0,"totalTokens":33}}`,
		want: []string{
			`Tool call <span class="name">bash</span>`,
			`toolu_1`,
			"{\n  &#34;command&#34;: &#34;echo &#39;&lt;b&gt;&#39; &amp;&amp; ls&#34;,\n  &#34;timeout&#34;: 5\n}",
			`<span>claude-x</span><span>stop: toolUse</span><span>tokens in 10 · out 20 · cache read 3 · write 0</span>`,
		},
		notWant: []string{"<b>", "error"},
	}, {
		name:    "tool result",
		msg:     `{"role":"toolResult","toolCallId":"toolu_1","toolName":"bash","content":[{"type":"text","text":"total 0\n<b>"}],"isError":false}`,
		want:    []string{`class="msg toolResult"`, `Tool result: bash`, `call toolu_1`, "<div class=\"text\">total 0\n&lt;b&gt;</div>"},
		notWant: []string{"(error)", "<b>"},
	}, {
		name: "tool result error",
		msg:  `{"role":"toolResult","toolCallId":"t2","toolName":"read","content":[{"type":"text","text":"ENOENT"}],"isError":true}`,
		want: []string{`class="msg toolResult error"`, `Tool result: read (error)`, `ENOENT`},
	}, {
		name: "assistant error",
		msg:  `{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded <b>now</b>"}`,
		want: []string{`class="msg assistant error"`, `<div class="errmsg">overloaded &lt;b&gt;now&lt;/b&gt;</div>`},
	}, {
		name: "assistant aborted without message",
		msg:  `{"role":"assistant","content":[{"type":"text","text":"partial"}],"stopReason":"aborted"}`,
		want: []string{`class="msg assistant error"`, `<div class="errmsg">stopped: aborted</div>`, "partial"},
	}, {
		name: "png image inline",
		msg:  `{"role":"user","content":[{"type":"image","data":"` + png1x1 + `","mimeType":"image/png"}]}`,
		want: []string{`<img src="data:image/png;base64,` + png1x1 + `" alt="image (image/png)">`},
	}, {
		name:    "svg image is not inlined",
		msg:     `{"role":"user","content":[{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}]}`,
		want:    []string{`image (image/svg&#43;xml, not shown)`},
		notWant: []string{"<img", "data:"},
	}, {
		name:    "image with data that is not base64",
		msg:     `{"role":"user","content":[{"type":"image","data":"\" onerror=\"alert(1)","mimeType":"image/png"}]}`,
		want:    []string{`not shown`},
		notWant: []string{"<img", "onerror=\""},
	}, {
		name:    "unknown role shown as JSON",
		msg:     `{"role":"bashExecution","command":"ls <b>","output":"x","exitCode":0,"extra":{"deep":[1,2]}}`,
		want:    []string{`class="msg other"`, `bashExecution`, `&#34;command&#34;: &#34;ls &lt;b&gt;&#34;`, `&#34;deep&#34;`},
		notWant: []string{"<b>"},
	}, {
		name:    "tool arguments escaped by Go's encoder",
		msg:     mustJSON(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": "t", "name": "bash", "arguments": map[string]any{"command": "a </pre><b>y</b> && b"}}}}),
		want:    []string{`&#34;command&#34;: &#34;a &lt;/pre&gt;&lt;b&gt;y&lt;/b&gt; &amp;&amp; b&#34;`},
		notWant: []string{"<b>", `\u003c`},
	}, {
		name:    "unknown block and fields",
		msg:     `{"role":"assistant","content":[{"type":"redacted","blob":"<b>"},{"type":"text","text":"ok","sig":1}],"newField":{"a":1}}`,
		want:    []string{`<div class="meta">redacted</div>`, `<div class="text">ok</div>`},
		notWant: []string{"<b>"},
	}, {
		name: "content that is an object",
		msg:  `{"role":"user","content":{"weird":true}}`,
		want: []string{"&#34;weird&#34;: true"},
	}, {
		name:    "not JSON at all",
		msg:     `<b>not json`,
		want:    []string{`unreadable message`, `&lt;b&gt;not json`},
		notWant: []string{"<b>"},
	}, {
		name: "no role",
		msg:  `{}`,
		want: []string{`class="msg other"`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Render(context.Background(), &buf, "Session <b>&amp;</b>", []json.RawMessage{json.RawMessage(tt.msg)}))
			out := buf.String()
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			for _, nw := range tt.notWant {
				assert.NotContains(t, body(out), nw)
			}
			assert.Contains(t, out, "<title>Session &lt;b&gt;&amp;amp;&lt;/b&gt;</title>")
			assert.Contains(t, out, "<h1>Session &lt;b&gt;&amp;amp;&lt;/b&gt;</h1>")
			checkStructure(t, out)
		})
	}
}

// TestRenderWholeSession renders a session with every shape at once, as
// the bridge would pass it, and checks the page is one well-formed document.
func TestRenderWholeSession(t *testing.T) {
	msgs := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"` + "list files" + `"}]}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"use ls"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}`),
		json.RawMessage(`{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"a.go"}],"isError":false}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"There is a.go"}],"stopReason":"stop"}`),
	}
	var buf bytes.Buffer
	require.NoError(t, Render(context.Background(), &buf, "s", msgs))
	out := buf.String()
	assert.Equal(t, 4, strings.Count(out, `<section class="msg `))
	assert.NotContains(t, out, "<script")
	assert.NotContains(t, out, "http://")
	assert.NotContains(t, out, "https://")
	checkStructure(t, out)

	buf.Reset()
	require.NoError(t, Render(context.Background(), &buf, "empty", nil))
	checkStructure(t, buf.String())
}

func TestRenderWriteError(t *testing.T) {
	err := Render(context.Background(), failWriter{}, "t", []json.RawMessage{json.RawMessage(`{"role":"user","content":"x"}`)})
	assert.ErrorIs(t, err, errWrite)
}

var errWrite = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestSplitFences(t *testing.T) {
	tests := []struct {
		in   string
		want []segment
	}{
		{"", nil},
		{"plain", []segment{{Text: "plain"}}},
		{"```\nx\n```", []segment{{Code: true, Text: "x"}}},
		{"a\n   ```sh\n$ ls\n```\nb", []segment{{Text: "a"}, {Code: true, Lang: "sh", Text: "$ ls"}, {Text: "b"}}},
		{"    ```\nindented four is not a fence", []segment{{Text: "    ```\nindented four is not a fence"}}},
		{"```\n\n```", []segment{{Code: true, Text: ""}}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, splitFences(tt.in), "%q", tt.in)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// body is the page after <body>: the head's CSS is ours, not message text.
func body(page string) string {
	_, after, _ := strings.Cut(page, "<body>")
	return after
}

var tagRE = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)\b[^<>]*>`)

var voidElements = map[string]bool{"meta": true, "img": true, "br": true, "hr": true, "link": true, "input": true}

// checkStructure checks the page is one document whose tags nest: since all
// message text is escaped, every '<' in the output must start one of our
// tags. (golang.org/x/net/html is not a dependency; the browser test parses
// the page for real.)
func checkStructure(t *testing.T, page string) {
	t.Helper()
	require.True(t, strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\"en\">"), "doctype")
	rest := strings.TrimPrefix(page, "<!DOCTYPE html>")
	assert.Equal(t, strings.Count(rest, "<"), len(tagRE.FindAllString(rest, -1)), "every < starts a tag")
	var stack []string
	for _, m := range tagRE.FindAllStringSubmatch(rest, -1) {
		closing, name := m[1] == "/", strings.ToLower(m[2])
		switch {
		case voidElements[name]:
		case !closing:
			stack = append(stack, name)
		case len(stack) == 0 || stack[len(stack)-1] != name:
			t.Fatalf("</%s> closes %v", name, stack)
		default:
			stack = stack[:len(stack)-1]
		}
	}
	assert.Empty(t, stack, "unclosed tags")
	assert.Equal(t, 1, strings.Count(page, "<body>"))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(page), "</html>"))
}

func TestPrettyJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, ``},
		{`not json {`, `not json {`},
		{`{"b":1,"a":[true,null]}`, "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}"},
		{`"\u003cb\u003e \u0026 \u003C"`, `"<b> & <"`},
		{`"\\u003c stays, \\\u003e goes"`, `"\\u003c stays, \\> goes"`},
		{`"\u00e9 \n \""`, `"\u00e9 \n \""`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, prettyJSON(json.RawMessage(tt.in)), "%s", tt.in)
	}
}

// TestRenderStops: a render whose context has ended stops with its cause.
func TestRenderStops(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	var buf bytes.Buffer
	err := Render(ctx, &buf, "t", []json.RawMessage{json.RawMessage(`{"role":"user","content":"x"}`)})
	assert.ErrorIs(t, err, stop)
}
