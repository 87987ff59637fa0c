package fakeapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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

// The server's HTTP/1.1, spoken by hand on a connection of the test's own.

// dial opens a connection to srv, closed when the test ends.
func dial(t *testing.T, srv *fakeapi.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c, bufio.NewReader(c)
}

// messages is a Messages request body whose user text is text.
func messages(text string, stream bool) string {
	return fmt.Sprintf(`{"model":"m","stream":%t,"messages":[{"role":"user","content":%s}]}`, stream, quote(text))
}

// post writes a POST of body to path on c, with the extra header lines.
func post(t *testing.T, c net.Conn, path, body string, header ...string) {
	t.Helper()
	h := "Host: fake\r\nContent-Type: application/json\r\n"
	for _, l := range header {
		h += l + "\r\n"
	}
	if !strings.Contains(h, "Transfer-Encoding") {
		h += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
	}
	_, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\n"+h+"\r\n"+body)
	require.NoError(t, err)
}

// readResponse reads one response and its whole body.
func readResponse(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// startStream posts a streaming Messages request of text on a new
// connection and reads the reply's header.
func startStream(t *testing.T, srv *fakeapi.Server, text string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, br := dial(t, srv)
	post(t, c, "/v1/messages", messages(text, true))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	return c, br, resp
}

// readUntil reads the body of a streaming reply until a line holding s.
func readUntil(t *testing.T, body *bufio.Reader, s string) {
	t.Helper()
	for {
		line, err := body.ReadString('\n')
		require.NoError(t, err, "before %q", s)
		if strings.Contains(line, s) {
			return
		}
	}
}

// assertClosed asserts that the server closed c (after what br holds).
func assertClosed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	_, err := br.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
}

func TestServerKeepAlive(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	c, br := dial(t, srv)

	post(t, c, "/v1/messages/count_tokens", messages("count me", false))
	resp, body := readResponse(t, br)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(len(body)), resp.ContentLength)
	assert.Empty(t, resp.TransferEncoding)
	assert.False(t, resp.Close)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Contains(t, body, `"input_tokens":`)

	// A chunked request body, on the same connection.
	msg := messages("[[say:again]]", false)
	post(t, c, "/v1/messages", fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 5, msg[:5], len(msg)-5, msg[5:]),
		"Transfer-Encoding: chunked")
	resp, body = readResponse(t, br)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"text":"again"`)

	// An error reply keeps the connection too; "Connection: close" ends it.
	post(t, c, "/v1/nowhere", "", "Connection: close")
	resp, body = readResponse(t, br)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, `"not_found_error"`)
	assert.True(t, resp.Close, "Connection: close is answered in kind")
	assertClosed(t, br)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "/v1/messages/count_tokens", reqs[0].Path)
	assert.Equal(t, msg, string(reqs[1].Body), "the chunked body, whole")
	assert.Equal(t, "again", reqs[1].Script.Text())
	assert.True(t, reqs[1].Completed)
	assert.Equal(t, "application/json", reqs[1].Header.Get("Content-Type"))
}

func TestServerExpectContinue(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	c, br := dial(t, srv)
	msg := messages("[[say:go on]]", false)
	_, err := io.WriteString(c, "POST /v1/messages HTTP/1.1\r\nHost: fake\r\nExpect: 100-continue\r\nContent-Length: "+
		strconv.Itoa(len(msg))+"\r\n\r\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	_, err = br.Discard(2)
	require.NoError(t, err)
	_, err = io.WriteString(c, msg)
	require.NoError(t, err)
	resp, body := readResponse(t, br)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"text":"go on"`)
}

