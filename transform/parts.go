package transform

import (
	"sort"
	"strings"
	"unsafe"
)

// partSize is the size of the arrays a streamed block's text grows in.
// When the next delta does not fit, the text goes on in a new array, and
// the one it filled stays, as it is, a part of the block ([Content]). So a long reply's text is never
// copied into a larger array as it grows: the bridge holds it once, not
// twice at each growth (issue 44: the peak of a 32 MB reply was 2.2 times
// its size).
const partSize = 256 << 10

// textPart is a complete part of a long block's text, with the offsets of
// the characters JSON escapes in it when known (escKnown), as [Content]
// keeps them for its last part.
type textPart struct {
	s        string
	escAt    []uint32
	escKnown bool
}

// rope is a block's text as its complete parts and its last part.
// starts, when set (indexed), are the parts' offsets and the last part's.
type rope struct {
	parts  []textPart
	last   string
	starts []int
}

// indexed returns r with its offsets, for many reads at offsets (each).
func (r rope) indexed() rope {
	if len(r.parts) == 0 || r.starts != nil {
		return r
	}
	r.starts = make([]int, len(r.parts)+1)
	off := 0
	for i, p := range r.parts {
		r.starts[i] = off
		off += len(p.s)
	}
	r.starts[len(r.parts)] = off
	return r
}

// textOf is the text of a text block, or the thinking of a thinking block.
func (c *Content) textOf() rope {
	if c.Type == "thinking" {
		return rope{parts: c.parts, last: c.Thinking}
	}
	return rope{parts: c.parts, last: c.Text}
}

// Whole returns the text of a text block, or the thinking of a thinking
// block, whole. A long streamed block keeps it in parts: Whole joins them,
// into a copy. Where only the text's length or its JSON is needed,
// [Content.TextLen] and the encoders serve without one.
func (c *Content) Whole() string { return c.textOf().String() }

// TextLen is the length of the block's text and thinking.
func (c *Content) TextLen() int {
	n := len(c.Text) + len(c.Thinking)
	for _, p := range c.parts {
		n += len(p.s)
	}
	return n
}

// Len is the rope's length in bytes.
func (r rope) Len() int {
	if r.starts != nil {
		return r.starts[len(r.parts)] + len(r.last)
	}
	n := len(r.last)
	for _, p := range r.parts {
		n += len(p.s)
	}
	return n
}

// appendTo appends the rope's text to b.
func (r rope) appendTo(b []byte) []byte {
	for _, p := range r.parts {
		b = append(b, p.s...)
	}
	return append(b, r.last...)
}

// String joins the rope.
func (r rope) String() string {
	if len(r.parts) == 0 {
		return r.last
	}
	var b strings.Builder
	b.Grow(r.Len())
	for _, p := range r.parts {
		b.WriteString(p.s)
	}
	b.WriteString(r.last)
	return b.String()
}

// each calls f with the rope's pieces from offset off on, up to n bytes,
// in order, while f returns true.
func (r rope) each(off, n int, f func(s string) bool) {
	parts := r.parts
	if r.starts != nil { // skip to the part off is in
		i := sort.Search(len(parts), func(i int) bool { return r.starts[i+1] > off })
		parts, off = parts[i:], off-r.starts[i]
	}
	visit := func(s string) bool {
		if n <= 0 {
			return false
		}
		if off >= len(s) {
			off -= len(s)
			return true
		}
		s = s[off:]
		off = 0
		if len(s) > n {
			s = s[:n]
		}
		n -= len(s)
		return f(s)
	}
	for _, p := range parts {
		if !visit(p.s) {
			return
		}
	}
	visit(r.last)
}

// equalAt reports whether b is the rope's text at offset off (which, with
// b, lies within it).
func (r rope) equalAt(off int, b []byte) bool {
	eq := true
	r.each(off, len(b), func(s string) bool {
		eq = s == string(b[:len(s)])
		b = b[len(s):]
		return eq
	})
	return eq
}

// prefixOf reports whether the rope's text begins s.
func (r rope) prefixOf(s string) bool {
	if r.Len() > len(s) {
		return false
	}
	return r.equalAt(0, unsafe.Slice(unsafe.StringData(s), r.Len()))
}

// appendRaw appends the first n bytes of the rope as appendRawString
// does: its parts end at characters' ends, so escaping them in turn is
// escaping them whole.
func (r rope) appendRaw(dst []byte, n int) []byte {
	r.each(0, n, func(s string) bool {
		dst = appendRawString(dst, s)
		return true
	})
	return dst
}

// sealed returns parts with p added, in a new array: a block's parts are
// never changed in place, as events made earlier share them.
func sealed(parts []textPart, p textPart) []textPart {
	return append(parts[:len(parts):len(parts)], p)
}

// withoutEscapes returns parts without their escapes' offsets, in a new
// array.
func withoutEscapes(parts []textPart) []textPart {
	out := make([]textPart, len(parts))
	for i, p := range parts {
		out[i] = textPart{s: p.s}
	}
	return out
}
