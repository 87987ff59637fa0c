package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refFrame is e as encoding/json writes it without HTML escaping, through
// its MarshalJSON methods (the shapes in shapes.go, which the protocol
// reference is made from): what the bridge wrote before the Encoder.
func refFrame(t testing.TB, e Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(e))
	return buf.Bytes()
}

// encFrame is what the Encoder writes for e, through a small writer so that
// long strings take the direct path.
func encFrame(t testing.TB, e Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	require.NoError(t, enc.Event(&e))
	require.NoError(t, enc.Flush())
	assert.Equal(t, int64(buf.Len()), enc.Written())
	return buf.Bytes()
}

// TestEncoderMatchesReference encodes every event of every recording (with
// the escaped text the translator keeps) and compares it byte for byte with
// what MarshalJSON writes.
func TestEncoderMatchesReference(t *testing.T) {
	for _, rec := range recordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			evs := translate(rec, rec.lines, finish)
			for i, e := range evs {
				if len(evs) > 200 && i%97 != 0 && i < len(evs)-20 {
					continue // the 2 MB reply: a sample, and its end
				}
				want, got := refFrame(t, e), encFrame(t, e)
				if !bytes.Equal(want, got) {
					t.Fatalf("event %d (%s):\nwant %.600s\ngot  %.600s", i, e.Type, want, got)
				}
			}
		})
	}
}

// TestEncoderUsesEscapedText checks that a block streamed in deltas is
// written from its escaped copy (escOf and escJSON set and matching), also
// when a delta ends inside a character, and that the result is the same as
// escaping the text afresh.
func TestEncoderUsesEscapedText(t *testing.T) {
	tr := NewTranslator(clock())
	tr.Start(UserMessage(nil, 1))
	lines := []string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"x","usage":{}}}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
	}
	for _, l := range lines {
		tr.Line([]byte(l))
	}
	// "a\"<€\u2028" in pieces, the euro sign cut in two (raw bytes).
	deltas := []string{`a\"<`, "\xe2\x82", "\xac", `\u2028 \n\t\u0001 `, strings.Repeat("x", 70_000)}
	var text string
	for _, d := range deltas {
		evs := tr.Line([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + d + `"}}}`))
		require.Len(t, evs, 1)
		e := evs[0]
		c := e.Message.Content[0]
		text = c.Text
		require.NotEmpty(t, c.escOf)
		require.True(t, escCovers(c.escOf, c.Text))
		assert.Equal(t, appendEscapes(nil, c.escOf, 0), c.escAt)
		assert.Equal(t, string(refFrame(t, e)), string(encFrame(t, e)))
	}
	assert.Equal(t, "a\"<€\u2028 \n\t\x01 "+strings.Repeat("x", 70_000), text)
	// A copy whose text was replaced is escaped afresh.
	evs := tr.Line([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!"}}}`))
	e := evs[0]
	e.Message = e.Message.Clone()
	e.Message.Content[0].Text = "replaced"
	assert.Equal(t, string(refFrame(t, e)), string(encFrame(t, e)))
}

// TestEndFramesUseEscapes checks that the frames carrying a streamed
// message whole (message_end, turn_end, agent_end) keep its escape offsets,
// so the encoder copies the text between them, and that the run's messages
// drop them once the run ended: the session's history does not keep them.
func TestEndFramesUseEscapes(t *testing.T) {
	tr := NewTranslator(clock())
	tr.Start(UserMessage(nil, 1))
	var evs []Event
	for _, l := range []string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"x","usage":{}}}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one\ntwo \"three\""}}}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`,
		`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}}`,
		`{"type":"stream_event","event":{"type":"message_stop"}}`,
		`{"type":"assistant","message":{"id":"m1","model":"x","role":"assistant","content":[{"type":"text","text":"one\ntwo \"three\""}],"usage":{}}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"one\ntwo \"three\"","total_cost_usd":0.5,"usage":{}}`,
	} {
		evs = append(evs, tr.Line([]byte(l))...)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		var m *Message
		switch e.Type {
		case EventMessageEnd, EventTurnEnd:
			m = &e.Message
		case EventAgentEnd:
			m = &e.Messages[len(e.Messages)-1]
		default:
			continue
		}
		if m.Role != RoleAssistant {
			continue
		}
		seen[e.Type] = true
		c := m.Content[0]
		require.Equal(t, "one\ntwo \"three\"", c.Text)
		assert.True(t, escCovers(c.escOf, c.Text), "%s: escape offsets kept", e.Type)
		assert.Equal(t, appendEscapes(nil, c.escOf, 0), c.escAt, e.Type)
		assert.Equal(t, string(refFrame(t, e)), string(encFrame(t, e)), e.Type)
	}
	assert.Equal(t, map[string]bool{EventMessageEnd: true, EventTurnEnd: true, EventAgentEnd: true}, seen)
	require.True(t, tr.Ended())
	for _, m := range tr.Messages() {
		for _, c := range m.Content {
			assert.Empty(t, c.escOf, "the run's messages drop the offsets")
			assert.Nil(t, c.escAt)
		}
	}
}

func TestEncoderRefusesInvalidJSON(t *testing.T) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	e := Event{Type: EventToolExecutionStart, ToolCallID: "t", ToolName: "Bash", Args: json.RawMessage(`{"a":`)}
	require.Error(t, enc.Event(&e))
	require.NoError(t, enc.Flush())
	assert.Zero(t, buf.Len(), "nothing of a refused event is written")
	e.Args = json.RawMessage("{ \"a\" : [1, 2] }")
	require.NoError(t, enc.Event(&e))
	require.NoError(t, enc.Flush())
	assert.Equal(t, `{"type":"tool_execution_start","toolCallId":"t","toolName":"Bash","args":{"a":[1,2]}}`+"\n", buf.String())
}

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1e-7, 1.5e-9, 123456789, 1e21, 1e20, 3.14159e-5, 0.000001, 1e300} {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendFloat(nil, f)), "%v", f)
	}
}

// FuzzEscape checks the escaper against encoding/json, on its own and cut
// anywhere into two pieces escaped one after the other (as deltas are),
// which must give the same as long as the cut is not inside a character.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "<&>", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe", "€😀", "\b\f\n\r\t",
		// Longer than a word (nextSpecial tests eight bytes at a time),
		// with the special byte at each place in one.
		"0123456789abcdef\"", "01234567\\9abcdef", "0123456\n89abcdef", "012345678\x1f", "line 0000001: the quick brown fox\nline 0000002: jumps €\n",
		"0123456789ab\u2028", "0123456789abc\xff", " !#$%&'()*+,-./[]^_`{|}~\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x1f"} {
		f.Add(s, 1)
		f.Add(s, len(s)/2)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		want := strings.TrimSuffix(buf.String(), "\n")
		require.Equal(t, want, string(appendString(nil, s)))
		var e Encoder
		e.str(s)
		require.Equal(t, want, string(e.buf))
		raw := `"` + s + `"`
		require.Equal(t, len(appendJSONString(nil, raw)), unescapedLen(raw), "unescaped length of %q", raw)
		if cut < 0 || cut > len(s) || cut < len(s) && !isRuneStart(s, cut) {
			return
		}
		got := `"` + string(appendEscaped(appendEscaped(nil, s[:cut]), s[cut:])) + `"`
		require.Equal(t, want, got, fmt.Sprintf("cut at %d", cut))
		// Written from the offsets of a prefix's escapes, found in two
		// pieces, as a streamed block is.
		if cut == 0 {
			return
		}
		c := Content{escOf: s[:cut], escAt: appendEscapes(appendEscapes(nil, s[:cut/2], 0), s[cut/2:cut], cut/2)}
		if !isRuneStart(s, cut/2) {
			c.escAt = appendEscapes(nil, s[:cut], 0)
		}
		e = Encoder{}
		e.text(s, &c)
		require.Equal(t, want, string(e.buf), "from offsets, cut at %d", cut)
	})
}