// TestServerStreamsEventByEvent: a streaming reply is chunked, and each
// event reaches the client when it is written, before the reply ends;
// the connection then serves the next request.
func TestServerStreamsEventByEvent(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	c, br, resp := startStream(t, srv, "[[slow:20]]") // a delta every SlowDelay
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	body := bufio.NewReader(resp.Body)
	readUntil(t, body, "event: content_block_delta")
	readUntil(t, body, `"text":"word "`)
	reqs := srv.MessagesRequests()
	require.Len(t, reqs, 1)
	assert.False(t, reqs[0].Completed, "the first delta came before the reply ended")
	rest, err := io.ReadAll(body)
	require.NoError(t, err)
	assert.Equal(t, 19, strings.Count(string(rest), "event: content_block_delta"))
	assert.Contains(t, string(rest), "event: message_stop")
	assert.True(t, srv.MessagesRequests()[0].Completed)

	post(t, c, "/v1/messages", messages("[[say:next]]", true))
	_, sse := readResponse(t, br)
	assert.Contains(t, sse, `"text":"next"`)
	assert.Contains(t, sse, "event: message_stop")
}

func TestServerMalformedRequest(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw string }{
		{"request line", "GARBAGE\r\n\r\n"},
		{"content length", "POST /v1/messages HTTP/1.1\r\nHost: fake\r\nContent-Length: abc\r\n\r\n"},
		{"chunk size", "POST /v1/messages HTTP/1.1\r\nHost: fake\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
		{"version", "GET / HTTP/9\r\nHost: fake\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.Start(t)
			c, br := dial(t, srv)
			_, err := io.WriteString(c, tt.raw)
			require.NoError(t, err)
			resp, body := readResponse(t, br)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Contains(t, body, `"type":"invalid_request_error"`)
			assert.Contains(t, body, "fake API: malformed request")
			assert.True(t, resp.Close)
			assertClosed(t, br)
			assert.Empty(t, srv.Requests())
		})
	}
}

// TestServerCloseEndsStream: Close ends a reply still streaming, closes
// its connection and returns.
func TestServerCloseEndsStream(t *testing.T) {
	t.Parallel()
	srv, err := fakeapi.New()
	require.NoError(t, err)
	idle, _ := dial(t, srv) // an idle keep-alive connection is closed too
	_, _, resp := startStream(t, srv, "[[slow:1000]]")
	body := bufio.NewReader(resp.Body)
	readUntil(t, body, "event: content_block_delta")

	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return while a reply streamed")
	}
	_, err = io.ReadAll(body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the reply ends unfinished")
	_, err = idle.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
	reqs := srv.MessagesRequests()
	require.Len(t, reqs, 1)
	assert.False(t, reqs[0].Completed)
	assert.False(t, reqs[0].Disconnected, "the server went, not the client")
	_, err = net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	assert.Error(t, err, "the listener is closed")
}

// TestServerResetClosesConnection: [[reset]] drops the connection in the
// middle of the reply; the next attempt gets the whole reply.
func TestServerResetClosesConnection(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	_, br, resp := startStream(t, srv, "[[reset]] cut me")
	got, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "no end chunk")
	assert.Contains(t, string(got), "event: content_block_delta")
	assert.NotContains(t, string(got), "event: message_stop")
	assertClosed(t, br)

	c, br := dial(t, srv)
	post(t, c, "/v1/messages", messages("[[reset]] cut me", true))
	_, sse := readResponse(t, br)
	assert.Contains(t, sse, "event: message_stop")
	reqs := srv.MessagesRequests()
	require.Len(t, reqs, 2)
	assert.False(t, reqs[0].Completed)
	assert.True(t, reqs[1].Completed)
}

// TestServerClientGone: a client that closes its connection mid-reply
// ends the reply, recorded as Disconnected.
func TestServerClientGone(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	c, _, resp := startStream(t, srv, "[[slow:1000]]")
	readUntil(t, bufio.NewReader(resp.Body), "event: content_block_delta")
	require.NoError(t, c.Close())
	assert.Eventually(t, func() bool {
		r := srv.MessagesRequests()[0]
		return r.Disconnected && !r.Completed
	}, 2*time.Second, 10*time.Millisecond)
}
