// Package jsonl reads JSON lines: the host's commands on the bridge's stdin
// and the CLI's output. Unlike bufio.Scanner it has no practical size limit
// and survives an over-long line.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the default cap on one line, in bytes, on the host's
// stdin and on the CLI's stdout. It is far above real use (a 300,000-character
// prompt, a 2 MB reply, base64 images) and exists only so a runaway line
// cannot take all memory.
const DefaultMaxLine = 64 << 20

// ErrLineTooLong is returned by [Reader.Next] for a line longer than its
// cap. The line has been skipped; the next call reads the line after it.
var ErrLineTooLong = errors.New("line too long")

// ErrPiece comes with each piece of a long line but its last, from a
// reader set to hand long lines over in pieces ([Reader.SetPieces]); the
// last piece comes with a nil error, as a whole line does.
var ErrPiece = errors.New("a piece of a long line")

// keepBuffer is the largest line buffer a reader keeps for the next line.
const keepBuffer = 1 << 20

// Reader splits a stream into lines of JSON. Lines end at LF; a CR before
// the LF is dropped; a last line without LF is still a line. Unlike
// bufio.Scanner it has no practical size limit and survives an over-long
// line. Not safe for concurrent use.
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
	// parts: the pieces of a line longer than the bufio buffer, copied as
	// they come and joined into buf in one allocation of the line's size
	// at its end. Growing buf by append instead allocated about five times
	// a long line (the CLI's 2 MB assistant and result lines: 10 MB each).
	parts [][]byte

	// Long lines in pieces (SetPieces): lines longer than pieceOver
	// whose start ok accepts; piecing while one is being handed over,
	// pieceN its bytes so far.
	pieceOver int
	pieceOK   func(head []byte) bool
	piecing   bool
	pieceN    int
}

// SetPieces makes a line longer than over bytes whose first bytes ok
// accepts come in pieces, as it is read, instead of whole: Next returns
// its first over bytes or so, then each piece as it is read, with
// [ErrPiece] for all but the last. A line that turns out over the cap
// gives [ErrLineTooLong] after the pieces handed over so far (the caller
// drops them) and is skipped.
func (lr *Reader) SetPieces(over int, ok func(head []byte) bool) {
	lr.pieceOver, lr.pieceOK = over, ok
}

// readBuffer is the size of a Reader's buffer: a long line is kept in
// pieces of this size until its end. It stays allocated for as long as the
// Reader, in every bridge process, idle or not.
const readBuffer = 16 << 10

// NewReader returns a reader of lines of at most max bytes (0 means
// [DefaultMaxLine]).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &Reader{r: bufio.NewReaderSize(r, readBuffer), max: max}
}

// Next returns the next line without its line ending. The slice is valid
// until the next call. At the end of the stream it returns io.EOF; an
// over-long line gives an error wrapping [ErrLineTooLong].
func (lr *Reader) Next() ([]byte, error) {
	if cap(lr.buf) > keepBuffer { // give back buffers grown by a huge line
		lr.buf = nil
	}
	lr.buf = lr.buf[:0]
	if lr.piecing {
		return lr.nextPiece()
	}
	clear(lr.parts)
	lr.parts = lr.parts[:0]
	over := false // past the cap: count the line's bytes, keep none
	n := 0        // bytes of the line read so far
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n += len(chunk)
		// Keep up to max bytes plus room for CR LF; past that the line is
		// too long whatever its ending.
		if !over && n > lr.max+2 {
			over = true
			clear(lr.parts)
			lr.parts = lr.parts[:0]
		}
		switch {
		case err == nil, errors.Is(err, io.EOF) && n > 0:
			if !over {
				lr.join(chunk, n)
			}
			line := trimEOL(lr.buf)
			if over || len(line) > lr.max {
				return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrLineTooLong, contentLen(n, chunk), lr.max)
			}
			return line, nil // at EOF, the next call returns io.EOF
		case errors.Is(err, bufio.ErrBufferFull):
			if !over {
				lr.parts = append(lr.parts, bytes.Clone(chunk))
				if lr.pieceOK != nil && n > lr.pieceOver && lr.pieceOK(lr.parts[0]) {
					lr.join(nil, n)
					lr.piecing, lr.pieceN = true, n
					return lr.buf, ErrPiece
				}
			}
			continue
		default:
			return nil, err // io.EOF with nothing read, or a read error
		}
	}
}

// nextPiece reads the next piece of a long line.
func (lr *Reader) nextPiece() ([]byte, error) {
	chunk, err := lr.r.ReadSlice('\n')
	lr.pieceN += len(chunk)
	if lr.pieceN > lr.max+2 || (err == nil || errors.Is(err, io.EOF)) && contentLen(lr.pieceN, chunk) > lr.max {
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest
			chunk, err = lr.r.ReadSlice('\n')
			lr.pieceN += len(chunk)
		}
		lr.piecing = false
		return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrLineTooLong, contentLen(lr.pieceN, chunk), lr.max)
	}
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		lr.buf = append(lr.buf, chunk...)
		return lr.buf, ErrPiece
	case err == nil, errors.Is(err, io.EOF): // at EOF, the next call returns io.EOF
		lr.piecing = false
		lr.buf = append(lr.buf, chunk...)
		return trimEOL(lr.buf), nil
	default:
		lr.piecing = false
		return nil, err
	}
}

// join makes buf the line of n bytes whose pieces are parts and last.
func (lr *Reader) join(last []byte, n int) {
	if len(lr.parts) == 0 {
		lr.buf = append(lr.buf, last...)
		return
	}
	if cap(lr.buf) < n {
		lr.buf = make([]byte, 0, n)
	}
	for _, p := range lr.parts {
		lr.buf = append(lr.buf, p...)
	}
	lr.buf = append(lr.buf, last...)
	clear(lr.parts)
	lr.parts = lr.parts[:0]
}

// NextOwned is [Reader.Next] returning a line the caller owns, in dst's
// array when it fits (dst is a buffer the caller recycles; nil allocates
// one): it is read there straight from the input buffer, and the reader
// keeps no reference to it.
func (lr *Reader) NextOwned(dst []byte) ([]byte, error) {
	lr.buf = dst[:0]
	line, err := lr.Next()
	lr.buf = nil
	return line, err
}

// contentLen is the length of a line of n bytes without its line ending;
// last is the line's last chunk.
func contentLen(n int, last []byte) int {
	if bytes.HasSuffix(last, []byte("\n")) {
		n--
		if bytes.HasSuffix(last, []byte("\r\n")) {
			n--
		}
	}
	return n
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
