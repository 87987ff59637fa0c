package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Block is one content block of a scripted reply.
type Block struct {
	// Type is "text", "thinking" or "tool_use".
	Type string
	// Text is the text of a text or thinking block.
	Text string
	// Name and Input (a JSON object) describe a tool_use block.
	Name  string
	Input string
}

// Script is the reply the fake API gives to one Messages request.
type Script struct {
	// Status, when not zero, makes the reply an HTTP error with that status
	// and "x-should-retry: false", so the CLI fails the turn at once.
	Status int
	// Flaky, when not zero, fails the first Flaky attempts at this reply
	// with status FlakyStatus and "x-should-retry: true", so the CLI
	// retries; the attempt after them gets the reply.
	Flaky       int
	FlakyStatus int
	// Blocks are the reply's content, streamed in order.
	Blocks []Block
	// StopReason is the API stop_reason; empty means "end_turn", or
	// "tool_use" when a block is a tool call.
	StopReason string
	// Chunk is the size of text and tool-input deltas, in bytes.
	Chunk int
	// Delay is the pause before each delta.
	Delay time.Duration
	// Stall is a pause before the first event, as of an API that hangs.
	Stall time.Duration
	// Reset, when not zero, cuts the connection in the middle of the
	// first Reset attempts at this reply (after the first delta), as a
	// network that drops; the attempt after them gets the reply.
	Reset int
	// RateLimit, when set, is the reply's anthropic-ratelimit-unified-status
	// header (allowed, allowed_warning or rejected), sent with a five-hour
	// window at 80% used that resets at RateLimitReset: what the API tells
	// a subscriber's CLI about its usage limits.
	RateLimit string
	// cut is set on an attempt that is to be cut.
	cut bool
}

// RateLimitReset is when the [[ratelimit]] window resets (Unix seconds):
// fixed, so recordings do not change with the clock.
const RateLimitReset = 4102444800 // 2100-01-01T00:00:00Z

