package transform

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// appendJSONString appends the value of the JSON string literal raw (with
// its quotes) to dst. It allocates nothing: the hot path of every delta.
// raw comes from a validated line; a malformed escape is kept as it is.
func appendJSONString(dst []byte, raw string) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return dst
	}
	s := raw[1 : len(raw)-1]
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) < 2 {
			return append(dst, s...)
		}
		switch c := s[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
			s = s[2:]
		case 'b':
			dst, s = append(dst, '\b'), s[2:]
		case 'f':
			dst, s = append(dst, '\f'), s[2:]
		case 'n':
			dst, s = append(dst, '\n'), s[2:]
		case 'r':
			dst, s = append(dst, '\r'), s[2:]
		case 't':
			dst, s = append(dst, '\t'), s[2:]
		case 'u':
			r, n := unicodeEscape(s)
			if n == 0 {
				dst, s = append(dst, s[:2]...), s[2:]
				continue
			}
			dst, s = utf8.AppendRune(dst, r), s[n:]
		default:
			dst, s = append(dst, s[:2]...), s[2:]
		}
	}
}

// unicodeEscape decodes \uXXXX (and a following low surrogate) at the start
// of s, returning the rune and the bytes used, or 0 bytes if malformed.
func unicodeEscape(s string) (rune, int) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(s[6:]); ok && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

func hex4(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:6], 16, 32)
	return rune(v), err == nil
}
