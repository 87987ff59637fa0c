package rpcframe

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// frameOf returns the JSON of an object {"type":"message_update","text":…}
// of exactly n bytes, its text made of fill repeated.
func frameOf(t testing.TB, n int, fill string) []byte {
	t.Helper()
	const head, tail = `{"type":"message_update","text":"`, `"}`
	body := n - len(head) - len(tail)
	if body < 0 {
		t.Fatalf("frameOf(%d): too short", n)
	}
	text := strings.Repeat(fill, body/len(fill)+1)[:body]
	// fill is plain ASCII without escapes, so the text is its own JSON.
	b := []byte(head + text + tail)
	if len(b) != n || !json.Valid(b) {
		t.Fatalf("frameOf(%d): built %d bytes", n, len(b))
	}
	return b
}

// chunk is one rpc_chunk line as JSON, for hand-made sequences.
func chunk(id any, index, count, byteLength any, data any) []byte {
	b, err := json.Marshal(map[string]any{"type": "rpc_chunk", "chunkId": id, "index": index, "count": count, "byteLength": byteLength, "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func reassembleAll(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	var r Reassembler
	var got []byte
	for i, l := range lines {
		f, err := r.Push(l)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if f != nil {
			if got != nil {
				t.Fatalf("line %d: a second frame", i)
			}
			got = f
		}
	}
	if r.Pending() {
		t.Fatal("a sequence is still pending")
	}
	return got
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name   string
		size   int // bytes of the frame's JSON
		chunks int // 0: one whole line
	}{
		{"small", 40, 0},
		{"one byte under the limit with its newline", MaxFrameBytes - 1, 0},
		{"exactly the limit with its newline", MaxFrameBytes, 4},
		{"2 MB", 2_000_000, 8},
		{"an exact multiple of the chunk size", 8 * ChunkPayloadBytes, 8},
		{"one byte over a multiple", 8*ChunkPayloadBytes + 1, 9},
		{"the reassembly limit", MaxReassembledBytes, MaxChunks},
	}
	var c Chunker
	seq := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := frameOf(t, tt.size, "abcdefghij")
			lines, err := c.Split(frame)
			if err != nil {
				t.Fatal(err)
			}
			if tt.chunks == 0 {
				if len(lines) != 1 || !bytes.Equal(lines[0], append(frame, '\n')) {
					t.Fatalf("want the frame as one line, got %d lines", len(lines))
				}
				return
			}
			seq++
			if len(lines) != tt.chunks {
				t.Fatalf("got %d chunks, want %d", len(lines), tt.chunks)
			}
			for i, l := range lines {
				if len(l) > MaxFrameBytes || l[len(l)-1] != '\n' || bytes.Count(l, []byte("\n")) != 1 {
					t.Fatalf("chunk %d: %d bytes, or not one line", i, len(l))
				}
				var ch struct {
					Type       string `json:"type"`
					ChunkID    string `json:"chunkId"`
					Index      int    `json:"index"`
					Count      int    `json:"count"`
					ByteLength int    `json:"byteLength"`
					Data       string `json:"data"`
				}
				if err := json.Unmarshal(l, &ch); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
				want := fmt.Sprintf("rpc-%d", seq)
				if ch.Type != ChunkType || ch.ChunkID != want || ch.Index != i || ch.Count != tt.chunks || ch.ByteLength != tt.size {
					t.Fatalf("chunk %d: %+v", i, ch)
				}
				if i == 0 && !bytes.HasPrefix(l, []byte(`{"type":"rpc_chunk","chunkId":"`+want+`","index":0,"count":`)) {
					t.Fatalf("chunk 0's keys are not in omp's order: %.80s", l)
				}
			}
			if got := reassembleAll(t, lines); !bytes.Equal(got, frame) {
				t.Fatalf("reassembled %d bytes, not the frame's %d", len(got), len(frame))
			}
		})
	}
}

func TestSplitKeepsALinesNewline(t *testing.T) {
	var c Chunker
	line := []byte("{\"type\":\"x\"}\n")
	lines, err := c.Split(line)
	if err != nil || len(lines) != 1 || &lines[0][0] != &line[0] {
		t.Fatalf("want line itself back, got %q, %v", lines, err)
	}
	// The newline does not count towards the chunking threshold.
	frame := append(frameOf(t, MaxFrameBytes-1, "x"), '\n')
	if lines, _ := c.Split(frame); len(lines) != 1 {
		t.Fatalf("a %d-byte frame with its newline was cut into %d", len(frame)-1, len(lines))
	}
}

