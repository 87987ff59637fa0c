// Package fakeapi serves a scripted fake of the Anthropic Messages API on
// 127.0.0.1, the way net/http/httptest serves a fake HTTP server. The real
// Claude Code CLI pointed at it with ANTHROPIC_BASE_URL runs turns exactly as
// it would against the real API, without a network or an account: the
// end-to-end tests (through claudetest), `claude-rpc demo` and `doctor` use it.
//
// What the server replies is chosen by markers in the text of the last user
// message of each request (see [ParseScript]); without a marker it echoes
// that text back. Every request is logged so callers can assert on what the
// CLI sent (see [Server.Requests]).
package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/minihttp"
)

// Request is one request the server received, kept for assertions.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Script is the reply the server chose for a Messages request.
	Script Script
	// Completed reports whether the whole reply was written; false means the
	// client went away (an aborted turn) or the reply was an error.
	Completed bool
	// Disconnected reports that the client closed the connection before the
	// reply was complete.
	Disconnected bool
	// InputTokens and OutputTokens are the usage the reply reported.
	InputTokens, OutputTokens int
}

// Messages returns the request's "messages" array.
func (r Request) Messages() gjson.Result { return gjson.GetBytes(r.Body, "messages") }

// LastUserText returns the text the user typed last: the last text block of
// the last user message that is not one of the <system-reminder> blocks the
// CLI adds, nor the "[Image: source: …]" note it adds after an image. (After
// a failed turn the CLI sends the failed prompt and the new one as two
// blocks of one user message; the new one is last.)
func (r Request) LastUserText() string { return lastUserText(r.Body) }

// Server is a fake Anthropic Messages API. Create it with [New].
type Server struct {
	URL string

	srv  *minihttp.Server
	done chan struct{} // closed by Close: ends the replies streaming

	mu    sync.Mutex
	reqs  []*Request
	tries map[string]int // attempts at a flaky reply, by the user's text
}

// New starts a server on a free port of 127.0.0.1. It serves HTTP/1.1
// through minihttp, which keeps net/http's Server out of the claude-rpc
// binary (demo and doctor serve it).
func New() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), tries: map[string]int{}, done: make(chan struct{})}
	s.srv = minihttp.Serve(ln, s.handle, minihttp.Options{BadRequest: func(w *minihttp.Response, err error) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fake API: malformed request: "+err.Error())
	}})
	return s, nil
}

// Close stops the server: it ends any reply still streaming, closes every
// connection and returns once their goroutines are done.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// Env returns the environment variables that point the Claude CLI at this
// server and keep it from reaching anything else.
func (s *Server) Env() []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=sk-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// CLIEnv returns an environment for running the real CLI against s with its
// own home directory (transcripts and settings land there): the current
// environment without HOME, CLAUDECODE, ANTHROPIC_* and CLAUDE_CODE_*, plus
// [Server.Env].
func (s *Server) CLIEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "CLAUDECODE" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	return append(env, s.Env()...)
}

// Forget drops the requests recorded so far, for a server that lives long
// (the demo; a soak test measuring the memory of the process it runs in).
func (s *Server) Forget() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

// Requests returns a copy of every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
	}
	return out
}

