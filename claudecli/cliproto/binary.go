package cliproto

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// The CLI's binary (Bun's single-file executable) carries its JavaScript
// as text, minified. The names of its stream-json protocol are read from
// two kinds of code in it:
//
//   - its zod schemas of the protocol's messages (the ones the Agent
//     SDK's types are generated from, @internal ones too): an object
//     schema whose first member is a literal type or subtype, as in
//     c({type:E("system"),subtype:E("init"),…}) or
//     c({subtype:E("interrupt"),…}), its members' names and whether its
//     .describe text begins "@internal";
//   - its dispatch on a control request's subtype:
//     request.subtype==="end_session" (requests it handles without a
//     schema of their own).
//
// The minifier renames the functions (c, E) between versions, never the
// member names or the literals, which is what is matched.

// binaryName is one name found in the binary.
type binaryName struct {
	kind     Kind
	name     string
	internal bool // its schema is described "@internal"
	// weak: the schema may be something else of the same name (a
	// content block, a teammate's message): the name counts only when
	// another source has it too.
	weak bool
}

var (
	// schemaStart matches an object schema opening with a literal member:
	// ({type:E("name") or ({subtype:E("name").
	schemaStart = regexp.MustCompile(`\(\{(type|subtype):[A-Za-z_$][\w$]{0,5}\("([a-z][a-z0-9_]*)"\)`)
	// literalMember matches a member that is a literal: name:E("value").
	literalMember = regexp.MustCompile(`^[A-Za-z_$][\w$]{0,5}\("([a-z][a-z0-9_]*)"\)`)
	requestCheck  = regexp.MustCompile(`\.request\.subtype==="([a-z][a-z0-9_]*)"`)
)

// binaryWindow is how much of a binary [scanBinaryFile] reads at a time
// (a whole one is some 370 MB); a variable for the tests.
var binaryWindow = 32 << 20

// scanBinaryFile returns the protocol names of the CLI binary at path,
// read in windows of binaryWindow bytes, each overlapping the next by more
// than the longest schema [jsScanTo] reads.
func scanBinaryFile(path string) ([]binaryName, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const overlap = maxSchema + 4096
	buf := make([]byte, binaryWindow+overlap)
	var out []binaryName
	for n, eof := 0, false; !eof; {
		m, err := io.ReadFull(f, buf[n:])
		n += m
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			eof = true
		case err != nil:
			return nil, err
		}
		limit := n
		if !eof {
			limit = n - overlap
		}
		out = append(out, scanBinary(buf[:n], limit)...)
		n = copy(buf, buf[limit:n])
	}
	return out, nil
}

// scanBinary returns the protocol names in the binary b whose code
// begins before limit.
func scanBinary(b []byte, limit int) []binaryName {
	var out []binaryName
	for _, m := range findAll(b, limit, schemaStart, "({type:", "({subtype:") {
		open := m[0] + 1 // the object's {
		end := jsScanTo(b, open+1, '}')
		if end >= len(b) {
			continue
		}
		members := jsMembers(b[open+1 : end])
		internal := bytes.HasPrefix(b[end+1:], []byte(`).describe("@internal`)) ||
			bytes.HasPrefix(b[end+1:], []byte(`).describe('@internal`))
		first, lit := string(b[m[2]:m[3]]), string(b[m[4]:m[5]])
		switch {
		case first == "type" && lit == "system":
			if sub := literalMember.FindSubmatch([]byte(members["subtype"])); sub != nil {
				out = append(out, binaryName{KindLine, lit, false, false}, binaryName{KindSystem, string(sub[1]), internal, false})
			}
		case first == "type":
			if line, weak := isLine(lit, members); line {
				out = append(out, binaryName{KindLine, lit, internal, weak})
			}
		case first == "subtype" && !has(members, "request_id", "response", "error"):
			// A control response is {subtype:"success"|"error", request_id, …}.
			out = append(out, binaryName{KindRequest, lit, internal, false})
		}
	}
	for _, m := range findAll(b, limit, requestCheck, ".request.subtype===") {
		out = append(out, binaryName{KindRequest, string(b[m[2]:m[3]]), false, false})
	}
	return out
}