func TestSplitTooLarge(t *testing.T) {
	var c Chunker
	frame := frameOf(t, MaxReassembledBytes+1, "x")
	lines, err := c.Split(frame)
	if !errors.Is(err, ErrFrameTooLarge) || lines != nil {
		t.Fatalf("got %d lines, %v; want ErrFrameTooLarge", len(lines), err)
	}
	// No chunk id was used up.
	lines, _ = c.Split(frameOf(t, 2*MaxFrameBytes, "x"))
	if !bytes.Contains(lines[0], []byte(`"chunkId":"rpc-1"`)) {
		t.Fatalf("first chunked frame after a refusal: %.60s", lines[0])
	}
}

func TestReassembler(t *testing.T) {
	frame := frameOf(t, MaxFrameBytes+100, "0123456789")
	p0, p1, p2, p3, p4 := frame[:ChunkPayloadBytes], frame[ChunkPayloadBytes:2*ChunkPayloadBytes], frame[2*ChunkPayloadBytes:3*ChunkPayloadBytes], frame[3*ChunkPayloadBytes:4*ChunkPayloadBytes], frame[4*ChunkPayloadBytes:]
	n := len(frame)
	good := func(i int, p []byte) []byte { return chunk("c", i, 5, n, b64(p)) }
	whole := []byte(`{"type":"get_state","id":"1"}`)
	bigPart := bytes.Repeat([]byte("a"), ChunkPayloadBytes+1)

	tests := []struct {
		name  string
		lines [][]byte
		want  [][]byte // frames returned, in order
		err   error    // of the last line
	}{
		{"a whole frame passes through", [][]byte{whole}, [][]byte{whole}, nil},
		{"whitespace around a line is dropped", [][]byte{[]byte("  " + string(whole) + "\r\n")}, [][]byte{whole}, nil},
		{"an empty line is nothing", [][]byte{[]byte(" \n")}, nil, nil},
		{"a sequence", [][]byte{good(0, p0), good(1, p1), good(2, p2), good(3, p3), good(4, p4), whole}, [][]byte{frame, whole}, nil},
		{"not JSON", [][]byte{[]byte(`{"type":`)}, nil, ErrInvalidJSON},
		{"an array", [][]byte{[]byte(`[1]`)}, nil, ErrNotObject},
		{"a string", [][]byte{[]byte(`"x"`)}, nil, ErrNotObject},
		{"a frame inside a sequence", [][]byte{good(0, p0), whole}, nil, ErrInterrupted},
		{"an array inside a sequence", [][]byte{good(0, p0), []byte(`[]`)}, nil, ErrInterrupted},
		{"starts at index 1", [][]byte{good(1, p1)}, nil, ErrBadStart},
		{"skips an index", [][]byte{good(0, p0), good(2, p2)}, nil, ErrMismatch},
		{"repeats an index", [][]byte{good(0, p0), good(0, p0)}, nil, ErrMismatch},
		{"another chunkId", [][]byte{good(0, p0), chunk("d", 1, 5, n, b64(p1))}, nil, ErrMismatch},
		{"another count", [][]byte{good(0, p0), chunk("c", 1, 6, n, b64(p1))}, nil, ErrMismatch},
		{"another byteLength", [][]byte{good(0, p0), chunk("c", 1, 5, n+1, b64(p1))}, nil, ErrMismatch},
		{"interleaved sequences", [][]byte{good(0, p0), chunk("d", 0, 5, n, b64(p0))}, nil, ErrMismatch},
		{"more bytes than declared", [][]byte{chunk("c", 0, 5, MaxFrameBytes, b64(p0)), chunk("c", 1, 5, MaxFrameBytes, b64(p1)), chunk("c", 2, 5, MaxFrameBytes, b64(p2)), chunk("c", 3, 5, MaxFrameBytes, b64(p3)), chunk("c", 4, 5, MaxFrameBytes, b64(p4))}, nil, ErrExceedsDeclared},
		{"fewer bytes than declared", [][]byte{chunk("c", 0, 2, MaxFrameBytes, b64(p0)), chunk("c", 1, 2, MaxFrameBytes, b64(p1))}, nil, ErrLengthMismatch},
		{"a chunk over the payload limit", [][]byte{chunk("c", 0, 5, n, b64(bigPart))}, nil, ErrPayloadTooLarge},
		{"empty chunkId", [][]byte{chunk("", 0, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"chunkId of 129 units", [][]byte{chunk(strings.Repeat("x", 129), 0, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"chunkId of 128 units", [][]byte{chunk(strings.Repeat("x", 128), 0, 5, n, b64(p0))}, nil, nil},
		{"chunkId of 65 astral characters (130 units)", [][]byte{chunk(strings.Repeat("😀", 65), 0, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"chunkId not a string", [][]byte{chunk(7, 0, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"index a string", [][]byte{chunk("c", "0", 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"index fractional", [][]byte{chunk("c", 0.5, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"index 0.0 is 0", [][]byte{[]byte(`{"type":"rpc_chunk","chunkId":"c","index":0.0,"count":5,"byteLength":` + fmt.Sprint(n) + `,"data":"` + b64(p0) + `"}`)}, nil, nil},
		{"index negative", [][]byte{chunk("c", -1, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"index beyond count", [][]byte{chunk("c", 5, 5, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"count 1", [][]byte{chunk("c", 0, 1, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"count 257", [][]byte{chunk("c", 0, MaxChunks+1, n, b64(p0))}, nil, ErrInvalidMetadata},
		{"count beyond safe integers", [][]byte{[]byte(`{"type":"rpc_chunk","chunkId":"c","index":0,"count":1e300,"byteLength":` + fmt.Sprint(n) + `,"data":"` + b64(p0) + `"}`)}, nil, ErrInvalidMetadata},
		{"count missing", [][]byte{[]byte(`{"type":"rpc_chunk","chunkId":"c","index":0,"byteLength":` + fmt.Sprint(n) + `,"data":"` + b64(p0) + `"}`)}, nil, ErrInvalidMetadata},
		{"byteLength under 1 MiB", [][]byte{chunk("c", 0, 5, MaxFrameBytes-1, b64(p0))}, nil, ErrInvalidMetadata},
		{"byteLength over 64 MiB", [][]byte{chunk("c", 0, 5, MaxReassembledBytes+1, b64(p0))}, nil, ErrInvalidMetadata},
		{"data empty", [][]byte{chunk("c", 0, 5, n, "")}, nil, ErrInvalidData},
		{"data not a string", [][]byte{chunk("c", 0, 5, n, 12)}, nil, ErrInvalidData},
		{"data unpadded", [][]byte{chunk("c", 0, 5, n, "YWI")}, nil, ErrInvalidData},
		{"data URL-safe", [][]byte{chunk("c", 0, 5, n, "-_-_")}, nil, ErrInvalidData},
		{"data with a newline", [][]byte{chunk("c", 0, 5, n, "YWJj\nYWJj")}, nil, ErrInvalidData},
		{"data not canonical", [][]byte{chunk("c", 0, 5, n, "YWJ=")}, nil, ErrInvalidData},
		{"metadata is checked before the sequence", [][]byte{good(0, p0), chunk("c", 1, 1, n, b64(p1))}, nil, ErrInvalidMetadata},
		{"a TYPE key is not type", [][]byte{[]byte(`{"TYPE":"rpc_chunk","chunkId":5}`)}, [][]byte{[]byte(`{"TYPE":"rpc_chunk","chunkId":5}`)}, nil},
		{"an escaped type is rpc_chunk", [][]byte{[]byte(`{"type":"rpc\u005fchunk"}`)}, nil, ErrInvalidMetadata},
		{"the last type key counts", [][]byte{[]byte(`{"type":"rpc_chunk","type":"x"}`)}, [][]byte{[]byte(`{"type":"rpc_chunk","type":"x"}`)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Reassembler
			var got [][]byte
			var err error
			for i, l := range tt.lines {
				var f []byte
				f, err = r.Push(l)
				if err != nil && i < len(tt.lines)-1 {
					t.Fatalf("line %d: %v", i, err)
				}
				if f != nil {
					got = append(got, f)
				}
			}
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d frames, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Fatalf("frame %d: got %.80q, want %.80q", i, got[i], tt.want[i])
				}
			}
			if err != nil && r.Pending() {
				t.Fatal("a sequence is still pending after an error")
			}
		})
	}
}

// TestReassembledContent covers the checks on the frame a sequence carries.
func TestReassembledContent(t *testing.T) {
	var c Chunker
	pad := strings.Repeat("x", MaxFrameBytes)
	tests := []struct {
		name  string
		frame string
		err   error
	}{
		{"an object", `{"type":"prompt","message":"` + pad + `"}`, nil},
		{"an object after a byte-order mark", "\uFEFF" + `{"type":"prompt","message":"` + pad + `"}`, nil},
		{"an array", `["` + pad + `"]`, ErrNotObject},
		{"a string", `"` + pad + `"`, ErrNotObject},
		{"not JSON", `{"type":"prompt","message":"` + pad, ErrInvalidJSON},
		{"not UTF-8", `{"type":"prompt","message":"` + pad + "\xff" + `"}`, ErrInvalidUTF8},
		{"a chunk inside is not reassembled again", `{"type":"rpc_chunk","message":"` + pad + `"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, err := c.Split([]byte(tt.frame))
			if err != nil {
				t.Fatal(err)
			}
			var r Reassembler
			var got []byte
			for i, l := range lines {
				got, err = r.Push(l)
				if err != nil {
					if i != len(lines)-1 {
						t.Fatalf("chunk %d: %v", i, err)
					}
					break
				}
			}
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && !bytes.Equal(got, []byte(strings.TrimPrefix(tt.frame, "\uFEFF"))) {
				t.Fatalf("got %d bytes back, want the frame's %d", len(got), len(tt.frame))
			}
		})
	}
}

// TestReassemblerRecovers: after an error the next sequence starts afresh.
func TestReassemblerRecovers(t *testing.T) {
	var c Chunker
	frame := frameOf(t, 3*MaxFrameBytes, "q")
	lines, _ := c.Split(frame)
	var r Reassembler
	if _, err := r.Push(lines[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Push([]byte(`{"type":"abort"}`)); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
	if f, err := r.Push([]byte(`{"type":"abort"}`)); err != nil || string(f) != `{"type":"abort"}` {
		t.Fatalf("after the error: %q, %v", f, err)
	}
	if got := reassembleAll(t, lines); !bytes.Equal(got, frame) {
		t.Fatal("the sequence after the error did not reassemble")
	}
}

func TestOverflow(t *testing.T) {
	long := strings.Repeat("é", 1100) // 1100 UTF-16 units
	tests := []struct {
		name, frame, want string
	}{
		{"a response", `{"id":"r1","type":"response","command":"get_messages","success":true,"data":{}}`,
			`{"id":"r1","type":"response","command":"get_messages","success":false,"error":"RPC response exceeded the transport limit"}`},
		{"a response without id or command", `{"type":"response","id":5,"command":null}`,
			`{"type":"response","command":"unknown","success":false,"error":"RPC response exceeded the transport limit"}`},
		{"a response with a long id", `{"type":"response","id":"` + long + `","command":"x"}`,
			`{"id":"` + strings.Repeat("é", 944) + `\n…[156 chars elided for RPC frame]","type":"response","command":"x","success":false,"error":"RPC response exceeded the transport limit"}`},
		{"an agent_end", `{"type":"agent_end","messages":[1,2],"messageCount":2.0}`, `{"type":"agent_end","messages":[],"messageCount":2}`},
		{"an agent_end without a count", `{"type":"agent_end","messageCount":"7"}`, `{"type":"agent_end","messages":[],"messageCount":0}`},
		{"an agent_end with a huge count", `{"type":"agent_end","messageCount":1e400}`, `{"type":"agent_end","messages":[],"messageCount":null}`},
		{"another frame", `{"type":"message_end","message":{}}`, `{"type":"rpc_frame_error","originalType":"message_end","error":"RPC frame exceeded the transport limit"}`},
		{"a frame without a type", `{"message":{}}`, `{"type":"rpc_frame_error","error":"RPC frame exceeded the transport limit"}`},
		{"a type with quotes and controls", `{"type":"a\"b\u0001\n"}`, `{"type":"rpc_frame_error","originalType":"a\"b\u0001\n","error":"RPC frame exceeded the transport limit"}`},
		{"not an object", `[1,2]`, `{"type":"rpc_frame_error","error":"RPC frame exceeded the transport limit"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Overflow([]byte(tt.frame))
			if string(got) != tt.want+"\n" {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestJSNumber(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "-0": "0", "2.0": "2", "1e3": "1000", "123456789012345678901": "123456789012345680000",
		"1e21": "1e+21", "1.5e21": "1.5e+21", "0.000001": "0.000001", "1e-7": "1e-7", "-2.5e-7": "-2.5e-7",
		"0.1": "0.1", "12.5": "12.5", "-3": "-3",
	} {
		if got := string(appendJSNumber(nil, []byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