// MessagesRequests returns the streaming Messages requests received so far:
// the model calls of turns, without the CLI's side requests.
func (s *Server) MessagesRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/v1/messages") &&
			!strings.Contains(r.Path, "count_tokens") && gjson.GetBytes(r.Body, "stream").Bool() {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func (s *Server) update(r *Request, f func(*Request)) {
	s.mu.Lock()
	f(r)
	s.mu.Unlock()
}

// handle answers one request, whose body was read whole.
func (s *Server) handle(w *minihttp.Response, hr *http.Request, body []byte) {
	req := &Request{Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	s.record(req)

	switch {
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": estimateTokens(len(body))})
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages":
		s.serveMessages(w, hr, req)
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "fake API: no route for "+hr.Method+" "+hr.URL.Path)
	}
}

func (s *Server) serveMessages(w *minihttp.Response, hr *http.Request, req *Request) {
	if !gjson.ValidBytes(req.Body) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fake API: body is not JSON")
		return
	}
	var script Script
	if results, ok := lastToolResults(req.Body); ok {
		script = afterTools(results)
	} else if n, ok := notifiedScript(req.Body); ok {
		script = n
	} else {
		script = ParseScript(lastUserText(req.Body))
	}
	s.update(req, func(r *Request) { r.Script = script })
	if (script.Flaky > 0 || script.Reset > 0) && gjson.GetBytes(req.Body, "stream").Bool() {
		key := lastUserText(req.Body)
		s.mu.Lock()
		s.tries[key]++
		n := s.tries[key]
		s.mu.Unlock()
		script.cut = n <= script.Reset
		if n <= script.Flaky {
			w.Header().Set("x-should-retry", "true")
			w.Header().Set("retry-after-ms", "50") // keep the CLI's backoff short in tests
			writeError(w, script.FlakyStatus, errorType(script.FlakyStatus), fmt.Sprintf("fake API flaky error %d (attempt %d)", script.FlakyStatus, n))
			s.update(req, func(r *Request) { r.Completed = true })
			return
		}
	}
	if script.RateLimit != "" {
		script.rateLimitHeaders(w.Header())
		if script.RateLimit == "rejected" && script.Status == 0 {
			script.Status = http.StatusTooManyRequests
		}
	}
	if script.Status != 0 {
		w.Header().Set("x-should-retry", "false")
		writeError(w, script.Status, errorType(script.Status), fmt.Sprintf("fake API error %d", script.Status))
		s.update(req, func(r *Request) { r.Completed = true })
		return
	}
	model := gjson.GetBytes(req.Body, "model").String()
	inTokens := estimateTokens(len(req.Body))
	s.update(req, func(r *Request) { r.InputTokens, r.OutputTokens = inTokens, script.outTokens() })
	if !gjson.GetBytes(req.Body, "stream").Bool() {
		writeJSON(w, http.StatusOK, script.message(model, inTokens))
		s.update(req, func(r *Request) { r.Completed = true })
		return
	}
	sw := newSSEWriter(w)
	err := script.stream(hr.Context(), s.done, sw, model, inTokens)
	s.update(req, func(r *Request) {
		r.Completed = err == nil
		r.Disconnected = err != nil && hr.Context().Err() != nil
	})
	if errors.Is(err, errCut) {
		w.Abort() // the connection drops mid-response
	}
}

func errorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // values built here always marshal
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake")
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client may be gone
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

// estimateTokens is a stable stand-in for a tokenizer: about four bytes a token.
func estimateTokens(n int) int { return n/4 + 1 }

// lastUserText extracts what the user typed from the last user message.
func lastUserText(body []byte) string {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if text, ok := midTurnText(m); ok {
			return text
		}
		if m.Get("role").String() != "user" {
			continue
		}
		c := m.Get("content")
		if c.Type == gjson.String {
			return c.String()
		}
		blocks := c.Array()
		for j := len(blocks) - 1; j >= 0; j-- {
			b := blocks[j]
			if t := b.Get("text").String(); b.Get("type").String() == "text" &&
				!strings.HasPrefix(t, "<system-reminder>") && !strings.HasPrefix(t, "[Image: source: ") {
				if steer, ok := midTurnBlock(t); ok {
					return steer // 2.1.332: beside the tool result
				}
				return t
			}
		}
		// A message the CLI added by itself, as one reminder: 2.1.332
		// sends its "Output token limit hit…" continuation so (2.1.328 as
		// plain text). Its text, as before.
		if t := blocks; len(t) == 1 && t[0].Get("type").String() == "text" {
			inner := strings.TrimPrefix(t[0].Get("text").String(), "<system-reminder>")
			if inner != t[0].Get("text").String() {
				return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(inner), "</system-reminder>"))
			}
		}
		return ""
	}
	return ""
}

// lastToolResults returns the text of the tool results in the last user
// message, and whether that message is tool results only (the model call
// after the CLI ran tools).
func lastToolResults(body []byte) ([]string, bool) {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, ok := midTurnText(msgs[i]); ok {
			return nil, false // the model answers the user's message
		}
		if msgs[i].Get("role").String() != "user" {
			continue
		}
		var out []string
		for _, b := range msgs[i].Get("content").Array() {
			switch b.Get("type").String() {
			case "tool_result":
				c := b.Get("content")
				if c.Type == gjson.String {
					out = append(out, strings.TrimSpace(c.String()))
					continue
				}
				for _, part := range c.Array() {
					out = append(out, strings.TrimSpace(part.Get("text").String()))
				}
			case "text":
				if !strings.HasPrefix(b.Get("text").String(), "<system-reminder>") {
					return nil, false
				}
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w   *minihttp.Response
	buf bytes.Buffer
}

func newSSEWriter(w *minihttp.Response) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("request-id", "req_fake")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w}
}

