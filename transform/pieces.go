package transform

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A long line of the CLI's (an assistant line carrying a 2 MB reply, the
// result that carries it again, a user line with a large tool output) can
// be handed to the translator in pieces as it is read ([Translator.Piece],
// [Translator.LastPiece]) instead of whole. The pieces are walked as they
// come (a small JSON scanner that keeps the path to the value it is in)
// and copied into the line the translator then reads as any other
// ([Translator.Append]), except for two strings the translator has no use
// for, which are left out (an empty string stands in their place):
//
//   - the text or thinking of the first block of an assistant line whose
//     message is the one being streamed: the translator only checks it
//     against the text the stream carried ([Translator.complete]). It is
//     compared with that text as it comes, and only what the stream did not
//     carry is kept (the thinking, whose deltas the CLI holds back; the
//     rest of a text the stream cut short). What decides that the line is
//     the streamed message's (its type, its message id, no error) may come
//     after the text (the CLI prints message.content before message.id):
//     when the line turns out to be another's, the text is written back
//     into the line from the streamed text it matched.
//   - the result of a result line that said is_error false before it: the
//     translator reads it only for an error.
//
// Everything else (a tool result's content and structured result, which
// the run keeps) is copied once; the line is not read whole first. So a
// long reply is held once, in the translator's text, where it was held
// three times (the text, the line's pieces and the line they were joined
// into) and twice more for its result.

// longLine is the state of a line being read in pieces.
type longLine struct {
	out   []byte   // the line without the strings left out
	stack []lframe // the containers open, outermost first
	st    lstate
	lost  bool // not JSON as expected: the rest is copied as it is
	copy  bool // the piece's bytes from `from` on go to out

	// The string being read.
	str     strMode
	esc     bool   // (kept) the last byte was a backslash
	capture []byte // a short value kept to decide on (type, ids)
	capKey  capture

	// A string being left out: its unescaped length so far, whether it
	// matched ref so far, what it has beyond ref, an escape cut at the
	// piece's end, and whether it is valid JSON.
	ref     rope
	n       int
	tail    []byte
	cut     []byte
	invalid bool
	dec     [8]byte

	// What the line said, raw (first occurrence of each).
	typ, msgID, isError, parent, apiError string
	hasError                              bool
	messages, contents                    int // members named message (top) and content (in the first message)

	hole hole
}

// hole is the streamed block's text left out of a line: its key (text or
// thinking), where it stands in the line (the offset of its closing
// quote), the streamed text it began with (ref[:n] when n is shorter),
// its unescaped length, and what it has beyond ref.
type hole struct {
	key  string
	at   int
	ref  rope
	n    int
	tail []byte
	set  bool
}

type lframe struct {
	array bool
	key   string // an object's member being read
	idx   int    // an array's element being read
	first bool   // (block objects) no text or thinking member seen yet
}

type lstate uint8

const (
	lsValue lstate = iota // a value is next
	lsKey                 // a member name or the object's end is next
	lsColon
	lsAfter  // a comma or the container's end is next
	lsString // in a string
	lsScalar // in a number, true, false or null
	lsEnd    // after the top object
)

type strMode uint8

const (
	strKey     strMode = iota // a member name (captured into capture)
	strKept                   // copied as it is
	strCompare                // left out, compared with ref
	strDrop                   // left out
)

type capture uint8

const (
	capNone capture = iota
	capType
	capMsgID
	capIsError
	capParent
	capAPIError
)

// Piece reads p, a piece of a long line that is not its last. It gives no
// events: they come with the whole line ([Translator.LastPiece]). p is
// only read during the call.
func (t *Translator) Piece(p []byte) {
	if t.long == nil {
		t.long = &longLine{copy: true}
	}
	t.long.write(t, p)
}

// LastPiece reads p, the last piece of a long line, and returns the line
// for [Translator.Append], which must be the next call: the line without
// the strings the translator has no use for (see above). The caller may
// read it (its type, its uuid) until it calls Append or Piece again.
func (t *Translator) LastPiece(p []byte) []byte {
	t.Piece(p)
	l := t.long
	t.long = nil
	if l.lost || l.st != lsEnd {
		l.hole.set = false
	}
	if h := &l.hole; h.set && !l.holeFits(t) {
		// Not the streamed message's line: its text goes back in.
		v := h.ref.appendRaw(nil, min(h.n, h.ref.Len()))
		v = appendRawString(v, unsafe.String(unsafe.SliceData(h.tail), len(h.tail)))
		l.out = append(l.out[:h.at], append(v, l.out[h.at:]...)...)
		h.set = false
	}
	t.piecesOf, t.hole = l.out, l.hole
	return l.out
}

