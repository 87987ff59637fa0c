package transform

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Encoder writes protocol events as JSON lines, byte for byte what their
// MarshalJSON methods write (the shapes in shapes.go, through encoding/json
// without HTML escaping; encode_test compares them on every recorded
// event), but without encoding/json's cost:
// encoding/json re-validates and re-compacts what each MarshalJSON returns,
// once per level of nesting, so a message_update of a long message would
// cost several passes over the whole text, nearly all of the bridge's CPU
// on a long reply. The Encoder writes each value once, and writes the text of
// a block being streamed from the escaped copy the translator keeps (see
// [Content]), so a frame costs a copy of what did not change, never an
// escape of it.
//
// It writes through a small buffer: long strings go to the writer from
// where they are, so a frame is never held whole. Not safe for concurrent
// use.
type Encoder struct {
	// Delta writes message_update as pi 1.5 does: no message, no partial
	// (--message-updates delta). Set before the first event.
	Delta bool

	w   io.Writer
	buf []byte
	n   int64 // bytes written to w
	err error // the first write error; every later write returns it
}

// encoderBuffer is how much the encoder gathers before it writes; strings
// at least this long are written straight from where they are.
const encoderBuffer = 32 << 10

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w, buf: make([]byte, 0, encoderBuffer)}
}

// Written is the number of bytes the encoder handed to its writer.
func (e *Encoder) Written() int64 { return e.n }

// Buffered is the number of bytes waiting for [Encoder.Flush].
func (e *Encoder) Buffered() int { return len(e.buf) }

// Event writes ev as one line. It may leave the line's end in the buffer:
// call [Encoder.Flush] when no more frames follow at once. An event that
// cannot be encoded (a tool call whose arguments are not JSON) is an error
// before anything of it is written.
func (e *Encoder) Event(ev *Event) error {
	if e.err != nil {
		return e.err
	}
	if err := ev.check(); err != nil {
		return err
	}
	if ev.Subagent != nil || ev.Notice != nil {
		// omp's sub-agent frames and the notices: rare, and shaped by
		// their structs.
		b, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
		}
		return e.Line(b)
	}
	e.event(ev)
	e.buf = append(e.buf, '\n')
	e.spill()
	return e.err
}

// AppendMessage appends m to dst as JSON in pi's shape, byte for byte what
// [Message.MarshalJSON] writes, in one pass over its text and one
// allocation when dst has no room (sized by the text it holds): for a
// long message, what encoding/json would copy once per level of nesting
// is copied once. A tool call whose arguments are not JSON is an error,
// with dst as it was.
func AppendMessage(dst []byte, m *Message) ([]byte, error) {
	if err := m.check(); err != nil {
		return dst, err
	}
	if n := m.sizeHint(); cap(dst)-len(dst) < n {
		dst = append(make([]byte, 0, len(dst)+n), dst...)
	}
	e := Encoder{buf: dst}
	e.message(m)
	return e.buf, nil
}

// WriteMessage writes m to w as [AppendMessage] appends it, through a
// buffer of 32 KiB: a long message is never whole in memory (a pi file's
// entry). A tool call whose arguments are not JSON is an error before
// anything is written; else the first error of w.
func WriteMessage(w io.Writer, m *Message) error {
	if err := m.check(); err != nil {
		return err
	}
	e := NewEncoder(w)
	e.message(m)
	return e.Flush()
}

// CheckMessage reports whether m encodes: an error, [ErrInvalidJSON], for
// a tool call whose arguments are not JSON.
func CheckMessage(m *Message) error { return m.check() }

// sizeHint is about the length of m's JSON: its strings and raw JSON, and
// room for the keys and for escapes up to one character in eight.
func (m *Message) sizeHint() int {
	n := 512 + len(m.Details) + len(m.ErrorMessage)
	for i := range m.Content {
		c := &m.Content[i]
		n += 64 + c.TextLen() + len(c.ID) + len(c.Name) + len(c.Arguments) + len(c.Data)
	}
	return n + n/8
}

// Line writes b, one encoded frame without its line end, as one line.
func (e *Encoder) Line(b []byte) error {
	if e.err != nil {
		return e.err
	}
	e.raw(unsafe.String(unsafe.SliceData(b), len(b)))
	e.buf = append(e.buf, '\n')
	e.spill()
	return e.err
}