// Text returns the script's text blocks, joined.
func (s Script) Text() string {
	var b strings.Builder
	for _, bl := range s.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// Markers recognised in the text the user typed last (see
// [Request.LastUserText]). Each is written [[name]] or [[name:arg]]; the
// argument ends at the first "]]".
//
//	[[error:529]]        reply with that HTTP status and an Anthropic error body
//	[[flaky:529:2]]      fail the first 2 attempts with 529 (retryable), then reply
//	[[think:text]]       start the reply with a thinking block
//	[[say:text]]         reply with exactly "text" (default: "echo: " + the user's text)
//	[[huge:N]]           reply with N bytes of [HugeText]
//	[[slow:N]]           reply with N words, one delta every [SlowDelay] (default 100)
//	[[tool:Name:{json}]] end the reply with a call of tool Name (repeatable)
//	[[bash:command]]     shorthand for [[tool:Bash:{"command":"command","description":"…"}]]
//	[[read:path]]        shorthand for [[tool:Read:{"file_path":"path"}]]
//	[[write:path|text]]  shorthand for [[tool:Write:{"file_path":"path","content":"text"}]]
//	[[edit:path|old|new]] shorthand for [[tool:Edit:{"file_path":"path","old_string":"old","new_string":"new"}]]
//	[[grep:pattern]]     shorthand for [[tool:Grep:{"pattern":"pattern"}]]
//	[[glob:pattern]]     shorthand for [[tool:Glob:{"pattern":"pattern"}]]
//	                     (in these, \n stands for a line break)
//	[[agent:prompt]]     a call of the CLI's Agent tool (a sub-agent, in the foreground) with
//	                     this prompt, where {{ and }} stand for [[ and ]]: the sub-agent's
//	                     own requests then follow the markers inside
//	[[agentbg:prompt]]   the same, with the sub-agent in the background
//	[[stop:reason]]      the API stop_reason (e.g. max_tokens)
//	[[chunk:N]]          send text and tool input in deltas of N bytes (default 1000)
//	[[stall:MS]]         wait MS milliseconds before the first event
//	[[ratelimit:status]] send the unified rate-limit headers with this status
//	                     (allowed, allowed_warning, rejected: then a 429)
//	[[reset:N]]          cut the connection mid-stream in the first N attempts (default 1)
//	[[notified:script]]  no effect on this reply: the reply to a background task's
//	                     notification (the turn the CLI runs by itself when a background
//	                     sub-agent ends) is script, where {{ and }} stand for [[ and ]]
//
// After the CLI ran tools (the last user message carries tool results, and
// no text), the reply is "tool said: " followed by the results' text.
var markerRE = regexp.MustCompile(`\[\[(error|flaky|think|say|huge|slow|tool|bash|read|write|edit|grep|glob|agent|agentbg|stop|chunk|stall|reset|notified|ratelimit)(?::(.*?))?\]\]`)

// SlowDelay is the pause between deltas of a [[slow]] reply.
const SlowDelay = 50 * time.Millisecond

// ParseScript chooses the reply for what the user typed.
func ParseScript(userText string) Script {
	s := Script{Chunk: 1000}
	var reply *Block
	var thinking, tools []Block
	for _, m := range markerRE.FindAllStringSubmatch(userText, -1) {
		name, arg := m[1], m[2]
		n, _ := strconv.Atoi(arg) // a bad number reads as 0 and takes the default
		switch name {
		case "error":
			s.Status = n
			if s.Status < 400 {
				s.Status = 500
			}
		case "flaky":
			st, times, _ := strings.Cut(arg, ":")
			s.FlakyStatus, _ = strconv.Atoi(st)
			if s.FlakyStatus < 400 {
				s.FlakyStatus = 529
			}
			if s.Flaky, _ = strconv.Atoi(times); s.Flaky <= 0 {
				s.Flaky = 1
			}
		case "notified": // for the notification's reply (notifiedScript)
		case "think":
			thinking = append(thinking, Block{Type: "thinking", Text: arg})
		case "say":
			reply = &Block{Type: "text", Text: arg}
		case "huge":
			reply = &Block{Type: "text", Text: HugeText(n)}
		case "slow":
			if n <= 0 {
				n = 100
			}
			reply = &Block{Type: "text", Text: strings.Repeat("word ", n)}
			s.Chunk = len("word ")
			s.Delay = SlowDelay
		case "tool":
			tname, input, _ := strings.Cut(arg, ":")
			if input == "" {
				input = "{}"
			}
			tools = append(tools, Block{Type: "tool_use", Name: tname, Input: input})
		case "bash":
			input, _ := json.Marshal(map[string]string{"command": arg, "description": "Run " + arg})
			tools = append(tools, Block{Type: "tool_use", Name: "Bash", Input: string(input)})
		case "read", "write", "edit", "grep", "glob":
			tools = append(tools, fileTool(name, strings.ReplaceAll(arg, `\n`, "\n")))
		case "agent", "agentbg":
			prompt := strings.NewReplacer("{{", "[[", "}}", "]]").Replace(arg)
			input, _ := json.Marshal(map[string]any{"description": "Sub-agent task", "prompt": prompt,
				"subagent_type": "general-purpose", "run_in_background": name == "agentbg"})
			tools = append(tools, Block{Type: "tool_use", Name: "Agent", Input: string(input)})
		case "stop":
			s.StopReason = arg
		case "chunk":
			if n > 0 {
				s.Chunk = n
			}
		case "ratelimit":
			s.RateLimit = arg
		case "stall":
			s.Stall = time.Duration(n) * time.Millisecond
		case "reset":
			if s.Reset = n; n <= 0 {
				s.Reset = 1
			}
		}
	}
	if reply == nil && len(tools) == 0 {
		reply = &Block{Type: "text", Text: "echo: " + userText}
	}
	s.Blocks = thinking
	if reply != nil {
		s.Blocks = append(s.Blocks, *reply)
	}
	s.Blocks = append(s.Blocks, tools...)
	return s
}

// afterTools is the reply once tools ran: it quotes their results.
func afterTools(results []string) Script {
	return Script{Chunk: 1000, Blocks: []Block{{Type: "text", Text: "tool said: " + strings.Join(results, " | ")}}}
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

var msgSeq, toolSeq atomic.Int64

func usage(inTokens, outTokens int) map[string]any {
	return map[string]any{
		"input_tokens":                inTokens,
		"output_tokens":               outTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

func (s Script) stopReason() string {
	if s.StopReason != "" {
		return s.StopReason
	}
	for _, b := range s.Blocks {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

func (s Script) outTokens() int {
	n := 0
	for _, b := range s.Blocks {
		n += len(b.Text) + len(b.Input)
	}
	return estimateTokens(n)
}

// content returns the blocks as the API's content array, giving tool calls
// ids.
func (s Script) content() []map[string]any {
	out := make([]map[string]any, len(s.Blocks))
	for i, b := range s.Blocks {
		switch b.Type {
		case "thinking":
			out[i] = map[string]any{"type": "thinking", "thinking": b.Text, "signature": "fake-signature"}
		case "tool_use":
			out[i] = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_fake%04d", toolSeq.Add(1)),
				"name": b.Name, "input": json.RawMessage(b.Input)}
		default:
			out[i] = map[string]any{"type": "text", "text": b.Text}
		}
	}
	return out
}

// message is the non-streaming reply.
func (s Script) message(model string, inTokens int) map[string]any {
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake%04d", msgSeq.Add(1)),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       s.content(),
		"stop_reason":   s.stopReason(),
		"stop_sequence": nil,
		"usage":         usage(inTokens, s.outTokens()),
	}
}

var errStopped = errors.New("fake API stopped")

// errCut ends an attempt that [Script.Reset] cuts.
var errCut = errors.New("fake API cut the connection")

// chunks splits s into pieces of at most n bytes, never inside a UTF-8
// sequence (the real API sends whole characters).
func chunks(s string, n int) []string {
	var out []string
	for s != "" {
		k := min(n, len(s))
		for k < len(s) && k > 0 && s[k]&0xC0 == 0x80 {
			k--
		}
		if k == 0 {
			k = len(s)
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// stream writes the reply as the Messages API's server-sent events. It
// returns an error when the client goes away or the server stops first.
func (s Script) stream(ctx context.Context, stop <-chan struct{}, w *sseWriter, model string, inTokens int) error {
	id := fmt.Sprintf("msg_fake%04d", msgSeq.Add(1))
	if s.Stall > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return errStopped
		case <-time.After(s.Stall):
		}
	}
	emit := func(name string, data map[string]any) error {
		data["type"] = name
		return w.event(name, data)
	}
	wait := func() error {
		if s.Delay <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return errStopped
		case <-time.After(s.Delay):
			return nil
		}
	}
	if err := emit("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(inTokens, 1),
	}}); err != nil {
		return err
	}
	if err := emit("ping", map[string]any{}); err != nil {
		return err
	}
	for i, c := range s.content() {
		var start map[string]any
		var deltas []map[string]any
		switch c["type"] {
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			for _, p := range chunks(c["thinking"].(string), s.Chunk) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": c["signature"]})
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}
			for _, p := range chunks(string(c["input"].(json.RawMessage)), s.Chunk) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		default:
			start = map[string]any{"type": "text", "text": ""}
			for _, p := range chunks(c["text"].(string), s.Chunk) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
			}
		}
		if err := emit("content_block_start", map[string]any{"index": i, "content_block": start}); err != nil {
			return err
		}
		for _, d := range deltas {
			if err := wait(); err != nil {
				return err
			}
			if err := emit("content_block_delta", map[string]any{"index": i, "delta": d}); err != nil {
				return err
			}
			if s.cut {
				// Long enough for the CLI to relay what came, so the drop
				// lands in the middle of a message it has shown.
				time.Sleep(200 * time.Millisecond)
				return errCut
			}
		}
		if err := emit("content_block_stop", map[string]any{"index": i}); err != nil {
			return err
		}
	}
	if err := emit("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": s.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": s.outTokens()}}); err != nil {
		return err
	}
	return emit("message_stop", map[string]any{})
}

// fileTool is the call of a [[read]], [[write]], [[edit]], [[grep]] or
// [[glob]] marker with its argument: the CLI's tool and its input.
func fileTool(marker, arg string) Block {
	parts := strings.Split(arg, "|")
	at := func(i int) string {
		if i < len(parts) {
			return parts[i]
		}
		return ""
	}
	var name string
	var in map[string]string
	switch marker {
	case "read":
		name, in = "Read", map[string]string{"file_path": arg}
	case "write":
		name, in = "Write", map[string]string{"file_path": at(0), "content": strings.Join(parts[min(1, len(parts)):], "|")}
	case "edit":
		name, in = "Edit", map[string]string{"file_path": at(0), "old_string": at(1), "new_string": at(2)}
	case "grep":
		name, in = "Grep", map[string]string{"pattern": arg}
	default:
		name, in = "Glob", map[string]string{"pattern": arg}
	}
	input, _ := json.Marshal(in)
	return Block{Type: "tool_use", Name: name, Input: string(input)}
}
