package transform

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// A newer CLI prints line kinds, subtypes and fields this translator does
// not know. These tests take every recording, add such lines and fields
// to it, and require the events the recording gives as it is: the unknown
// is ignored (the bridge logs lines that made no event at debug) and never
// ends or breaks a run. One known difference is allowed, and said where:
// the run's cost.

// runCost is the run's cost (cost.total, on its last assistant message).
var runCost = regexp.MustCompile(`"total":[0-9.e+-]+`)

// unknownLines are lines of kinds a future CLI might print; %s is the
// recording's session id.
var unknownLines = []string{
	`{"type":"future_kind","session_id":"%s","uuid":"f0000000-0000-4000-8000-000000000001","payload":{"nested":[1,{"x":"y"}],"s":"text"}}`,
	`{"type":"system","subtype":"future_subtype","session_id":"%s","data":{"a":1}}`,
	`{"type":"stream_event","event":{"type":"future_event","index":0,"data":{"a":[1,2]}},"session_id":"%s","parent_tool_use_id":null,"uuid":"f0000000-0000-4000-8000-000000000002"}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"future_delta","data":"x"}},"session_id":"%s","parent_tool_use_id":null,"uuid":"f0000000-0000-4000-8000-000000000003"}`,
	`{"type":"command_lifecycle","command_uuid":"f0000000-0000-4000-8000-000000000004","state":"future_state","session_id":"%s"}`,
	`{"type":"future_limit_event","rate_limit_info":{"status":"rejected"},"session_id":"%s"}`,
	`{"type":"future_kind_without_session"}`,
	`[1,2,3]`,
	`"a string"`,
	`{}`,
}

func sessionOf(rec recording) string {
	for _, l := range rec.lines {
		if sid := gjson.GetBytes(l, "session_id").String(); sid != "" {
			return sid
		}
	}
	return ""
}

// goldenOf is what the golden test compares: the events, abbreviated and
// encoded, one a line.
func goldenOf(t *testing.T, rec recording, lines [][]byte) []string {
	t.Helper()
	evs := translate(rec, lines, finish)
	checkGrammar(t, evs)
	for i := range evs {
		evs[i] = abbreviate(evs[i])
	}
	return lineStrings(encode(t, evs))
}

func lineStrings(b []byte) []string {
	var out []string
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		out = append(out, string(l))
	}
	return out
}

func requireSameEvents(t *testing.T, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("event %d differs (%d events, %d without the unknown):\nwithout %.600s\nwith    %.600s", i+1, len(got), len(want), w, g)
		}
	}
}

func TestUnknownLinesAreIgnored(t *testing.T) {
	for _, rec := range recordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			want := goldenOf(t, rec, rec.lines)
			sid := sessionOf(rec)
			// Every unknown line after each known one (every tenth, in a
			// long recording), and all of them first.
			step := max(1, len(rec.lines)/100)
			var lines [][]byte
			for _, u := range unknownLines {
				lines = append(lines, fmt.Appendf(nil, u, sid))
			}
			for i, l := range rec.lines {
				lines = append(lines, l)
				if i%step == 0 {
					for _, u := range unknownLines {
						lines = append(lines, fmt.Appendf(nil, u, sid))
					}
				}
			}
			// An unknown line between the run's last assistant message and
			// its result ends that message before the result, so without
			// the cost the result brings: all else is the same.
			got := goldenOf(t, rec, lines)
			for i := range got {
				got[i] = runCost.ReplaceAllString(got[i], `"total":COST`)
			}
			for i := range want {
				want[i] = runCost.ReplaceAllString(want[i], `"total":COST`)
			}
			requireSameEvents(t, want, got)
		})
	}
}

// withUnknownFields adds unknown fields to a line: at the end of its
// object and, in a stream_event, of its API event, and in the message of
// an assistant or user line.
func withUnknownFields(l []byte) []byte {
	if !gjson.ValidBytes(l) || len(l) < 2 || l[len(l)-1] != '}' {
		return l
	}
	const extra = `"future_field":{"nested":[1,"two",{"three":3}],"flag":true}`
	out := append(bytes.Clone(l[:len(l)-1]), ","+extra+"}"...)
	for _, key := range []string{`"event":{`, `"message":{`} {
		if i := bytes.Index(out, []byte(key)); i >= 0 && gjson.GetBytes(out, key[1:len(key)-3]).IsObject() {
			j := i + len(key)
			out = append(out[:j:j], append([]byte(extra+","), out[j:]...)...)
		}
	}
	return out
}

func TestUnknownFieldsAreIgnored(t *testing.T) {
	for _, rec := range recordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			want := goldenOf(t, rec, rec.lines)
			lines := make([][]byte, len(rec.lines))
			changed := 0
			for i, l := range rec.lines {
				lines[i] = withUnknownFields(l)
				require.True(t, gjson.ValidBytes(lines[i]), "%s", lines[i])
				if !bytes.Equal(lines[i], l) {
					changed++
				}
			}
			require.Positive(t, changed)
			requireSameEvents(t, want, goldenOf(t, rec, lines))
		})
	}
}
