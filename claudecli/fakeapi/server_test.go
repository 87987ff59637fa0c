package fakeapi_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs one real CLI turn against srv and returns its stdout.
func runCLI(t *testing.T, srv *fakeapi.Server, prompt string) []byte {
	t.Helper()
	cmd := exec.Command(claudetest.CLI(t), "-p", "--verbose", "--input-format", "stream-json",
		"--output-format", "stream-json", "--include-partial-messages")
	cmd.Env = srv.CLIEnv(t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":` + quote(prompt) + `},"session_id":"default","parent_tool_use_id":null}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // an API error exits 1; the stream is what we check
	if os.Getenv("CLAUDETEST_DUMP") != "" {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	}
	return out
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestRealCLIEcho(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	out := runCLI(t, srv, "hello fake")
	assert.Contains(t, string(out), `"result":"echo: hello fake"`)
	reqs := srv.MessagesRequests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "hello fake", reqs[0].LastUserText())
	assert.True(t, reqs[0].Completed)
}

func TestRealCLIAPIError(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	out := runCLI(t, srv, "fail please [[error:500]]")
	assert.Contains(t, string(out), `"is_error":true`)
	assert.Len(t, srv.MessagesRequests(), 1, "x-should-retry: false must stop the CLI's retries")
}

func TestParseScript(t *testing.T) {
	text := func(s string) []fakeapi.Block { return []fakeapi.Block{{Type: "text", Text: s}} }
	tests := []struct {
		in   string
		want fakeapi.Script
	}{
		{"hi", fakeapi.Script{Blocks: text("echo: hi"), Chunk: 1000}},
		{"x [[say:done]] y", fakeapi.Script{Blocks: text("done"), Chunk: 1000}},
		{"[[error:529]]", fakeapi.Script{Status: 529, Blocks: text("echo: [[error:529]]"), Chunk: 1000}},
		{"[[error:abc]]", fakeapi.Script{Status: 500, Blocks: text("echo: [[error:abc]]"), Chunk: 1000}},
		{"[[huge:10]][[chunk:3]]", fakeapi.Script{Blocks: text(fakeapi.HugeText(10)), Chunk: 3}},
		{"[[slow:2]]", fakeapi.Script{Blocks: text("word word "), Chunk: 5, Delay: fakeapi.SlowDelay}},
		{"[[say:a]][[say:b]]", fakeapi.Script{Blocks: text("b"), Chunk: 1000}},
		{"[[think:hmm]][[say:ok]][[stop:max_tokens]]", fakeapi.Script{Blocks: []fakeapi.Block{
			{Type: "thinking", Text: "hmm"}, {Type: "text", Text: "ok"}}, StopReason: "max_tokens", Chunk: 1000}},
		{`[[say:running]][[bash:echo [x]]][[tool:Read:{"file_path":"/a"}]]`, fakeapi.Script{Blocks: []fakeapi.Block{
			{Type: "text", Text: "running"},
			{Type: "tool_use", Name: "Bash", Input: `{"command":"echo [x","description":"Run echo [x"}`},
			{Type: "tool_use", Name: "Read", Input: `{"file_path":"/a"}`}}, Chunk: 1000}},
		{`[[read:/a]][[write:/b|x|y\nz]][[edit:/c|old|new]][[grep:fo+]][[glob:*.go]]`, fakeapi.Script{Blocks: []fakeapi.Block{
			{Type: "tool_use", Name: "Read", Input: `{"file_path":"/a"}`},
			{Type: "tool_use", Name: "Write", Input: `{"content":"x|y\nz","file_path":"/b"}`},
			{Type: "tool_use", Name: "Edit", Input: `{"file_path":"/c","new_string":"new","old_string":"old"}`},
			{Type: "tool_use", Name: "Grep", Input: `{"pattern":"fo+"}`},
			{Type: "tool_use", Name: "Glob", Input: `{"pattern":"*.go"}`}}, Chunk: 1000}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fakeapi.ParseScript(tt.in), tt.in)
	}
	assert.Len(t, fakeapi.HugeText(2_000_000), 2_000_000)
}
