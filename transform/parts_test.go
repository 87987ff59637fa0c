package transform

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// partsText is a text of a little over three parts, with characters of
// every width and every kind of escape, so that parts end next to each:
// the cuts below fall at every offset of the pattern in turn.
func partsText() string {
	unit := "plain words, then é and € and 😀 and \"quotes\" \\ and\n\t\x01\u2028 end. "
	return strings.Repeat(unit, (3*partSize+5000)/len(unit))
}

// streamLines are the CLI's lines streaming text in deltas of step raw
// bytes (which cut characters, as the CLI's raw bytes may), the message's
// complete line with complete, its end, and the result.
func streamLines(text string, step int, complete string) [][]byte {
	lines := [][]byte{
		[]byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"x","usage":{}}}}`),
		[]byte(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`),
	}
	for i := 0; i < len(text); i += step {
		d := text[i:min(i+step, len(text))]
		lines = append(lines, append(appendRawString([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`), d), `"}}}`...))
	}
	full, _ := json.Marshal(complete)
	return append(lines, // in the CLI's order (testdata/cli/huge-reply.jsonl)
		[]byte(`{"type":"assistant","message":{"id":"m1","model":"x","role":"assistant","content":[{"type":"text","text":`+string(full)+`}],"usage":{}}}`),
		[]byte(`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`),
		[]byte(`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}}`),
		[]byte(`{"type":"stream_event","event":{"type":"message_stop"}}`),
		[]byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.5,"usage":{}}`),
	)
}

// TestLongTextInParts: a streamed text past partSize is kept in parts,
// never copied into one array, and every frame carries it as if whole:
// the encoder's frames are encoding/json's of the joined text, the
// partial messages and text_end are the deltas so far, and the complete
// line, whole or in pieces, is matched against the parts (no delta when
// it says what was streamed; the rest when it says more).
func TestLongTextInParts(t *testing.T) {
	text := partsText()
	for _, tc := range []struct {
		name     string
		step     int
		complete string // the complete line's text
		pieces   bool   // the complete line read in pieces
	}{
		{"deltas of 997", 997, text, false},
		{"deltas of 4093, line in pieces", 4093, text, true},
		{"the line says more", 1500, text + "and more", true},
		{"the whole line says more", 1500, text + "and more", false},
		{"one delta", len(text), text, false},
		// Not the streamed text (a character of the second part changed):
		// the line in pieces is written back whole, and the stream stands.
		{"the line says otherwise", 2000, text[:partSize+1000] + "X" + text[partSize+1001:], true},
	} {
		want := tc.complete
		if !strings.HasPrefix(tc.complete, text) {
			want = text
		}
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTranslator(clock())
			tr.Start(UserMessage(nil, 1))
			var evs []Event
			for _, l := range streamLines(text, tc.step, tc.complete) {
				if tc.pieces && strings.HasPrefix(string(l), `{"type":"assistant"`) {
					for i := 0; i < len(l)-4096; i += 4096 {
						tr.Piece(l[i : i+4096])
					}
					l = tr.LastPiece(l[len(l)-len(l)%4096:])
					if want != tc.complete { // written back as it was, the parts and the rest
						var v struct {
							Message struct{ Content []struct{ Text string } }
						}
						require.NoError(t, json.Unmarshal(l, &v))
						require.Equal(t, tc.complete, v.Message.Content[0].Text, "the line's text written back")
					}
				}
				evs = append(evs, tr.Line(l)...)
			}
			var deltas strings.Builder
			var end, textEnd *Event
			for i := range evs {
				e := &evs[i]
				switch {
				case e.Type == EventMessageUpdate && e.Update.Type == TextDelta:
					deltas.WriteString(e.Update.Delta)
					if i%97 == 0 || i == len(evs)-1 {
						require.True(t, ropeIs(e.Message.Content[0].textOf(), deltas.String()), "event %d: partial = deltas so far", i)
						require.Equal(t, string(refFrame(t, *e)), string(encFrame(t, *e)), "event %d", i)
					}
				case e.Type == EventMessageUpdate && e.Update.Type == TextEnd:
					textEnd = e
				case e.Type == EventMessageEnd && e.Message.Role == RoleAssistant:
					end = e
				}
			}
			assert.Equal(t, want, deltas.String(), "the deltas are the text")
			require.NotNil(t, textEnd)
			require.NotNil(t, end)
			c := &end.Message.Content[0]
			if tc.step < partSize {
				assert.GreaterOrEqual(t, len(c.parts), 2, "kept in parts")
				for _, p := range c.parts {
					assert.LessOrEqual(t, len(p.s), partSize+tc.step, "a part is not grown past its array")
				}
			}
			assert.Equal(t, want, c.Whole())
			assert.Equal(t, len(want), c.TextLen())
			for _, e := range []*Event{textEnd, end} {
				frame := encFrame(t, *e)
				assert.Equal(t, string(refFrame(t, *e)), string(frame), e.Type)
				var v struct {
					Message struct {
						Content []struct{ Text string }
					}
					AssistantMessageEvent struct{ Content string }
				}
				require.NoError(t, json.Unmarshal(frame, &v))
				assert.Equal(t, want, v.Message.Content[0].Text, e.Type)
			}
			assert.Equal(t, want, rope{parts: textEnd.Update.parts, last: textEnd.Update.Content}.String(), "text_end")
			msgs := tr.Messages()
			last := msgs[len(msgs)-1]
			assert.Equal(t, want, last.Text(), "Message.Text joins the parts")
			b, err := AppendMessage(nil, &last)
			require.NoError(t, err)
			ref, err := json.Marshal(&last)
			require.NoError(t, err)
			assert.Equal(t, string(ref), string(b), "the session's message, its escapes dropped")
		})
	}
}

// TestRopeReads: the rope's reads at offsets across its parts.
func TestRopeReads(t *testing.T) {
	r := rope{parts: []textPart{{s: "abc"}, {s: "défg"}, {s: "h"}}, last: "ij"}
	whole := "abcdéfghij"
	for _, ix := range []rope{r, r.indexed()} {
		assert.Equal(t, len(whole), ix.Len())
		assert.Equal(t, whole, ix.String())
		for off := 0; off <= len(whole); off++ {
			for n := 0; off+n <= len(whole); n++ {
				assert.True(t, ix.equalAt(off, []byte(whole[off:off+n])), "%d+%d", off, n)
				if n > 0 {
					other := []byte(whole[off : off+n])
					other[n-1] ^= 1
					assert.False(t, ix.equalAt(off, other), "%d+%d differs", off, n)
				}
			}
			assert.Equal(t, string(appendRawString(nil, whole[:off])), string(ix.appendRaw(nil, off)))
		}
		assert.True(t, ix.prefixOf(whole+"k"))
		assert.False(t, ix.prefixOf("abcdéfghiJ"))
		assert.False(t, ix.prefixOf("abc"))
	}
}
