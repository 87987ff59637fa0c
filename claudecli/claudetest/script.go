package claudetest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Script is the reply the fake API gives to one Messages request.
type Script struct {
	// Status, when not zero, makes the reply an HTTP error with that status
	// and "x-should-retry: false", so the CLI fails the turn at once.
	Status int
	// Text is the reply's text, sent as Chunks-sized text deltas.
	Text  string
	Chunk int
	// Delay is the pause before each delta.
	Delay time.Duration
}

// Markers recognised in the last user message. Each is written [[name]] or
// [[name:arg]]; the first one of each kind counts.
//
//	[[error:529]]   reply with that HTTP status and an Anthropic error body
//	[[say:text]]    reply with exactly "text" (up to the closing brackets)
//	[[huge:N]]      reply with N bytes of [HugeText]
//	[[slow:N]]      reply with N words, one delta every 50ms (default 100)
//	[[chunk:N]]     send the reply in deltas of N bytes (default 1000; slow: one word)
//
// Without a reply marker the reply is "echo: " followed by the user's text.
var markerRE = regexp.MustCompile(`\[\[(error|say|huge|slow|chunk)(?::([^\]]*))?\]\]`)

// SlowDelay is the pause between deltas of a [[slow]] reply.
const SlowDelay = 50 * time.Millisecond

// ParseScript chooses the reply for a user message.
func ParseScript(userText string) Script {
	s := Script{Text: "echo: " + userText, Chunk: 1000}
	seen := map[string]bool{}
	for _, m := range markerRE.FindAllStringSubmatch(userText, -1) {
		name, arg := m[1], m[2]
		if seen[name] {
			continue
		}
		seen[name] = true
		n, _ := strconv.Atoi(arg) // a bad number reads as 0 and takes the default
		switch name {
		case "error":
			s.Status = n
			if s.Status < 400 {
				s.Status = 500
			}
		case "say":
			s.Text = arg
		case "huge":
			s.Text = HugeText(n)
		case "slow":
			if n <= 0 {
				n = 100
			}
			s.Text = strings.Repeat("word ", n)
			s.Chunk = len("word ")
			s.Delay = SlowDelay
		case "chunk":
			if n > 0 {
				s.Chunk = n
			}
		}
	}
	return s
}

// HugeText returns n bytes of a recognisable pattern: numbered lines of
// ASCII, so a reply that arrives cut, doubled or reordered shows it.
func HugeText(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:n]
}

var msgSeq atomic.Int64

func (s Script) usage(inTokens, outTokens int) map[string]any {
	return map[string]any{
		"input_tokens":                inTokens,
		"output_tokens":               outTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

// message is the non-streaming reply.
func (s Script) message(model string, inTokens int) map[string]any {
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake%04d", msgSeq.Add(1)),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       []any{map[string]any{"type": "text", "text": s.Text}},
		"stop_reason":   "end_turn",
		"stop_sequence": nil,
		"usage":         s.usage(inTokens, estimateTokens(len(s.Text))),
	}
}

var errStopped = errors.New("fake API stopped")

// stream writes the reply as the Messages API's server-sent events. It
// returns an error when the client goes away or the server stops first.
func (s Script) stream(ctx context.Context, stop <-chan struct{}, w *sseWriter, model string, inTokens int) error {
	id := fmt.Sprintf("msg_fake%04d", msgSeq.Add(1))
	events := []struct {
		name string
		data any
	}{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": s.usage(inTokens, 1),
		}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}},
		{"ping", map[string]any{"type": "ping"}},
	}
	for _, e := range events {
		if err := w.event(e.name, e.data); err != nil {
			return err
		}
	}
	for text := s.Text; text != ""; {
		n := min(s.Chunk, len(text))
		// Never split a UTF-8 sequence: the real API sends whole characters.
		for n < len(text) && n > 0 && text[n]&0xC0 == 0x80 {
			n--
		}
		if n == 0 {
			n = len(text)
		}
		if s.Delay > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-stop:
				return errStopped
			case <-time.After(s.Delay):
			}
		}
		if err := w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text[:n]}}); err != nil {
			return err
		}
		text = text[n:]
	}
	tail := []struct {
		name string
		data any
	}{
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": estimateTokens(len(s.Text))}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
	for _, e := range tail {
		if err := w.event(e.name, e.data); err != nil {
			return err
		}
	}
	return nil
}
