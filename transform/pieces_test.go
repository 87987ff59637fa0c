package transform

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// inPieces feeds line to tr cut at the given offsets (ascending), as a
// transport hands a long line over, and appends the line's events.
func inPieces(tr *Translator, line []byte, cuts ...int) []Event {
	from := 0
	for _, c := range cuts {
		tr.Piece(line[from:c])
		from = c
	}
	// The pieces are only read during the call: overwrite them after.
	last := bytes.Clone(line[from:])
	l := tr.LastPiece(last)
	clear(last)
	return tr.Append(nil, l)
}

// shortEvents encodes events with their long strings abbreviated (the
// 2 MB reply, whole in every partial message, is too much to compare).
func shortEvents(t testing.TB, evs []Event) []byte {
	for i := range evs {
		evs[i] = abbreviate(evs[i])
	}
	return encode(t, evs)
}

// TestPiecesTranslateAsWholeLines feeds every line of every recording in
// pieces of several sizes: the events must be those of whole lines, for
// the recorded 2 MB reply and its result among them.
func TestPiecesTranslateAsWholeLines(t *testing.T) {
	for _, rec := range recordings(t) {
		for _, names := range []ToolNames{toolNamesClaude, toolNamesPi} {
			want := shortEvents(t, translateAs(rec, rec.lines, finish, names))
			for _, size := range []int{1, 7, 4096, 16 << 10} {
				got := shortEvents(t, translateFed(rec, rec.lines, finish, names, func(tr *Translator, l []byte) []Event {
					var cuts []int
					step := size
					if len(l) > 64<<10 && size < 4096 {
						// A long line (the 2 MB reply's) in pieces of a
						// few bytes is millions of calls: the large
						// sizes cover it; here an odd size that cuts
						// inside escapes and keys.
						step = 4093
					}
					for c := step; c < len(l); c += step {
						cuts = append(cuts, c)
					}
					return inPieces(tr, l, cuts...)
				}))
				require.True(t, bytes.Equal(want, got), "%s (%s), pieces of %d bytes: events differ", rec.name, names, size)
			}
		}
	}
}

// TestPiecesLeaveOutTheReply checks what the recorded 2 MB reply's lines
// become: the assistant line without its text (the stream carried it), the
// result without its result (no error).
func TestPiecesLeaveOutTheReply(t *testing.T) {
	rec := recordingNamed(t, "huge-reply")
	now := clock()
	tr := NewTranslator(now)
	tr.Start(UserMessage([]Content{TextContent(rec.prompt)}, now()))
	var sizes []int
	for _, l := range rec.lines {
		if len(l) < 1<<20 {
			tr.Line(l)
			continue
		}
		var cuts []int
		for c := 16 << 10; c < len(l); c += 16 << 10 {
			cuts = append(cuts, c)
		}
		from := 0
		for _, c := range cuts {
			tr.Piece(l[from:c])
			from = c
		}
		line := tr.LastPiece(l[from:])
		sizes = append(sizes, len(line))
		tr.Append(nil, line)
	}
	require.Len(t, sizes, 2, "the assistant and result lines")
	for _, n := range sizes {
		require.Less(t, n, 16<<10, "a line read in pieces keeps the reply")
	}
}

// FuzzPieces cuts a line at every position and feeds it in two pieces
// after a recording's first lines (a message streaming, a tool running):
// the events, of that line and of the recording's lines after it, must be
// those of the whole line.
func FuzzPieces(f *testing.F) {
	recs := recordings(f)
	byName := map[string]recording{}
	seeded := map[string]bool{} // one line of each kind in all: each seed is cut at every position
	for _, rec := range recs {
		byName[rec.name] = rec
		for at, l := range rec.lines {
			kind := string(l[:min(len(l), 20)])
			if rec.steer == "" && at < 64 && len(l) < 1<<10 && !seeded[kind] && (bytes.HasPrefix(l, []byte(`{"type":"assistant"`)) || bytes.HasPrefix(l, []byte(`{"type":"user"`)) || bytes.Contains(l, []byte(`"type":"result"`))) {
				seeded[kind] = true
				f.Add(rec.name, uint16(at), l)
			}
		}
	}
	f.Add("text", uint16(0), []byte(`{"type":"result","is_error":false,"result":"a\u00e9\ud83d\ude00\\\"\n"}`))
	f.Fuzz(func(t *testing.T, name string, at uint16, line []byte) {
		rec, ok := byName[name]
		if !ok || rec.steer != "" || len(line) > 1<<10 || at >= 64 {
			return
		}
		at = min(at, uint16(len(rec.lines)))
		// The lines before it, and a few after (what it left in the
		// translator shows in them).
		lines := append(append(append([][]byte{}, rec.lines[:at]...), line), rec.lines[at:min(len(rec.lines), int(at)+8)]...)
		want := encode(t, translateAs(rec, lines, finish, toolNamesPi))
		for cut := 0; cut <= len(line); cut++ {
			n := 0
			got := encode(t, translateFed(rec, lines, finish, toolNamesPi, func(tr *Translator, l []byte) []Event {
				n++
				if n != int(at)+1 {
					return tr.Line(l)
				}
				return inPieces(tr, l, cut)
			}))
			require.True(t, bytes.Equal(want, got), fmt.Sprintf("cut at %d: events differ\nwant %s\ngot  %s", cut, want, got))
		}
	})
}
