package rpcframe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzReassembler feeds arbitrary lines to a Reassembler: it never panics,
// what it returns is always a JSON object, and an error never leaves a
// sequence pending.
func FuzzReassembler(f *testing.F) {
	n := MaxFrameBytes + 1
	f.Add([]byte(`{"type":"get_state"}`))
	f.Add([]byte(`[1]` + "\n" + `"x"` + "\n" + `{"type":`))
	f.Add([]byte(string(chunk("c", 0, 5, n, "YWJj")) + "\n" + `{"type":"abort"}`))
	f.Add([]byte(string(chunk("c", 0, 2, n, "YWJj")) + "\n" + string(chunk("c", 1, 2, n, "YWJj"))))
	f.Add([]byte(string(chunk("c", 1, 2, n, "YWJj")) + "\n" + string(chunk("d", 0, 2, n, "YWJj"))))
	f.Add([]byte(`{"type":"rpc_chunk","chunkId":"c","index":0.0,"count":2e0,"byteLength":1048577,"data":"YQ=="}`))
	f.Add([]byte(`{"type":"rpc\u005fchunk","chunkId":"\ud800","index":-0,"count":2,"byteLength":1048577,"data":"YQ=="}`))
	f.Fuzz(func(t *testing.T, input []byte) {
		var r Reassembler
		for _, line := range bytes.Split(input, []byte("\n")) {
			frame, err := r.Push(line)
			if err != nil {
				if frame != nil {
					t.Fatalf("a frame and an error (%v)", err)
				}
				if r.Pending() {
					t.Fatalf("pending after %v", err)
				}
				continue
			}
			if frame == nil {
				continue
			}
			var v map[string]json.RawMessage
			if json.Unmarshal(frame, &v) != nil || v == nil {
				t.Fatalf("returned %.100q, not a JSON object", frame)
			}
		}
	})
}

// FuzzSplitRoundTrip: whatever text a frame carries, Split and a
// Reassembler give it back unchanged, in lines no longer than the limit.
func FuzzSplitRoundTrip(f *testing.F) {
	f.Add("hello", 0)
	f.Add("é😀\u2028\"\\\n", 3)
	f.Add("\xff\xfe", 1000)
	f.Add("x", MaxFrameBytes)
	f.Fuzz(func(t *testing.T, text string, pad int) {
		if text == "" {
			text = " "
		}
		if pad < 0 {
			pad = -pad
		}
		pad %= 3 * MaxFrameBytes
		// Long enough to chunk, most of the time.
		s := strings.Repeat(text, (MaxFrameBytes+pad)/len(text)+1)
		frame, err := json.Marshal(map[string]string{"type": "message_update", "text": s})
		if err != nil {
			t.Skip()
		}
		var c Chunker
		lines, err := c.Split(frame)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			if len(l) > MaxFrameBytes && len(lines) > 1 {
				t.Fatalf("chunk %d has %d bytes", i, len(l))
			}
		}
		var r Reassembler
		var got []byte
		for i, l := range lines {
			f, err := r.Push(l)
			if err != nil {
				t.Fatalf("line %d of %d: %v", i, len(lines), err)
			}
			if f != nil {
				got = f
			}
		}
		if !bytes.Equal(got, frame) {
			t.Fatalf("got %d bytes back, want %d", len(got), len(frame))
		}
	})
}
