package transform

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
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

// object is a JSON object's members, found in one walk ([fields]) so that
// reading several of them costs one walk, where gjson.Get walks from the
// start for each: on the CLI's assistant and result lines, which carry the
// whole reply before most members, that was a pass over the reply per
// member read. The zero value is empty; index reuses its slices.
type object struct {
	keys, vals []string // raw keys (without quotes) and raw values, in order
}

// index makes o the index of the object obj (raw JSON; views into it are
// kept) and returns o.
func (o *object) index(obj string) *object {
	o.keys, o.vals = o.keys[:0], o.vals[:0]
	fields(obj, func(k, v string) bool {
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, v)
		return true
	})
	return o
}

// reset empties o, dropping its views.
func (o *object) reset() {
	clear(o.keys)
	clear(o.vals)
	o.keys, o.vals = o.keys[:0], o.vals[:0]
}

// raw returns the raw value of the first member called key, or "".
func (o *object) raw(key string) string {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i]
		}
	}
	return ""
}

// Get is gjson's Get on the object: the path's first element is looked up
// in the index, the rest (after a dot) by gjson in that member's value.
func (o *object) Get(path string) gjson.Result {
	key, rest, nested := strings.Cut(path, ".")
	raw := o.raw(key)
	if raw == "" {
		return gjson.Result{}
	}
	r := gjson.Parse(raw)
	if nested {
		return r.Get(rest)
	}
	return r
}

// firstElement returns the raw first element of the JSON array arr, or "".
func firstElement(arr string) string {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return ""
	}
	i = skipSpace(arr, i+1)
	end := skipValue(arr, i)
	if i >= len(arr) || arr[i] == ']' || end > len(arr) {
		return ""
	}
	return arr[i:end]
}