// Flush writes what is buffered.
func (e *Encoder) Flush() error {
	if e.w != nil && e.err == nil && len(e.buf) > 0 {
		e.write(e.buf)
		e.buf = e.buf[:0]
	}
	return e.err
}

func (e *Encoder) write(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	e.err = err
}

// spill writes the buffer once it is full enough. An encoder without a
// writer ([AppendMessage]) keeps everything.
func (e *Encoder) spill() {
	if e.w != nil && len(e.buf) >= encoderBuffer {
		_ = e.Flush() // the error stays in e.err
	}
}

// raw writes s as it is: through the buffer when short, else straight.
func (e *Encoder) raw(s string) {
	if e.w == nil || len(s) < encoderBuffer {
		e.buf = append(e.buf, s...)
		e.spill()
		return
	}
	_ = e.Flush()
	e.write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

func (e *Encoder) str(s string) {
	if len(s) <= encoderBuffer {
		e.buf = appendString(e.buf, s)
		e.spill()
		return
	}
	e.buf = append(e.buf, '"')
	e.strTail(s)
}

// strTail escapes the rest of a long string whose opening quote and first
// piece are written, and closes it.
func (e *Encoder) strTail(s string) {
	e.escaped(s)
	e.buf = append(e.buf, '"')
	e.spill()
}

// escaped writes s escaped, without quotes, a buffer's worth at a time.
func (e *Encoder) escaped(s string) {
	for len(s) > encoderBuffer {
		k := encoderBuffer
		for k > encoderBuffer-utf8.UTFMax && !utf8.RuneStart(s[k]) {
			k-- // not inside a character (invalid bytes are escaped one by one anyway)
		}
		e.buf = appendEscaped(e.buf, s[:k])
		e.spill()
		s = s[k:]
	}
	e.buf = appendEscaped(e.buf, s)
	e.spill()
}

// text writes a block's text s. When the block carries the offsets of the
// characters to escape in a prefix of s (see [Content]), that prefix is
// written as the runs between them and their escapes, without a scan.
func (e *Encoder) text(s string, c *Content) {
	if !escCovers(c.escOf, s) {
		e.str(s)
		return
	}
	e.buf = append(e.buf, '"')
	e.textRun(s, c.escOf, c.escAt)
	e.buf = append(e.buf, '"')
	e.spill()
}

// blockText writes the text of a block kept in parts (see [Content]):
// parts, then last, the block's own text, as one string.
func (e *Encoder) blockText(parts []textPart, last string, c *Content) {
	if len(parts) == 0 {
		e.text(last, c)
		return
	}
	e.buf = append(e.buf, '"')
	for _, p := range parts {
		if p.escKnown {
			e.textRun(p.s, p.s, p.escAt)
		} else {
			e.escaped(p.s)
		}
	}
	if escCovers(c.escOf, last) {
		e.textRun(last, c.escOf, c.escAt)
	} else {
		e.escaped(last)
	}
	e.buf = append(e.buf, '"')
	e.spill()
}

// textRun writes s escaped, without quotes: its prefix escOf as the runs
// between the characters to escape at escAt and their escapes, without a
// scan, and the rest scanned.
func (e *Encoder) textRun(s, escOf string, escAt []uint32) {
	prev := 0
	for _, o := range escAt {
		if run := s[prev:o]; len(run) < encoderBuffer {
			e.buf = append(e.buf, run...)
		} else {
			e.raw(run)
		}
		if b := s[o]; b < utf8.RuneSelf {
			e.buf = appendASCIIEscape(e.buf, b)
			prev = int(o) + 1
		} else {
			prev = int(o) + e.escapeAt(s[o:])
		}
		e.spill()
	}
	e.raw(s[prev:len(escOf)])
	e.escaped(s[len(escOf):])
}

// escapeAt writes the escape of the character s starts with, one that
// appendEscapes reported, and returns its length in s.
func (e *Encoder) escapeAt(s string) int {
	if s[0] < utf8.RuneSelf {
		e.buf = appendEscaped(e.buf, s[:1])
		return 1
	}
	_, size := utf8.DecodeRuneInString(s)
	e.buf = appendEscaped(e.buf, s[:size])
	return size
}

func (e *Encoder) key(k string) {
	e.buf = append(e.buf, k...) // keys are written with their quotes, comma and colon
}

func (e *Encoder) int(n int64) { e.buf = strconv.AppendInt(e.buf, n, 10) }

func (e *Encoder) bool(b bool) { e.buf = strconv.AppendBool(e.buf, b) }

// float writes f as encoding/json does.
func (e *Encoder) float(f float64) {
	e.buf = appendFloat(e.buf, f)
}

// rawJSON writes a JSON value compacted, as encoding/json writes a
// json.RawMessage; empty writes def. Values were checked by check.
func (e *Encoder) rawJSON(v json.RawMessage, def string) {
	if len(v) == 0 {
		e.buf = append(e.buf, def...)
		return
	}
	if isCompact(v) {
		e.raw(unsafe.String(unsafe.SliceData(v), len(v)))
		return
	}
	var b bytes.Buffer
	_ = json.Compact(&b, v) // checked valid
	e.raw(b.String())
}

// isCompact reports whether v has no whitespace outside strings, the common
// case, so it can be written as it is.
func isCompact(v []byte) bool {
	in := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// ErrInvalidJSON is the error for an event whose JSON field (tool
// arguments, details) holds no valid JSON; nothing of it is written.
var ErrInvalidJSON = errors.New("transform: invalid JSON in a raw field")

func checkRaw(v json.RawMessage) error {
	if len(v) > 0 && !json.Valid(v) {
		return ErrInvalidJSON
	}
	return nil
}

// check reports whether ev can be encoded: its raw JSON fields are valid.
// Text is always encodable.
func (ev *Event) check() error {
	if err := checkRaw(ev.Args); err != nil {
		return err
	}
	if err := ev.Message.check(); err != nil {
		return err
	}
	for i := range ev.Messages {
		if err := ev.Messages[i].check(); err != nil {
			return err
		}
	}
	for i := range ev.ToolResults {
		if err := ev.ToolResults[i].check(); err != nil {
			return err
		}
	}
	if ev.Result != nil {
		if err := checkRaw(ev.Result.Details); err != nil {
			return err
		}
		if err := checkContent(ev.Result.Content); err != nil {
			return err
		}
	}
	if ev.Update.ToolCall != nil {
		return checkRaw(ev.Update.ToolCall.Arguments)
	}
	return nil
}

func (m *Message) check() error {
	if err := checkRaw(m.Details); err != nil {
		return err
	}
	return checkContent(m.Content)
}

func checkContent(cs []Content) error {
	for i := range cs {
		if cs[i].Type == "toolCall" {
			if err := checkRaw(cs[i].Arguments); err != nil {
				return err
			}
		}
	}
	return nil
}

// event writes ev in pi's shape (the keys in the order pi writes them).
// Every event type has its case here and in [Event.MarshalJSON]; a type
// with neither is written as {"type":…} alone and reported
// ([OnUnknownEvent]).
func (e *Encoder) event(ev *Event) {
	e.key(`{"type":`)
	e.str(ev.Type)
	switch ev.Type {
	case EventAgentStart, EventTurnStart:
		// Nothing but the type.
	case EventAgentEnd:
		e.key(`,"messages":`)
		e.messages(ev.Messages)
		if ev.Continues {
			e.key(`,"willRetry":false,"isTerminal":false,"yielded":false`)
		} else {
			e.key(`,"willRetry":false,"isTerminal":true,"yielded":true`)
		}
	case EventTurnEnd:
		e.key(`,"message":`)
		e.message(&ev.Message)
		e.key(`,"toolResults":`)
		e.messages(ev.ToolResults)
	case EventMessageStart, EventMessageEnd:
		e.key(`,"message":`)
		e.message(&ev.Message)
		e.messageID(ev.MessageID)
	case EventToolExecutionStart:
		e.key(`,"toolCallId":`)
		e.str(ev.ToolCallID)
		e.key(`,"toolName":`)
		e.str(ev.ToolName)
		e.key(`,"args":`)
		e.rawJSON(ev.Args, "{}")
	case EventToolExecutionEnd:
		e.key(`,"toolCallId":`)
		e.str(ev.ToolCallID)
		e.key(`,"toolName":`)
		e.str(ev.ToolName)
		e.key(`,"result":`)
		if r := ev.Result; r == nil {
			e.key(`null`)
		} else {
			e.key(`{"content":`)
			e.contents(r.Content, false)
			if len(r.Details) > 0 {
				e.key(`,"details":`)
				e.rawJSON(r.Details, "null")
			}
			if len(r.Usage) > 0 {
				e.key(`,"usage":`)
				e.rawJSON(r.Usage, "null")
			}
			e.buf = append(e.buf, '}')
		}
		e.key(`,"isError":`)
		e.bool(ev.IsError)
		if ev.DurationMs >= 0 {
			e.key(`,"durationMs":`)
			e.int(ev.DurationMs)
		}
	case EventAutoRetryStart:
		r := ev.Retry
		e.key(`,"attempt":`)
		e.int(int64(r.Attempt))
		e.key(`,"maxAttempts":`)
		e.int(int64(r.MaxAttempts))
		e.key(`,"delayMs":`)
		e.int(r.DelayMs)
		e.key(`,"errorMessage":`)
		e.str(r.ErrorMessage)
	case EventAutoRetryEnd:
		r := ev.Retry
		e.key(`,"success":`)
		e.bool(r.Success)
		e.key(`,"attempt":`)
		e.int(int64(r.Attempt))
		if r.FinalError != "" {
			e.key(`,"finalError":`)
			e.str(r.FinalError)
		}
	case EventCompactionStart:
		e.key(`,"reason":`)
		e.str(ev.Reason)
	case EventCompactionEnd:
		e.key(`,"reason":`)
		e.str(ev.Reason)
		e.key(`,"result":`)
		if c := ev.Compaction; c == nil {
			e.key(`null`)
		} else {
			e.key(`{"summary":`)
			e.str(c.Summary)
			e.key(`,"firstKeptEntryId":`)
			e.str(c.FirstKeptEntryID)
			e.key(`,"tokensBefore":`)
			e.int(c.TokensBefore)
			e.key(`,"details":`)
			if d := c.Details; d == nil {
				e.key(`null`)
			} else {
				e.key(`{"trigger":`)
				e.str(d.Trigger)
				e.key(`,"tokensAfter":`)
				e.int(d.TokensAfter)
				e.buf = append(e.buf, '}')
			}
			e.buf = append(e.buf, '}')
		}
		e.key(`,"aborted":`)
		e.bool(ev.Aborted)
		e.key(`,"willRetry":false`)
		if ev.ErrorMessage != "" {
			e.key(`,"errorMessage":`)
			e.str(ev.ErrorMessage)
		}
	case EventMessageUpdate:
		a := &ev.Update
		e.key(`,"usage":`)
		e.usage(&ev.Message.Usage)
		e.key(`,"assistantMessageEvent":{"type":`)
		e.str(a.Type)
		e.key(`,"contentIndex":`)
		e.int(int64(a.ContentIndex))
		switch a.Type {
		case TextDelta, ThinkingDelta, ToolcallDelta:
			e.key(`,"delta":`)
			e.str(a.Delta)
		case TextEnd, ThinkingEnd:
			e.key(`,"content":`)
			// The block's whole text: its escaped copy serves when the
			// content is that text.
			c := &Content{}
			if b := ev.Message.block(a.ContentIndex); b != nil {
				c = b
			}
			e.blockText(a.parts, a.Content, c)
		case ToolcallStart:
			if b := ev.Message.block(a.ContentIndex); b != nil {
				if b.ID != "" {
					e.key(`,"id":`)
					e.str(b.ID)
				}
				if b.Name != "" {
					e.key(`,"toolName":`)
					e.str(b.Name)
				}
			}
		}
		if a.ToolCall != nil {
			e.key(`,"toolCall":`)
			e.content(a.ToolCall)
		}
		if e.Delta {
			e.buf = append(e.buf, '}')
		} else {
			e.key(`,"partial":`)
			e.message(&ev.Message)
			e.key(`},"message":`)
			e.message(&ev.Message)
		}
		e.messageID(ev.MessageID)
	default:
		unknownEvent(ev.Type)
	}
	e.buf = append(e.buf, '}')
}

func (e *Encoder) messageID(id string) {
	if id != "" {
		e.key(`,"messageId":`)
		e.str(id)
	}
}

func (e *Encoder) messages(ms []Message) {
	e.buf = append(e.buf, '[')
	for i := range ms {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.message(&ms[i])
	}
	e.buf = append(e.buf, ']')
}

// message writes m in pi's shape for its role; nil content is written as [].
func (e *Encoder) message(m *Message) {
	e.key(`{"role":`)
	e.str(m.Role)
	switch m.Role {
	case RoleAssistant:
		e.key(`,"content":`)
		e.contents(m.Content, true)
		e.key(`,"api":`)
		e.str(m.API)
		e.key(`,"provider":`)
		e.str(m.Provider)
		e.key(`,"model":`)
		e.str(m.Model)
		e.key(`,"usage":`)
		e.usage(&m.Usage)
		e.key(`,"stopReason":`)
		e.str(m.StopReason)
		e.key(`,"timestamp":`)
		e.int(m.Timestamp)
		if m.ResponseID != "" {
			e.key(`,"responseId":`)
			e.str(m.ResponseID)
		}
		if m.ErrorMessage != "" {
			e.key(`,"errorMessage":`)
			e.str(m.ErrorMessage)
		}
		if m.RawStopReason != "" {
			e.key(`,"rawStopReason":`)
			e.str(m.RawStopReason)
		}
		if m.DurationMs != nil {
			e.key(`,"durationMs":`)
			e.int(*m.DurationMs)
		}
		if m.ThinkingLevel != "" {
			e.key(`,"thinkingLevel":`)
			e.str(m.ThinkingLevel)
		}
	case RoleToolResult:
		e.key(`,"toolCallId":`)
		e.str(m.ToolCallID)
		e.key(`,"toolName":`)
		e.str(m.ToolName)
		e.key(`,"content":`)
		e.contents(m.Content, true)
		if len(m.Details) > 0 {
			e.key(`,"details":`)
			e.rawJSON(m.Details, "null")
		}
		e.key(`,"isError":`)
		e.bool(m.IsError != nil && *m.IsError)
		if len(m.ToolUsage) > 0 {
			e.key(`,"usage":`)
			e.rawJSON(m.ToolUsage, "null")
		}
		if m.DurationMs != nil {
			e.key(`,"durationMs":`)
			e.int(*m.DurationMs)
		}
		e.key(`,"timestamp":`)
		e.int(m.Timestamp)
	case RoleCustom:
		e.key(`,"customType":`)
		e.str(m.CustomType)
		e.key(`,"content":`)
		if m.ContentString && len(m.Content) == 1 && m.Content[0].Type == "text" {
			e.blockText(m.Content[0].parts, m.Content[0].Text, &m.Content[0])
		} else {
			e.contents(m.Content, true)
		}
		if m.Display != nil {
			e.key(`,"display":`)
			e.bool(*m.Display)
		}
		if len(m.Details) > 0 {
			e.key(`,"details":`)
			e.rawJSON(m.Details, "null")
		}
		e.key(`,"timestamp":`)
		e.int(m.Timestamp)
	default:
		e.key(`,"content":`)
		e.contents(m.Content, true)
		e.key(`,"timestamp":`)
		e.int(m.Timestamp)
	}
	e.buf = append(e.buf, '}')
}

// contents writes a content array; nil is written as [] when emptyArray,
// else as null (as encoding/json writes a nil slice).
func (e *Encoder) contents(cs []Content, emptyArray bool) {
	if cs == nil && !emptyArray {
		e.key(`null`)
		return
	}
	e.buf = append(e.buf, '[')
	for i := range cs {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.content(&cs[i])
	}
	e.buf = append(e.buf, ']')
}

// content writes one block in pi's shape.
func (e *Encoder) content(c *Content) {
	e.key(`{"type":`)
	e.str(c.Type)
	switch c.Type {
	case "text":
		e.key(`,"text":`)
		e.blockText(c.parts, c.Text, c)
	case "thinking":
		e.key(`,"thinking":`)
		e.blockText(c.parts, c.Thinking, c)
	case "toolCall":
		e.key(`,"id":`)
		e.str(c.ID)
		e.key(`,"name":`)
		e.str(c.Name)
		e.key(`,"arguments":`)
		e.rawJSON(c.Arguments, "{}")
	case "image":
		e.key(`,"data":`)
		e.str(c.Data)
		e.key(`,"mimeType":`)
		e.str(c.MimeType)
	}
	e.buf = append(e.buf, '}')
}

func (e *Encoder) usage(u *Usage) {
	e.key(`{"input":`)
	e.int(u.Input)
	e.key(`,"output":`)
	e.int(u.Output)
	e.key(`,"cacheRead":`)
	e.int(u.CacheRead)
	e.key(`,"cacheWrite":`)
	e.int(u.CacheWrite)
	e.key(`,"totalTokens":`)
	e.int(u.TotalTokens)
	e.key(`,"cost":{"input":`)
	e.float(u.Cost.Input)
	e.key(`,"output":`)
	e.float(u.Cost.Output)
	e.key(`,"cacheRead":`)
	e.float(u.Cost.CacheRead)
	e.key(`,"cacheWrite":`)
	e.float(u.Cost.CacheWrite)
	e.key(`,"total":`)
	e.float(u.Cost.Total)
	e.key(`}}`)
}

// appendFloat formats f as encoding/json does: the shortest 'f' form, or 'e'
// for very small and very large magnitudes, with a one-digit negative
// exponent. NaN and infinities (which encoding/json refuses) are written as
// 0: costs and counts are always finite.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString appends s as a JSON string literal.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends the inside of the JSON string literal for s, as
// encoding/json writes it without HTML escaping: ", \ and control characters
// escaped (\b \f \n \r \t by name), invalid UTF-8 as \ufffd, and U+2028 and
// U+2029 as \u2028 and \u2029 (line ends to JavaScript); everything else
// as it is.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := nextSpecial(s, 0); i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				// After a multi-byte character: plain bytes again.
				i = nextSpecial(s, i)
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendASCIIEscape(dst, b)
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendASCIIEscape appends the escape of b, an ASCII byte JSON escapes
// (", \ or a control character).
func appendASCIIEscape(dst []byte, b byte) []byte {
	switch b {
	case '\\', '"':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
}

// SWAR constants: the byte 0x01, 0x20, '"', '\\' and 0x80 in every byte of
// a word.
const (
	swarOnes  = 0x0101010101010101
	swarSpace = 0x20 * swarOnes
	swarQuote = '"' * swarOnes
	swarBack  = '\\' * swarOnes
	swarHigh  = 0x80 * swarOnes
)

// nextSpecial returns the index, from i on, of the first byte of s that
// [appendEscaped] must look at (", \, a control character, or any byte of
// a multi-byte character), or len(s). It tests eight bytes at a time: the
// text of a reply is mostly runs of such plain bytes.
func nextSpecial(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte below 0x20, a zero byte of x^'"' or of x^'\\', a byte with
		// its high bit set: each test flags its lowest such byte exactly
		// (a borrow only runs up from a byte that is one), so the lowest
		// flag of all is the first special byte.
		q, k := x^swarQuote, x^swarBack
		m := (x-swarSpace)&^x | (q-swarOnes)&^q | (k-swarOnes)&^k | x
		if m &= swarHigh; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return len(s)
}

// escCovers reports whether of, the text a block's escape offsets were
// found in, is a prefix of s: it views the bytes s starts with. Both view
// append-only buffers whose bytes never change, so a block's copy in an
// earlier event still matches its own shorter text, and a block whose text
// was replaced since (a new string) does not match and is escaped afresh.
func escCovers(of, s string) bool {
	return len(of) > 0 && len(of) <= len(s) && unsafe.StringData(of) == unsafe.StringData(s)
}

// appendEscapes appends to at the offsets (plus base) of the characters of
// s that [appendEscaped] escapes.
func appendEscapes(at []uint32, s string, base int) []uint32 {
	for i := nextSpecial(s, 0); i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i = nextSpecial(s, i)
				continue
			}
			at = append(at, uint32(base+i))
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 || c == '\u2028' || c == '\u2029' {
			at = append(at, uint32(base+i))
		}
		i += size
	}
	return at
}

// unescapedLen is the length of the value of the JSON string literal raw
// (with its quotes), as [appendJSONString] would write it, without writing
// it.
func unescapedLen(raw string) int {
	if len(raw) < 2 || raw[0] != '"' {
		return 0
	}
	s := raw[1 : len(raw)-1]
	n := 0
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return n + len(s)
		}
		n += i
		s = s[i:]
		switch {
		case len(s) < 2:
			return n + len(s)
		case s[1] == 'u':
			r, k := unicodeEscape(s)
			if k == 0 {
				n, s = n+2, s[2:]
				continue
			}
			n, s = n+utf8.RuneLen(r), s[k:]
		case strings.IndexByte(`"\\/bfnrt`, s[1]) >= 0:
			n, s = n+1, s[2:]
		default:
			n, s = n+2, s[2:]
		}
	}
}