// isRuneStart reports whether s[i] begins a character, or an invalid byte
// that stands alone.
func isRuneStart(s string, i int) bool {
	return strings.ToValidUTF8(s[:i], "") == s[:i] || s[i] < 0x80 || s[i] >= 0xC0
}

// TestEncoderEventsNotRecorded compares events the recordings lack.
func TestEncoderEventsNotRecorded(t *testing.T) {
	isErr := true
	for _, e := range []Event{
		{Type: EventCompactionStart, Reason: "threshold"},
		{Type: EventCompactionEnd, Aborted: true, ErrorMessage: "aborted <now>"},
		{Type: EventCompactionEnd, Compaction: &Compaction{Summary: "sum \u2028 & more", FirstKeptEntryID: "u1", TokensBefore: 9}},
		{Type: EventCompactionEnd, Compaction: &Compaction{Summary: "s", Details: &CompactionDetails{Trigger: "auto", TokensAfter: 3}}},
		{Type: EventAutoRetryEnd, Retry: &Retry{Attempt: 2, FinalError: "529 overloaded"}},
		{Type: EventToolExecutionEnd, ToolCallID: "t", ToolName: "Read", Result: &ToolResult{Details: json.RawMessage(` {"a": 1} `)}},
		{Type: EventToolExecutionEnd, ToolCallID: "u", ToolName: "subagent", Result: &ToolResult{Usage: json.RawMessage(`{"input": 3, "cost": {"total": 0.5}}`)}},
		{Type: EventMessageEnd, Message: Message{Role: RoleToolResult, ToolCallID: "u", ToolName: "subagent", ToolUsage: json.RawMessage(`{"input":3}`), DurationMs: new(int64(4))}},
		{Type: EventMessageEnd, Message: Message{Role: RoleToolResult, Content: []Content{{Type: "image", Data: "AAAA", MimeType: "image/png"}}, IsError: &isErr, Details: json.RawMessage(`{"x":[1, 2]}`)}},
		{Type: EventMessageEnd, Message: Message{Role: RoleAssistant, Usage: Usage{Cost: Cost{Input: 1e-7, Total: 0.25}}, ErrorMessage: "boom"}},
		{Type: EventMessageStart, Message: Message{Role: RoleCustom, CustomType: "note", Content: []Content{TextContent("a <b>")}, Timestamp: 7}},
		{Type: EventMessageEnd, Message: Message{Role: RoleCustom, CustomType: "note", Display: new(false), Details: json.RawMessage(`{"k": [1]}`), Timestamp: 7}},
		{Type: EventMessageEnd, Message: Message{Role: RoleCustom, CustomType: "s", Content: []Content{TextContent("as <given>")}, ContentString: true, Timestamp: 8}},
	} {
		assert.Equal(t, string(refFrame(t, e)), string(encFrame(t, e)), "%s", e.Type)
	}
}