// DropPieces forgets a long line read in part (it was over the limit, or
// the CLI's output ended).
func (t *Translator) DropPieces() { t.long = nil }

// holeFits reports whether the line is the complete line of the streamed
// message's block, which [Translator.assistant] reads in place and hands
// to [Translator.authoritative].
func (l *longLine) holeFits(t *Translator) bool {
	c := t.cur
	return c != nil && c.streamed && t.parent == "" && l.typ == `"assistant"` &&
		l.msgID == `"`+c.id+`"` && (l.parent == "" || l.parent == "null" || l.parent == `""`) &&
		(l.apiError == "" || l.apiError == "false") && !l.hasError
}

// appendRawString appends s as the inside of a JSON string literal whose
// value is s, byte for byte (what is not valid UTF-8 stays as it is).
func appendRawString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// write scans p.
func (l *longLine) write(t *Translator, p []byte) {
	from := 0
	flush := func(to int) {
		if l.copy {
			l.out = append(l.out, p[from:to]...)
		}
		from = to
	}
	i := 0
	for i < len(p) && !l.lost {
		if l.st == lsString {
			if l.str == strCompare || l.str == strDrop {
				var end leftOutEnd
				i, end = l.leftOut(p, i)
				switch end {
				case lsClosed: // p[i] is the closing quote
					l.endLeftOut()
					from, l.copy = i, true
					i++
					l.st = lsAfter
				case lsKept:
					from = i
				}
				continue
			}
			i = l.kept(p, i)
			continue
		}
		c := p[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		switch l.st {
		case lsValue:
			if len(l.stack) == 0 && c != '{' {
				l.lost = true
				continue
			}
			switch c {
			case '{':
				l.stack = append(l.stack, lframe{first: true})
				l.st = lsKey
			case '[':
				l.stack = append(l.stack, lframe{array: true})
				l.st = lsValue
			case ']': // an empty array's end
				if !l.stack[len(l.stack)-1].array {
					l.lost = true
					continue
				}
				l.pop()
			case '"':
				l.startValue(t, true)
				if l.str == strCompare || l.str == strDrop {
					flush(i + 1)
					l.copy = false
				}
			default:
				l.startValue(t, false)
				l.st = lsScalar
				continue // the scalar's first byte
			}
		case lsKey:
			switch c {
			case '"':
				l.st, l.str, l.esc = lsString, strKey, false
				l.capture = l.capture[:0]
			case '}':
				l.pop()
			default:
				l.lost = true
			}
		case lsColon:
			if c != ':' {
				l.lost = true
			}
			l.st = lsValue
		case lsAfter:
			switch {
			case len(l.stack) == 0:
				l.lost = true
			case c == ',':
				f := &l.stack[len(l.stack)-1]
				if f.array {
					f.idx++
					l.st = lsValue
				} else {
					l.st = lsKey
				}
			case c == '}' || c == ']':
				l.pop()
			default:
				l.lost = true
			}
		case lsScalar:
			if c == ',' || c == '}' || c == ']' {
				l.endValue()
				l.st = lsAfter
				continue
			}
			if l.capKey != capNone && len(l.capture) < 64 {
				l.capture = append(l.capture, c)
			}
		case lsEnd:
			l.lost = true
		}
		i++
	}
	if l.lost {
		l.copy = true
		l.hole.set = false
	}
	flush(len(p))
}

// pop closes the innermost container.
func (l *longLine) pop() {
	l.stack = l.stack[:len(l.stack)-1]
	if len(l.stack) == 0 {
		l.st = lsEnd
	} else {
		l.st = lsAfter
	}
}

// kept reads a kept string (or a member name) from p[i:] and returns where
// it stopped: past its closing quote, or len(p).
func (l *longLine) kept(p []byte, i int) int {
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case l.esc:
			l.esc = false
		case c == '\\':
			l.esc = true
		case c == '"':
			if l.str == strKey {
				l.endKey()
			} else {
				if l.capKey != capNone {
					l.capture = append(l.capture, '"')
				}
				l.endValue()
				l.st = lsAfter
			}
			return i + 1
		}
		if (l.str == strKey || l.capKey != capNone) && len(l.capture) < 64 {
			l.capture = append(l.capture, c)
		}
	}
	return i
}

