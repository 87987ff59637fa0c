package rpcframe

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"unicode/utf8"
)

// The errors of [Reassembler.Push]. Their texts are those of omp's
// RpcFrameDecoder where it has the case.
var (
	// ErrNotObject: a frame (whole, or reassembled) is JSON but not an object.
	ErrNotObject = errors.New("rpc frame must be an object")
	// ErrInvalidJSON: a line, or a reassembled frame, is not JSON.
	ErrInvalidJSON = errors.New("rpc frame is not valid JSON")
	// ErrInvalidUTF8: a reassembled frame's bytes are not UTF-8.
	ErrInvalidUTF8 = errors.New("rpc frame is not valid UTF-8")
	// ErrInterrupted: a frame other than rpc_chunk came while a chunked
	// frame was incomplete. Frames are never interleaved with chunks.
	ErrInterrupted = errors.New("rpc chunk sequence interrupted")
	// ErrInvalidMetadata: chunkId not a string of 1 to [MaxChunkIDLength]
	// code units; index, count or byteLength not a safe integer; count
	// outside 2…[MaxChunks]; index not below count; byteLength outside
	// [MaxFrameBytes]…[MaxReassembledBytes].
	ErrInvalidMetadata = errors.New("invalid rpc chunk metadata")
	// ErrInvalidData: data not a non-empty string of canonical standard
	// base64 (padded, no whitespace).
	ErrInvalidData = errors.New("invalid rpc chunk data")
	// ErrPayloadTooLarge: one chunk carries more than [ChunkPayloadBytes].
	ErrPayloadTooLarge = errors.New("rpc chunk payload exceeds the transport limit")
	// ErrBadStart: a sequence begins with an index other than 0.
	ErrBadStart = errors.New("rpc chunk sequence must start at index 0")
	// ErrMismatch: a chunk of another chunkId, count or byteLength than the
	// sequence's, or out of order (not the next index).
	ErrMismatch = errors.New("rpc chunk sequence mismatch")
	// ErrExceedsDeclared: the chunks so far carry more than byteLength.
	ErrExceedsDeclared = errors.New("rpc chunk sequence exceeds declared length")
	// ErrLengthMismatch: the last chunk came and the bytes do not add up to
	// byteLength.
	ErrLengthMismatch = errors.New("rpc chunk sequence length mismatch")
)

// Reassembler puts chunked frames back together, one physical line at a
// time, with omp's RpcFrameDecoder's rules: a chunk sequence starts at index
// 0, goes on in order under one chunkId, count and byteLength, and nothing
// else comes until its last chunk; each chunk's metadata, data and size are
// checked as it comes, and the whole frame must be UTF-8 JSON of an object.
// At most [MaxReassembledBytes] are held.
//
// Its zero value is ready. It is not safe for concurrent use: one per input
// stream.
//
// After an error the Reassembler drops any incomplete sequence and takes the
// next line afresh. (omp's decoder keeps its state, but its client never
// reads on after an error: it ends the connection.)
type Reassembler struct {
	p *pending
}

type pending struct {
	id         string
	count      int
	byteLength int
	next       int
	buf        []byte
}

// Pending reports whether a chunk sequence is incomplete.
func (r *Reassembler) Pending() bool { return r.p != nil }

// Push takes one line as read (surrounding whitespace, its newline among
// them, is ignored) and returns the frame it completes: the line itself when
// it is a whole frame (not an rpc_chunk), the reassembled JSON after the last
// chunk of a sequence, and nil (with a nil error) after any other chunk. A
// line of only whitespace returns nil, nil. The bytes returned may share
// memory with line.
//
// A reassembled frame is returned as its bytes were sent, less a leading
// byte-order mark (which omp's decoder drops too); it may itself have type
// rpc_chunk, and is then not reassembled again.
func (r *Reassembler) Push(line []byte) ([]byte, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	frame, err := r.push(line)
	if err != nil {
		r.p = nil
	}
	return frame, err
}

func (r *Reassembler) push(line []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if line[0] != '{' {
		if !json.Valid(line) {
			return nil, ErrInvalidJSON
		}
		if r.p != nil {
			return nil, ErrInterrupted
		}
		return nil, ErrNotObject
	}
	if err := json.Unmarshal(line, &fields); err != nil {
		return nil, ErrInvalidJSON
	}
	if !isChunk(fields) {
		if r.p != nil {
			return nil, ErrInterrupted
		}
		return line, nil
	}

	id, ok := jsonString(fields["chunkId"])
	index, ok1 := safeInteger(fields["index"])
	count, ok2 := safeInteger(fields["count"])
	byteLength, ok3 := safeInteger(fields["byteLength"])
	if !ok || !ok1 || !ok2 || !ok3 || id == "" || utf16Len(id) > MaxChunkIDLength ||
		index < 0 || count < 2 || count > MaxChunks || index >= count ||
		byteLength < MaxFrameBytes || byteLength > MaxReassembledBytes {
		return nil, ErrInvalidMetadata
	}
	data, ok := jsonString(fields["data"])
	if !ok || data == "" {
		return nil, ErrInvalidData
	}
	part, err := base64.StdEncoding.Strict().DecodeString(data)
	// Go's decoder skips newlines; omp's accepts only the canonical text.
	if err != nil || base64.StdEncoding.EncodeToString(part) != data {
		return nil, ErrInvalidData
	}
	if len(part) > ChunkPayloadBytes {
		return nil, ErrPayloadTooLarge
	}

	if r.p == nil {
		if index != 0 {
			return nil, ErrBadStart
		}
		r.p = &pending{id: id, count: int(count), byteLength: int(byteLength), buf: make([]byte, 0, int(byteLength))}
	}
	p := r.p
	if p.id != id || p.count != int(count) || p.byteLength != int(byteLength) || p.next != int(index) {
		return nil, ErrMismatch
	}
	if len(p.buf)+len(part) > p.byteLength {
		return nil, ErrExceedsDeclared
	}
	p.buf = append(p.buf, part...)
	p.next++
	if p.next < p.count {
		return nil, nil
	}
	if len(p.buf) != p.byteLength {
		return nil, ErrLengthMismatch
	}
	r.p = nil
	frame := p.buf
	if !utf8.Valid(frame) {
		return nil, ErrInvalidUTF8
	}
	// TextDecoder("utf-8") drops a leading byte-order mark.
	frame = bytes.TrimPrefix(frame, []byte("\uFEFF"))
	if !json.Valid(frame) {
		return nil, ErrInvalidJSON
	}
	if t := bytes.TrimLeft(frame, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	return frame, nil
}

// isChunk reports whether a frame's type is rpc_chunk (a JSON string equal
// to it, escapes decoded).
func isChunk(fields map[string]json.RawMessage) bool {
	t, ok := jsonString(fields["type"])
	return ok && t == ChunkType
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// safeInteger decodes raw when it is a JSON number whose value, as
// JavaScript reads it, passes Number.isSafeInteger (2.0 and 2e0 do).
func safeInteger(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// utf16Len is the length of s in UTF-16 code units, as JavaScript counts.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