// findAll is re.FindAllSubmatchIndex(b, -1) for a re whose matches begin
// with one of anchors, the matches that begin before limit: only where an
// anchor is (found at bytes.Index's speed) is re tried, on at most 256
// bytes.
func findAll(b []byte, limit int, re *regexp.Regexp, anchors ...string) [][]int {
	var out [][]int
	for _, a := range anchors {
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(a))
			if j < 0 || i+j >= limit {
				break
			}
			at := i + j
			if m := re.FindSubmatchIndex(b[at:min(len(b), at+256)]); m != nil && m[0] == 0 {
				for k := range m {
					if m[k] >= 0 {
						m[k] += at
					}
				}
				out = append(out, m)
			}
			i = at + len(a)
		}
	}
	slices.SortFunc(out, func(x, y []int) int { return x[0] - y[0] })
	return out
}

// isLine reports whether an object schema of type typ with these
// members is a line of the stream: a message names its session
// (session_id) or the tool call whose sub-agent printed it
// (parent_tool_use_id: the SDK's user message has no session_id of its
// own), a control message is control_*. Weak: a schema of the type alone
// (keep_alive; but also content kinds, options) or with a request_id
// (update_environment_variables; but also an agent team's messages).
func isLine(typ string, members map[string]string) (line, weak bool) {
	switch {
	case has(members, "session_id", "parent_tool_use_id"), strings.HasPrefix(typ, "control_"):
		return true, false
	case len(members) == 1, has(members, "request_id"):
		return true, true
	}
	return false, false
}

// has reports whether members has any of keys.
func has(members map[string]string, keys ...string) bool {
	for _, k := range keys {
		if _, ok := members[k]; ok {
			return true
		}
	}
	return false
}

// jsMembers returns the top-level members of an object literal's body,
// name → its value's source (the first 200 bytes of it).
func jsMembers(body []byte) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(body); {
		j := i
		for j < len(body) && (isIdent(body[j])) {
			j++
		}
		if j > i && j < len(body) && body[j] == ':' {
			end := jsScanTo(body, j+1, ',')
			out[string(body[i:j])] = string(body[j+1 : min(end, j+1+200)])
			i = end + 1
			continue
		}
		i = jsScanTo(body, i, ',') + 1 // a spread, a method: skipped
	}
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// maxSchema is the most of an object schema [jsScanTo] reads.
const maxSchema = 1 << 20

// jsScanTo returns the index in b, from i on, of the first stop byte
// outside brackets, string, template and regular expression literals
// (len(b) when there is none within maxSchema bytes: not an object
// schema).
func jsScanTo(b []byte, i int, stop byte) int {
	depth := 0
	limit := min(len(b), i+maxSchema)
	for ; i < limit; i++ {
		c := b[i]
		switch {
		case c == '"' || c == '\'':
			i = jsSkipString(b, i)
		case c == '`':
			i = jsSkipTemplate(b, i)
		case c == '/' && i+1 < len(b) && b[i+1] != '/' && b[i+1] != '*' && regexAllowed(b, i):
			i = jsSkipRegexp(b, i)
		case depth == 0 && c == stop:
			return i
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == '}' || c == ')' || c == ']':
			if depth == 0 {
				return len(b) // closed before stop: not found
			}
			depth--
		}
	}
	return len(b)
}

func jsSkipString(b []byte, i int) int {
	q := b[i]
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case q, '\n':
			return i
		}
	}
	return len(b)
}

func jsSkipTemplate(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '`':
			return i
		case b[i] == '$' && i+1 < len(b) && b[i+1] == '{':
			i = jsScanTo(b, i+2, '}')
		}
	}
	return len(b)
}

// regexAllowed reports whether a / at b[i] begins a regular expression:
// what comes before it is an operator or a bracket, not a value.
func regexAllowed(b []byte, i int) bool {
	for i--; i >= 0; i-- {
		switch c := b[i]; c {
		case ' ', '\t', '\n':
			continue
		case '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';':
			return true
		default:
			return false
		}
	}
	return true
}

func jsSkipRegexp(b []byte, i int) int {
	class := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				return i
			}
		case '\n':
			return i
		}
	}
	return len(b)
}