// endKey sets the innermost object's member name.
func (l *longLine) endKey() {
	f := &l.stack[len(l.stack)-1]
	if len(l.capture) < 64 {
		f.key = string(l.capture)
	} else {
		f.key = ""
	}
	l.st = lsColon
	switch depth := len(l.stack); {
	case depth == 1 && f.key == "message":
		l.messages++
	case depth == 2 && l.stack[0].key == "message" && l.messages == 1 && f.key == "content":
		l.contents++
	case depth == 1 && f.key == "error":
		l.hasError = true
	}
}

// startValue decides what to do with the value starting (a string when
// str): capture it, leave it out, or copy it.
func (l *longLine) startValue(t *Translator, str bool) {
	l.capKey = capNone
	l.capture = l.capture[:0]
	l.str, l.esc = strKept, false
	if str {
		l.st = lsString
	}
	depth := len(l.stack)
	f := &l.stack[depth-1]
	switch {
	case depth == 1 && f.key == "type" && l.typ == "":
		l.capKey = capType
	case depth == 1 && f.key == "is_error" && l.isError == "":
		l.capKey = capIsError
	case depth == 1 && f.key == "parent_tool_use_id" && l.parent == "":
		l.capKey = capParent
	case depth == 1 && f.key == "is_api_error_message" && l.apiError == "":
		l.capKey = capAPIError
	case depth == 2 && l.stack[0].key == "message" && l.messages == 1 && f.key == "id" && l.msgID == "":
		l.capKey = capMsgID
	case str && depth == 1 && f.key == "result" && l.isError == "false":
		l.str = strDrop
		l.n, l.ref, l.tail, l.invalid = 0, rope{}, nil, false
	case str && depth == 4 && !l.hole.set && (f.key == "text" || f.key == "thinking") && f.first &&
		l.stack[0].key == "message" && l.messages == 1 && l.stack[1].key == "content" && l.contents == 1 &&
		l.stack[2].array && l.stack[2].idx == 0:
		f.first = false
		if ref, ok := t.streamedText(f.key); ok {
			l.str = strCompare
			l.n, l.ref, l.tail, l.invalid = 0, ref, nil, false
		}
	}
	if depth == 4 && (f.key == "text" || f.key == "thinking") {
		f.first = false
	}
	if str && l.capKey != capNone {
		l.capture = append(l.capture, '"') // a string's capture is raw, with its quotes
	}
}

// streamedText is the text of the streamed block a complete line's text
// or thinking (key) would be checked against.
func (t *Translator) streamedText(key string) (rope, bool) {
	c := t.cur
	if c == nil || !c.streamed || t.parent != "" || t.ended {
		return rope{}, false
	}
	ci, ok := c.blocks[c.complete]
	if !ok || ci < 0 {
		return rope{}, false
	}
	if b := &c.msg.Content[ci]; key == b.Type && (key == "text" || key == "thinking") {
		return b.textOf().indexed(), true // read at offsets as the line is compared
	}
	return rope{}, false
}

// endValue notes a captured value.
func (l *longLine) endValue() {
	v := string(l.capture)
	switch l.capKey {
	case capType:
		l.typ = v
	case capMsgID:
		l.msgID = v
	case capIsError:
		l.isError = v
	case capParent:
		l.parent = v
	case capAPIError:
		l.apiError = v
	}
	l.capKey = capNone
}

// leftOut reads a left-out string from p[i:]. It returns where it stopped
// and what it found: the string's closing quote at p[i] (lsClosed), the
// piece's end (lsGoesOn), or a difference from the streamed text, after
// which the string is copied as it is from p[i] on (lsKept).
func (l *longLine) leftOut(p []byte, i int) (int, leftOutEnd) {
	for len(l.cut) > 0 { // an escape cut at the last piece's end
		need := len(l.cut)
		l.cut = append(l.cut, p[i:min(len(p), i+12)]...)
		n, ok := escapeLen(l.cut)
		if !ok {
			return len(p), lsGoesOn
		}
		if n < need {
			// It ended within the cut bytes (a \uD83D not followed by
			// a low surrogate's escape): the rest of them begin another
			// escape, still cut ("\u" and up to three hex digits).
			kept := !l.unit(l.cut[:n], true)
			rest := copy(l.cut, l.cut[n:need])
			l.cut = l.cut[:rest]
			if kept { // copied as it is from here: the cut bytes first
				l.out = append(l.out, l.cut...)
				l.cut = l.cut[:0]
				return i, lsKept
			}
			continue
		}
		i += n - need
		kept := !l.unit(l.cut[:n], true)
		l.cut = l.cut[:0]
		if kept {
			return i, lsKept
		}
	}
	for i < len(p) {
		j := i
		for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
			j++
		}
		if j > i && !l.unit(p[i:j], false) {
			return j, lsKept
		}
		if j == len(p) {
			return j, lsGoesOn
		}
		switch c := p[j]; {
		case c == '"':
			return j, lsClosed
		case c < 0x20:
			l.invalid = true
			if !l.unit(p[j:j+1], false) {
				return j + 1, lsKept
			}
			i = j + 1
		default: // a backslash
			n, ok := escapeLen(p[j:])
			if !ok {
				l.cut = append(l.cut[:0], p[j:]...)
				return len(p), lsGoesOn
			}
			if !l.unit(p[j:j+n], true) {
				return j + n, lsKept
			}
			i = j + n
		}
	}
	return i, lsGoesOn
}

