// Package rpcframe is the wire framing of omp's RPC protocol v2, exactly as
// omp 18.3.4's src/modes/rpc/rpc-frame.ts defines it: JSON lines, of which
// none may be longer than [MaxFrameBytes] with its newline; a frame that
// would be is cut into rpc_chunk frames,
//
//	{"type":"rpc_chunk","chunkId":"rpc-1","index":0,"count":8,"byteLength":2000123,"data":"<base64>"}
//
// each carrying at most [ChunkPayloadBytes] of the frame's UTF-8 JSON
// (without its newline), standard padded base64, index 0 to count-1 in order,
// with nothing else between them; byteLength is the whole frame's length and
// no frame is chunked beyond [MaxReassembledBytes].
//
// The writer's side is [Chunker]: one encoded frame in, the lines to write
// out. The reader's side is [Reassembler]: one line in, a whole frame out once
// its last chunk has come, with the checks of omp's RpcFrameDecoder (its
// error messages too). Chunking is for protocol v2 only, after the host's
// negotiate_protocol {protocolVersion:2} has been answered with success;
// before that (and for hosts that never negotiate, such as pi's) frames go
// out whole, whatever their size, and an rpc_chunk from the other side is an
// error (omp's client abandons the connection).
//
// omp 18.3.4 itself chunks only what it writes: its RpcClient never chunks
// what it sends and its server reads host lines whole. A Reassembler on a
// server's input accepts what omp's own decoder would accept.
package rpcframe

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

const (
	// MaxFrameBytes is the most bytes one physical line may have, counting
	// its newline (omp's MAX_RPC_FRAME_BYTES): 1 MiB. A frame whose JSON has
	// MaxFrameBytes bytes or more is chunked.
	MaxFrameBytes = 1 << 20
	// MaxReassembledBytes is the most bytes the JSON of one chunked frame may
	// have (omp's MAX_RPC_REASSEMBLED_BYTES): 64 MiB.
	MaxReassembledBytes = 64 << 20
	// ChunkPayloadBytes is the most frame bytes one rpc_chunk carries (before
	// base64): 256 KiB. Every chunk but the last carries exactly that many.
	ChunkPayloadBytes = 256 << 10
	// MaxChunks is the most chunks one frame may be cut into: 256.
	MaxChunks = (MaxReassembledBytes + ChunkPayloadBytes - 1) / ChunkPayloadBytes
	// MaxChunkIDLength is the longest chunkId accepted, in UTF-16 code units
	// (JavaScript's string length).
	MaxChunkIDLength = 128
	// ChunkType is the type of a chunk frame.
	ChunkType = "rpc_chunk"
)

// ErrFrameTooLarge is returned by [Chunker.Split] for a frame whose JSON is
// over [MaxReassembledBytes]: omp writes [Overflow]'s frame in its place.
var ErrFrameTooLarge = errors.New("RPC frame exceeded the transport limit")

// Chunker cuts frames too long for one line into rpc_chunk frames. Its zero
// value is ready; it numbers the chunked frames it writes rpc-1, rpc-2, … as
// omp's RpcFrameEncoder does (one Chunker per connection gives the same ids).
// It is safe for concurrent use.
type Chunker struct {
	n atomic.Uint64
}

// Split returns the physical lines, each ending in a newline, that carry
// frame: the JSON of one frame (an object, as encoded; a trailing newline is
// allowed and not counted). When the JSON and its newline fit in
// [MaxFrameBytes] that is one line, the frame itself (frame's own bytes when
// it already ends in a newline); otherwise rpc_chunk frames as described in
// the package documentation. A frame whose JSON is over [MaxReassembledBytes]
// is not chunked: Split returns [ErrFrameTooLarge] and writes nothing.
//
// Split does not check that frame is valid JSON; the lines it returns share
// no memory with frame except in the one-line case.
func (c *Chunker) Split(frame []byte) ([][]byte, error) {
	json := bytes.TrimSuffix(frame, []byte("\n"))
	if len(json)+1 <= MaxFrameBytes {
		if len(json) < len(frame) {
			return [][]byte{frame}, nil
		}
		line := make([]byte, len(json)+1)
		copy(line, json)
		line[len(json)] = '\n'
		return [][]byte{line}, nil
	}
	if len(json) > MaxReassembledBytes {
		return nil, fmt.Errorf("%w: %d bytes, the most is %d", ErrFrameTooLarge, len(json), MaxReassembledBytes)
	}
	id := "rpc-" + strconv.FormatUint(c.n.Add(1), 10)
	count := (len(json) + ChunkPayloadBytes - 1) / ChunkPayloadBytes
	lines := make([][]byte, 0, count)
	for i := 0; i < count; i++ {
		part := json[i*ChunkPayloadBytes : min((i+1)*ChunkPayloadBytes, len(json))]
		lines = append(lines, chunkLine(id, i, count, len(json), part))
	}
	return lines, nil
}

// chunkLine is one rpc_chunk frame, its keys in the order omp writes them.
func chunkLine(id string, index, count, byteLength int, part []byte) []byte {
	const head = `{"type":"rpc_chunk","chunkId":`
	n := len(head) + len(id) + 2 + 60 + base64.StdEncoding.EncodedLen(len(part)) + 3
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = appendJSString(b, id)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	b = append(b, `,"byteLength":`...)
	b = strconv.AppendInt(b, int64(byteLength), 10)
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, part)
	b = append(b, "\"}\n"...)
	return b
}
