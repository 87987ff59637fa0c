package rpcframe

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// metadataStringCap is the most UTF-16 code units of a string kept in an
// overflow frame (omp's METADATA_STRING_CAP); elisionReserve is what
// shrinkString leaves for its note (STRING_ELISION_RESERVE).
const (
	metadataStringCap = 1024
	elisionReserve    = 80
)

// Overflow returns the one line omp writes instead of a frame whose JSON is
// over [MaxReassembledBytes] (and, under protocol v1, instead of a response
// over [MaxFrameBytes]): for a response, a failed response for the same id
// and command,
//
//	{"id":"…","type":"response","command":"…","success":false,"error":"RPC response exceeded the transport limit"}
//
// for an agent_end, one without its messages,
//
//	{"type":"agent_end","messages":[],"messageCount":N}
//
// and for anything else an rpc_frame_error naming the frame's type:
//
//	{"type":"rpc_frame_error","originalType":"…","error":"RPC frame exceeded the transport limit"}
//
// Strings carried over are cut to 1024 UTF-16 code units as omp cuts them.
// The line ends in a newline. (omp first drops from an agent_end the
// messages the host already has from message_end frames; that is the
// caller's to do, as it knows which.)
func Overflow(frame []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(frame, &fields) != nil || fields == nil {
		return []byte(`{"type":"rpc_frame_error","error":"RPC frame exceeded the transport limit"}` + "\n")
	}
	typ, typOK := jsonString(fields["type"])
	var b []byte
	switch {
	case typOK && typ == "response":
		b = append(b, '{')
		if id, ok := jsonString(fields["id"]); ok {
			b = append(b, `"id":`...)
			b = appendShrunk(b, id)
			b = append(b, ',')
		}
		b = append(b, `"type":"response","command":`...)
		if cmd, ok := jsonString(fields["command"]); ok {
			b = appendShrunk(b, cmd)
		} else {
			b = append(b, `"unknown"`...)
		}
		b = append(b, `,"success":false,"error":"RPC response exceeded the transport limit"}`...)
	case typOK && typ == "agent_end":
		b = append(b, `{"type":"agent_end","messages":[],"messageCount":`...)
		if raw := fields["messageCount"]; len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
			b = appendJSNumber(b, raw)
		} else {
			b = append(b, '0')
		}
		b = append(b, '}')
	default:
		b = append(b, `{"type":"rpc_frame_error",`...)
		if typOK {
			b = append(b, `"originalType":`...)
			b = appendShrunk(b, typ)
			b = append(b, ',')
		}
		b = append(b, `"error":"RPC frame exceeded the transport limit"}`...)
	}
	return append(b, '\n')
}

// appendShrunk appends s as JSON, cut as omp's shrinkString(s, 1024) cuts
// it: the first 944 code units and a note of how many were left out.
func appendShrunk(b []byte, s string) []byte {
	if utf16Len(s) <= metadataStringCap {
		return appendJSString(b, s)
	}
	u := utf16.Encode([]rune(s))
	head := metadataStringCap - elisionReserve
	note := "\n…[" + strconv.Itoa(len(u)-head) + " chars elided for RPC frame]"
	return appendJSUTF16(b, append(u[:head:head], utf16.Encode([]rune(note))...))
}

// appendJSString appends s as JavaScript's JSON.stringify writes a string.
func appendJSString(b []byte, s string) []byte {
	if utf8.ValidString(s) && !needsEscape(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return appendJSUTF16(b, utf16.Encode([]rune(s)))
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

// appendJSUTF16 appends the UTF-16 string u as JSON.stringify writes it:
// ", \ and control characters escaped (\b \f \n \r \t by name, the rest as
// \u00xx), lone surrogates as \udxxx, everything else as is.
func appendJSUTF16(b []byte, u []uint16) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		case utf16.IsSurrogate(rune(c)):
			if c < 0xdc00 && i+1 < len(u) && u[i+1] >= 0xdc00 && u[i+1] < 0xe000 {
				b = utf8.AppendRune(b, utf16.DecodeRune(rune(c), rune(u[i+1])))
				i++
				continue
			}
			b = append(b, '\\', 'u', hex[c>>12], hex[c>>8&15], hex[c>>4&15], hex[c&15])
		default:
			b = utf8.AppendRune(b, rune(c))
		}
	}
	return append(b, '"')
}

// appendJSNumber appends the JSON number raw as JavaScript would write it
// back after reading it (JSON.stringify(JSON.parse(raw))): 2.0 as 2, 1e3 as
// 1000, a number beyond float64's range as null.
func appendJSNumber(b []byte, raw []byte) []byte {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		// Beyond float64: JavaScript reads ±Infinity, which JSON.stringify writes as null.
		return append(b, "null"...)
	}
	return append(b, jsNumber(f)...)
}

// jsNumber is ECMAScript's Number::toString(f) for a finite f.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	// Shortest round-tripping digits d1.d2d3…e±x: value = 0.d1d2… × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := x + 1
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ev := n - 1
	if ev < 0 {
		ev = -ev
	}
	if k == 1 {
		return sign + digits + "e" + es + strconv.Itoa(ev)
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + strconv.Itoa(ev)
}