type leftOutEnd uint8

const (
	lsGoesOn leftOutEnd = iota
	lsClosed
	lsKept
)

// unit takes raw, a run of a left-out string: plain text, or one escape.
// It reports false when the string turned out to differ from the streamed
// text: it is then written to the line (what matched, and raw), and the
// rest of it is copied as it comes.
func (l *longLine) unit(raw []byte, escape bool) bool {
	if escape && !validEscape(raw) {
		l.invalid = true
	}
	if l.str == strDrop {
		return true
	}
	u := raw
	if escape {
		u = decodeEscape(l.dec[:0], raw)
	}
	if refLen := l.ref.Len(); l.n < refLen {
		k := min(len(u), refLen-l.n)
		if !l.ref.equalAt(l.n, u[:k]) {
			l.out = l.ref.appendRaw(l.out, l.n)
			l.out = append(l.out, raw...)
			l.str, l.esc, l.copy = strKept, false, true
			l.ref, l.tail = rope{}, nil
			return false
		}
		l.tail = append(l.tail, u[k:]...)
	} else {
		l.tail = append(l.tail, u...)
	}
	l.n += len(u)
	return true
}

// decodeEscape appends the value of the escape raw to dst, as
// appendJSONString does.
func decodeEscape(dst, raw []byte) []byte {
	switch raw[1] {
	case '"', '\\', '/':
		return append(dst, raw[1])
	case 'b':
		return append(dst, '\b')
	case 'f':
		return append(dst, '\f')
	case 'n':
		return append(dst, '\n')
	case 'r':
		return append(dst, '\r')
	case 't':
		return append(dst, '\t')
	case 'u':
		if r, n := unicodeEscape(unsafe.String(unsafe.SliceData(raw), len(raw))); n > 0 {
			return utf8.AppendRune(dst, r)
		}
	}
	return append(dst, raw[:2]...)
}

// endLeftOut is a left-out string's end: its closing quote is next.
func (l *longLine) endLeftOut() {
	if l.invalid {
		// Not valid JSON: the line stays invalid, as it was.
		l.out = append(l.out, 0x01)
		l.hole.set = false
	} else if l.str == strCompare {
		f := &l.stack[len(l.stack)-1]
		l.hole = hole{key: f.key, at: len(l.out), ref: l.ref, n: l.n, tail: l.tail, set: true}
	}
	l.ref, l.tail = rope{}, nil
}

// escapeLen is how many bytes the escape at the start of s takes, as
// appendJSONString reads it; false when s is too short to tell.
func escapeLen(s []byte) (int, bool) {
	if len(s) < 2 {
		return 0, false
	}
	if s[1] != 'u' {
		return 2, true
	}
	var r rune
	for k := 2; k < 6; k++ {
		if k >= len(s) {
			return 0, false
		}
		h := hexVal(s[k])
		if h < 0 {
			return 2, true
		}
		r = r<<4 | rune(h)
	}
	if !utf16.IsSurrogate(r) {
		return 6, true
	}
	var r2 rune
	for k := 6; k < 12; k++ {
		if k >= len(s) {
			return 0, false
		}
		switch {
		case k == 6 && s[k] != '\\', k == 7 && s[k] != 'u':
			return 6, true
		case k >= 8:
			h := hexVal(s[k])
			if h < 0 {
				return 6, true
			}
			r2 = r2<<4 | rune(h)
		}
	}
	if utf16.DecodeRune(r, r2) == 0xFFFD {
		return 6, true
	}
	return 12, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// validEscape reports whether the escape u is valid JSON.
func validEscape(u []byte) bool {
	switch u[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		return len(u) >= 6
	}
	return false
}