// event writes one event whose data is v encoded as JSON.
func (s *sseWriter) event(name string, v any) error {
	s.buf.Reset()
	s.buf.WriteString("event: ")
	s.buf.WriteString(name)
	s.buf.WriteString("\ndata: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline
		return err
	}
	s.buf.WriteString("\n")
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	s.w.Flush()
	return nil
}

// The CLI (2.1.328) sends a user message that reaches it mid-turn to the
// model as a system message quoting it between these; midTurnText takes the
// user's text back out.
const (
	midTurnPrefix = "The user sent a new message while you were working:\n"
	midTurnSuffix = "\n\nThis is how Claude Code surfaces messages"
)

// midTurnText returns the user's text of a mid-turn system message.
// notifiedScript is the reply to a request that answers a background
// task's notification (the CLI's turn of its own: its last message is a
// user message whose text is a system-reminder holding a
// <task-notification>, as 2.1.328 sends it): the last [[notified:…]]
// marker the user typed, with {{ and }} standing for [[ and ]]. ok is
// false when the request is no such answer or no marker says.
func notifiedScript(body []byte) (Script, bool) {
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 || msgs[len(msgs)-1].Get("role").String() != "user" {
		return Script{}, false
	}
	// The notification is the message's last block (after an interrupted
	// turn the CLI sends the next prompt in the same message, after it).
	blocks := msgs[len(msgs)-1].Get("content").Array()
	if len(blocks) == 0 || !strings.Contains(blocks[len(blocks)-1].Get("text").String(), "<task-notification>") {
		return Script{}, false
	}
	arg := ""
	for _, m := range msgs {
		if m.Get("role").String() != "user" {
			continue
		}
		for _, b := range m.Get("content").Array() {
			for _, mk := range markerRE.FindAllStringSubmatch(b.Get("text").String(), -1) {
				if mk[1] == "notified" {
					arg = mk[2]
				}
			}
		}
		if m.Get("content").Type == gjson.String {
			for _, mk := range markerRE.FindAllStringSubmatch(m.Get("content").String(), -1) {
				if mk[1] == "notified" {
					arg = mk[2]
				}
			}
		}
	}
	if arg == "" {
		return Script{}, false
	}
	return ParseScript(strings.NewReplacer("{{", "[[", "}}", "]]").Replace(arg)), true
}

func midTurnText(m gjson.Result) (string, bool) {
	if m.Get("role").String() != "system" {
		return "", false
	}
	text := m.Get("content.0.text").String()
	if m.Get("content").Type == gjson.String {
		text = m.Get("content").String()
	}
	return midTurnBlock(text)
}

// midTurnBlock is midTurnText's reading of one text: the CLI 2.1.328
// sends it as a system message after the tool results, 2.1.332 as a text
// block of the user message that carries them.
func midTurnBlock(text string) (string, bool) {
	// Several at one boundary come in one text: the last counts.
	i := strings.LastIndex(text, midTurnPrefix)
	if i < 0 || !strings.HasPrefix(text, midTurnPrefix) {
		return "", false
	}
	rest := text[i+len(midTurnPrefix):]
	if i := strings.Index(rest, midTurnSuffix); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// rateLimitHeaders sets the unified rate-limit headers of [Script.RateLimit].
func (s Script) rateLimitHeaders(h http.Header) {
	reset := strconv.Itoa(RateLimitReset)
	h.Set("anthropic-ratelimit-unified-status", s.RateLimit)
	h.Set("anthropic-ratelimit-unified-reset", reset)
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-5h-status", s.RateLimit)
	h.Set("anthropic-ratelimit-unified-5h-reset", reset)
	h.Set("anthropic-ratelimit-unified-5h-utilization", "0.8")
	h.Set("anthropic-ratelimit-unified-5h-surpassed-threshold", "0.75")
}