// TestNextSpecial checks the eight-bytes-at-a-time search against a byte by
// byte one: every byte value at every place of a word and its tail, alone
// and after another special byte later in the word (a borrow runs up).
func TestNextSpecial(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	for n := 1; n <= 19; n++ {
		for p := range n {
			for v := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[p] = byte(v)
				want := n
				if special(byte(v)) {
					want = p
				}
				require.Equal(t, want, nextSpecial(string(b), 0), "%q", b)
				if p+1 < n {
					b[n-1] = 0x1f
					if !special(byte(v)) {
						want = n - 1
					}
					require.Equal(t, want, nextSpecial(string(b), 0), "%q", b)
				}
				require.Equal(t, want, nextSpecial(string(b), p), "%q from %d", b, p)
			}
		}
	}
}

// TestAppendMessageMatchesMarshalJSON: AppendMessage writes every message
// of the recordings (as streamed, with its escape offsets, and as stored)
// byte for byte as Message.MarshalJSON does, after what dst held.
func TestAppendMessageMatchesMarshalJSON(t *testing.T) {
	n := 0
	for _, rec := range recordings(t) {
		evs := translate(rec, rec.lines, finish)
		for i, e := range evs {
			if e.Message.Role == "" || len(evs) > 200 && e.Type != EventMessageEnd && i%97 != 0 {
				continue // the 2 MB reply: its ends and a sample
			}
			for _, m := range []Message{e.Message, e.Message.Stored()} {
				want, err := m.MarshalJSON()
				require.NoError(t, err)
				got, err := AppendMessage([]byte("x"), &m)
				require.NoError(t, err)
				require.Equal(t, "x"+string(want), string(got), "%s: %s", rec.name, e.Type)
				var w writesOf
				require.NoError(t, WriteMessage(&w, &m))
				require.Equal(t, string(want), w.b.String(), "%s: %s: WriteMessage", rec.name, e.Type)
				require.LessOrEqual(t, w.longest, 2*encoderBuffer, "%s: %s: WriteMessage writes in pieces", rec.name, e.Type)
				n++
			}
		}
	}
	require.Greater(t, n, 100)
}

// TestAppendMessageOneAllocation: a long message is encoded into one
// allocation sized by its text, the text copied once (a text where one
// character in eight is escaped, as code with quotes and tabs): what it
// allocates is about its result, where growing by append would allocate
// about five times it. Counted in bytes, which the race detector's runtime
// leaves as they are; bad tool arguments are an error.
func TestAppendMessageOneAllocation(t *testing.T) {
	m := Message{Role: RoleAssistant, Content: []Content{TextContent(strings.Repeat("if a == \"b\" { return c }\n", 100_000))}}
	out, err := AppendMessage(nil, &m)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 5
	for range runs {
		_, _ = AppendMessage(nil, &m)
	}
	runtime.ReadMemStats(&after)
	perRun := (after.TotalAlloc - before.TotalAlloc) / runs
	assert.GreaterOrEqual(t, perRun, uint64(len(out)))
	assert.Less(t, perRun, uint64(len(out))*5/4, "more than one buffer of the result's size")
	bad := Message{Role: RoleAssistant, Content: []Content{{Type: "toolCall", ID: "t", Name: "Bash", Arguments: json.RawMessage("{nope")}}}
	got, err := AppendMessage([]byte("x"), &bad)
	require.ErrorIs(t, err, ErrInvalidJSON)
	assert.Equal(t, "x", string(got))
	var w writesOf
	require.ErrorIs(t, WriteMessage(&w, &bad), ErrInvalidJSON)
	require.ErrorIs(t, CheckMessage(&bad), ErrInvalidJSON)
	require.NoError(t, CheckMessage(&m))
	assert.Zero(t, w.b.Len(), "nothing written")
}

// writesOf keeps what is written to it and the longest single write.
type writesOf struct {
	b       bytes.Buffer
	longest int
}

func (w *writesOf) Write(p []byte) (int, error) {
	w.longest = max(w.longest, len(p))
	return w.b.Write(p)
}
