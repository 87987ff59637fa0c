package transform

import (
	"strconv"
	"strings"
)

// The hot path reads stream_event lines with these few functions instead of
// gjson's accessors, which unescape every string they touch (an allocation
// and a pass per delta). They walk JSON that gjson.Valid has accepted and
// hand values over raw; malformed input gives wrong values, never a panic.

// fields calls f with the raw key (without its quotes) and raw value of each
// member of the JSON object obj, until f returns false.
func fields(obj string, f func(key, val string) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		kEnd := skipString(obj, i)
		if kEnd > len(obj) || kEnd < i+2 {
			return
		}
		key := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		vStart := skipSpace(obj, i+1)
		vEnd := skipValue(obj, vStart)
		if vEnd > len(obj) || vEnd <= vStart {
			return
		}
		if !f(key, obj[vStart:vEnd]) {
			return
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at s[i] ('"').
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s) + 1 // unterminated
		}
		i += j
		// The quote ends the string unless an odd number of backslashes
		// precede it.
		n := 0
		for k := i - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just past the value starting at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(s) + 1
	default: // number, true, false, null
		for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t' {
			i++
		}
		return i
	}
}

// rawInt parses a raw JSON integer; anything else reads as -1.
func rawInt(raw string) int {
	n, err := strconv.Atoi(raw)
	if err != nil {
		return -1
	}
	return n
}

// rawString returns the value of a raw JSON string without copying when it
// has no escapes (the result then views raw); "" if raw is not a string.
func rawString(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	return string(appendJSONString(nil, raw))
}
