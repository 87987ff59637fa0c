package transform

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// ToolNames says which names and argument shapes tool calls are shown
// with: hosts draw pi's tools by pi's names and argument shapes and any
// other tool as raw JSON.
type ToolNames uint8

const (
	// toolNamesPi (the default) shows the CLI's tools that pi has as pi
	// shows them ([piTools]); the others keep the CLI's names.
	toolNamesPi ToolNames = iota
	// toolNamesClaude shows every tool call as the CLI printed it.
	toolNamesClaude
)

// ParseToolNames reads a --tool-names value: "pi" or "claude".
func ParseToolNames(s string) (ToolNames, error) {
	switch s {
	case "pi":
		return toolNamesPi, nil
	case "claude":
		return toolNamesClaude, nil
	}
	return 0, fmt.Errorf("unknown tool names %q: want pi or claude", s)
}

func (n ToolNames) String() string {
	if n == toolNamesClaude {
		return "claude"
	}
	return "pi"
}

// piTool is how one of the CLI's tools is shown under pi's name (pi 1.5.2's
// dist/core/tools schemas). Arguments pi lacks are kept beside pi's, under
// the CLI's names.
type piTool struct {
	CLI, Pi string
	// Keys renames the CLI's top-level arguments to pi's.
	Keys map[string]string
	// Seconds names the (pi) argument the CLI gives in milliseconds and pi
	// in seconds.
	Seconds string
	// Edit: the CLI's {file_path, old_string, new_string} becomes pi's
	// {path, edits:[{oldText, newText}]}, and the result's structured
	// patch pi's details {diff, firstChangedLine}.
	Edit bool
}

// piTools is the one table of the CLI's tools pi has (CLI 2.1.328 offers
// Read, Write, Edit and Bash; Grep, Glob and LS where a CLI still has
// them). Every place a tool call is shown maps it through this table.
var piTools = []piTool{
	{CLI: "Read", Pi: "read", Keys: map[string]string{"file_path": "path"}},
	{CLI: "Write", Pi: "write", Keys: map[string]string{"file_path": "path"}},
	{CLI: "Edit", Pi: "edit", Keys: map[string]string{"file_path": "path"}, Edit: true},
	{CLI: "Bash", Pi: "bash", Seconds: "timeout"},
	{CLI: "Grep", Pi: "grep", Keys: map[string]string{"-i": "ignoreCase", "-C": "context", "head_limit": "limit"}},
	{CLI: "Glob", Pi: "find"},
	{CLI: "LS", Pi: "ls"},
}

// PiTools are the CLI's names of its tools that pi has (piTools), in
// pi's order.
func PiTools() []string {
	names := make([]string, len(piTools))
	for i, t := range piTools {
		names[i] = t.CLI
	}
	return names
}

var byCLI, byPi = func() (map[string]*piTool, map[string]*piTool) {
	c, p := map[string]*piTool{}, map[string]*piTool{}
	for i := range piTools {
		c[piTools[i].CLI], p[piTools[i].Pi] = &piTools[i], &piTools[i]
	}
	return c, p
}()

// tool returns how the CLI's tool cli is shown, nil when as it is.
func (n ToolNames) tool(cli string) *piTool {
	if n != toolNamesPi {
		return nil
	}
	return byCLI[cli]
}

// The prefixes of the CLI's names of the tools claude-rpc serves itself:
// pi extensions' (--extension, the MCP server "ext") and the host's
// (set_host_tools, host URIs: "host"). Under pi's names they are shown by
// their own names, as pi and omp show an extension's or a host's tool (a
// host's named as one of pi's tools keeps the CLI's name).
const (
	extensionTools = "mcp__ext__"
	hostTools      = "mcp__host__"
)

// Name is the name the CLI's tool cli is shown with.
func (n ToolNames) Name(cli string) string {
	if p := n.tool(cli); p != nil {
		return p.Pi
	}
	if n != toolNamesPi {
		return cli
	}
	if own, ok := strings.CutPrefix(cli, extensionTools); ok && own != "" {
		return strings.Clone(own) // cli may be a view of a buffer reused later
	}
	// A host's tool named as one of pi's keeps the CLI's name: shown as
	// pi's, it would be drawn (and read back, CLIName) as the CLI's own.
	if own, ok := strings.CutPrefix(cli, hostTools); ok && own != "" && byPi[own] == nil {
		return strings.Clone(own)
	}
	return cli
}

// CLIName is the CLI's name of a tool shown as name (the inverse of
// [ToolNames.Name]).
func (n ToolNames) CLIName(name string) string {
	if n == toolNamesPi {
		if p := byPi[name]; p != nil {
			return p.CLI
		}
	}
	return name
}

// CLIToolName is the CLI's name of pi's tool pi ("read" → "Read"), "" when
// the table has none.
func CLIToolName(pi string) string {
	if p := byPi[pi]; p != nil {
		return p.CLI
	}
	return ""
}

// Args maps the CLI's arguments (a JSON object) of tool cli to the shape
// the tool is shown with. Not an object, or nothing to change: returned
// as it is.
func (n ToolNames) Args(cli string, args json.RawMessage) json.RawMessage {
	p := n.tool(cli)
	if p == nil || len(args) == 0 {
		return args
	}
	in := gjson.Parse(unsafe.String(unsafe.SliceData(args), len(args))) // read during the call only
	if !in.IsObject() || !p.changes(in) {
		return args
	}
	return p.args(in)
}

// CLIArgs maps arguments in the shape tool cli is shown with back to the
// CLI's (the inverse of [ToolNames.Args]): an extension's tool_call
// handler changed them. ok is false when they cannot be (an edit with
// other than one oldText/newText pair, which the CLI's Edit takes one
// of; not a JSON object).
func (n ToolNames) CLIArgs(cli string, args json.RawMessage) (json.RawMessage, bool) {
	in := gjson.ParseBytes(args)
	if !in.IsObject() {
		return nil, false
	}
	p := n.tool(cli)
	if p == nil {
		return args, true
	}
	back := map[string]string{}
	for k, v := range p.Keys {
		back[v] = k
	}
	out := map[string]json.RawMessage{}
	ok := true
	in.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		switch {
		case p.Edit && key == "edits":
			e := v.Array()
			if len(e) != 1 {
				ok = false
				return false
			}
			out["old_string"] = json.RawMessage(e[0].Get("oldText").Raw)
			out["new_string"] = json.RawMessage(e[0].Get("newText").Raw)
		case key == p.Seconds && v.Type == gjson.Number:
			out[key] = json.RawMessage(strconv.FormatFloat(v.Float()*1000, 'f', -1, 64))
		default:
			if r, found := back[key]; found {
				key = r
			}
			out[key] = json.RawMessage(v.Raw)
		}
		return true
	})
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(out)
	return b, err == nil
}

// changes reports whether in (a JSON object) has a member p changes.
func (p *piTool) changes(in gjson.Result) bool {
	if p.Edit {
		return true
	}
	found := false
	in.ForEach(func(k, _ gjson.Result) bool {
		_, found = p.Keys[k.String()]
		found = found || k.String() == p.Seconds
		return !found
	})
	return found
}

// args writes in (a JSON object) in pi's shape: members in the CLI's order,
// renamed; an edit's old_string and new_string become edits, where the
// first of them was.
func (p *piTool) args(in gjson.Result) json.RawMessage {
	out := make([]byte, 0, len(in.Raw)+16)
	out = append(out, '{')
	var oldS, newS gjson.Result
	if p.Edit {
		oldS, newS = in.Get("old_string"), in.Get("new_string")
	}
	edits := false
	in.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		if p.Edit && (key == "old_string" || key == "new_string") {
			if edits {
				return true
			}
			edits = true
			out = appendMember(out, "edits")
			out = append(out, `[{"oldText":`...)
			out = appendRawOr(out, oldS.Raw, `""`)
			out = append(out, `,"newText":`...)
			out = appendRawOr(out, newS.Raw, `""`)
			out = append(out, "}]"...)
			return true
		}
		if r, ok := p.Keys[key]; ok {
			key = r
		}
		out = appendMember(out, key)
		if key == p.Seconds && v.Type == gjson.Number {
			out = appendSeconds(out, v.Raw)
		} else {
			out = append(out, v.Raw...)
		}
		return true
	})
	return append(out, '}')
}

func appendMember(out []byte, key string) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	return append(appendQuoted(out, key), ':')
}

// appendQuoted appends the JSON string literal for s.
func appendQuoted(out []byte, s string) []byte {
	return append(appendEscaped(append(out, '"'), s), '"')
}

func appendRawOr(out []byte, raw, or string) []byte {
	if raw == "" {
		return append(out, or...)
	}
	return append(out, raw...)
}

// appendSeconds writes the milliseconds ms (a JSON number) in seconds.
func appendSeconds(out []byte, ms string) []byte {
	f, err := strconv.ParseFloat(ms, 64)
	if err != nil {
		return append(out, ms...)
	}
	return strconv.AppendFloat(out, f/1000, 'f', -1, 64)
}

// Details returns pi's details of a result of the CLI's tool cli from the
// CLI's structured result (tool_use_result), or the CLI's own when pi has
// none for it or the CLI did not give enough.
func (n ToolNames) Details(cli string, result gjson.Result) json.RawMessage {
	if !result.Exists() {
		return nil
	}
	if p := n.tool(cli); p != nil && p.Edit {
		if d := editDetails(result); d != nil {
			return d
		}
	}
	return json.RawMessage(result.Raw)
}

// editDetails builds pi's edit details, {diff, firstChangedLine}, from the
// CLI's structured patch (hunks of " ", "-" and "+" lines numbered from
// oldStart and newStart) and the original file: pi's display diff
// (generateDiffString in pi's edit-diff.js), each line with its number
// padded to the width of the longer file's line count, 4 lines of context
// around each change taken from the original file (the CLI's hunks have
// 3), and " <pad> ..." where lines are left out. Without the original
// file, lines the hunks do not show are left out. nil when the result has
// no patch.
func editDetails(r gjson.Result) json.RawMessage {
	hunks := r.Get("structuredPatch").Array()
	if len(hunks) == 0 {
		return nil
	}
	var orig []string // the original file's lines; unknown: nil
	known := false
	if of := r.Get("originalFile"); of.Type == gjson.String {
		known = true
		orig = strings.Split(of.String(), "\n")
		if orig[len(orig)-1] == "" { // a last "\n" ends the last line
			orig = orig[:len(orig)-1]
		}
	}
	// The changes, as runs of removed or added lines, each where it
	// starts in the old file; and, without the file, the context lines the
	// hunks show.
	type change struct {
		sign  byte
		at    int // the old line (1-based) the run starts at or is inserted before
		lines []string
	}
	var changes []change
	shown := map[int]string{}
	grow, maxNum := 0, 0
	for _, h := range hunks {
		oldNum := int(h.Get("oldStart").Int())
		if h.Get("oldLines").Int() == 0 {
			oldNum++ // an empty side is numbered from the line before
		}
		grow += int(h.Get("newLines").Int() - h.Get("oldLines").Int())
		maxNum = max(maxNum, int(h.Get("oldStart").Int()+h.Get("oldLines").Int()), int(h.Get("newStart").Int()+h.Get("newLines").Int()))
		for _, l := range h.Get("lines").Array() {
			s := l.String()
			if s == "" {
				continue
			}
			switch sign := s[0]; sign {
			case ' ':
				shown[oldNum] = s[1:]
				oldNum++
			case '-', '+':
				if n := len(changes) - 1; n >= 0 && changes[n].sign == sign && changes[n].at+lenIf(sign == '-', len(changes[n].lines)) == oldNum {
					changes[n].lines = append(changes[n].lines, s[1:])
				} else {
					changes = append(changes, change{sign: sign, at: oldNum, lines: []string{s[1:]}})
				}
				if sign == '-' {
					oldNum++
				}
			}
		}
	}
	if len(changes) == 0 {
		return nil
	}
	oldCount := len(orig)
	width := len(strconv.Itoa(maxNum))
	if known {
		// pi counts lines as split("\n") does.
		n := strings.Count(r.Get("originalFile").String(), "\n") + 1
		width = len(strconv.Itoa(max(n, n+grow)))
	} else {
		oldCount = 0
		for n := range shown {
			oldCount = max(oldCount, n)
		}
		for _, c := range changes {
			if c.sign == '-' {
				oldCount = max(oldCount, c.at+len(c.lines)-1)
			}
		}
	}
	origLine := func(n int) (string, bool) {
		if known {
			if n >= 1 && n <= len(orig) {
				return orig[n-1], true
			}
			return "", false
		}
		s, ok := shown[n]
		return s, ok
	}
	pad := strings.Repeat(" ", width)
	skip := " " + pad + " ..."
	var b strings.Builder
	lastSkip := false
	emit := func(sign byte, num int, text string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		s := strconv.Itoa(num)
		b.WriteByte(sign)
		b.WriteString(pad[min(len(s), width):])
		b.WriteString(s)
		b.WriteByte(' ')
		b.WriteString(text)
		lastSkip = false
	}
	marker := func() {
		if lastSkip {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(skip)
		lastSkip = true
	}
	// context shows the unchanged old lines from..to (inclusive) at new
	// line offset delta, as pi does: up to 4 after a change, up to 4
	// before the next, a marker for the rest.
	const contextLines = 4
	context := func(from, to int, after, before bool) {
		n := to - from + 1
		if n <= 0 {
			return
		}
		show := func(i int) {
			if s, ok := origLine(i); ok {
				emit(' ', i, s)
			} else {
				marker()
			}
		}
		switch {
		case after && before && n <= 2*contextLines:
			for i := from; i <= to; i++ {
				show(i)
			}
		case after && before:
			for i := from; i < from+contextLines; i++ {
				show(i)
			}
			marker()
			for i := to - contextLines + 1; i <= to; i++ {
				show(i)
			}
		case after:
			for i := from; i <= min(to, from+contextLines-1); i++ {
				show(i)
			}
			if n > contextLines {
				marker()
			}
		case before:
			if n > contextLines {
				marker()
			}
			for i := max(from, to-contextLines+1); i <= to; i++ {
				show(i)
			}
		}
	}
	oldNum, newNum, first := 1, 1, 0
	for i, c := range changes {
		context(oldNum, c.at-1, i > 0, true)
		newNum += c.at - oldNum
		oldNum = c.at
		if first == 0 {
			first = newNum
		}
		for _, l := range c.lines {
			if c.sign == '-' {
				emit('-', oldNum, l)
				oldNum++
			} else {
				emit('+', newNum, l)
				newNum++
			}
		}
	}
	context(oldNum, oldCount, true, false)
	out := []byte(`{"diff":`)
	out = appendQuoted(out, b.String())
	out = append(out, `,"firstChangedLine":`...)
	out = strconv.AppendInt(out, int64(first), 10)
	return append(out, '}')
}

func lenIf(c bool, n int) int {
	if c {
		return n
	}
	return 0
}

// argStream renames the arguments of one tool call as their JSON streams
// (the text of the API's input_json_delta events, unescaped), for
// toolcall_delta: what the deltas carry, concatenated, is the arguments in
// pi's shape, as [ToolNames.Args] writes them from the whole object but
// for spacing, and the order of members is the CLI's.
//
//   - A top-level key is held until it ends, then written renamed.
//   - A value pi has in other units (bash's timeout) is held until it
//     ends, then written converted.
//   - An edit's shape changes (old_string and new_string move into
//     edits[0], wherever they come): nothing streams; the whole arguments
//     come as one delta when the block ends ([argStream.whole]).
//
// Everything else passes through as it comes. The toolCall's arguments in
// the partial message stay {} until the block ends, as they do for every
// tool.
type argStream struct {
	p       *piTool
	depth   int
	inStr   bool
	esc     bool
	wantKey bool   // at depth 1 the next string is a key
	inKey   bool   // reading a top-level key (held in key)
	key     []byte // the key so far, without its quotes (in keyBuf while short)
	keyBuf  [32]byte
	conv    bool // the value after the next ':' is to be converted
	hold    bool // holding a top-level value in val until it ends
	val     []byte
}

// whole reports whether the arguments come as one delta at the end.
func (s *argStream) whole() bool { return s.p.Edit }

// write appends to dst the renamed form of chunk, the next piece of the
// arguments' JSON text.
func (s *argStream) write(dst []byte, chunk string) []byte {
	if s.whole() {
		return dst
	}
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		if s.inStr {
			if !s.inKey && !s.hold && !s.esc {
				// A value's string: copy up to its next quote or escape.
				j := i
				for j < len(chunk) && chunk[j] != '"' && chunk[j] != '\\' {
					j++
				}
				if j == len(chunk) {
					return append(dst, chunk[i:]...)
				}
				dst = append(dst, chunk[i:j]...)
				i = j
				c = chunk[i]
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			if !s.inKey {
				dst = s.put(dst, c)
				continue
			}
			if s.inStr {
				s.key = append(s.key, c)
				continue
			}
			s.inKey = false
			if r, ok := s.p.Keys[string(s.key)]; ok {
				dst = appendQuoted(dst, r)
				s.conv = r == s.p.Seconds
			} else {
				dst = append(append(append(dst, '"'), s.key...), '"')
				s.conv = string(s.key) == s.p.Seconds
			}
			s.key = s.key[:0]
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.wantKey {
				s.inKey, s.wantKey = true, false
				if s.key == nil {
					s.key = s.keyBuf[:0]
				}
				continue
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 {
				s.wantKey = true
			}
		case '}', ']':
			if s.depth == 1 {
				dst = s.release(dst)
			}
			s.depth--
		case ',':
			if s.depth == 1 {
				dst = s.release(dst)
				s.wantKey = true
			}
		case ':':
			if s.depth == 1 && s.conv {
				s.conv = false
				s.hold = true
				dst = append(dst, c)
				continue
			}
		}
		dst = s.put(dst, c)
	}
	return dst
}

func (s *argStream) put(dst []byte, c byte) []byte {
	if s.hold {
		s.val = append(s.val, c)
		return dst
	}
	return append(dst, c)
}

// release writes a held value, converted.
func (s *argStream) release(dst []byte) []byte {
	if !s.hold {
		return dst
	}
	s.hold = false
	v := strings.TrimSpace(string(s.val))
	s.val = s.val[:0]
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return appendSeconds(dst, v)
	}
	return append(dst, v...)
}

// end writes what is still held when the block ends (arguments cut off).
func (s *argStream) end(dst []byte) []byte {
	if s.whole() {
		return dst
	}
	return s.release(dst)
}

// stream returns the renaming of the input of a call of the CLI's tool
// cli, stream block idx; nil when its arguments stream as they are.
func (n ToolNames) stream(cli string, idx int) *renamed {
	if p := n.tool(cli); p != nil && (p.Edit || len(p.Keys) > 0 || p.Seconds != "") {
		return &renamed{s: argStream{p: p}, idx: idx}
	}
	return nil
}

// renamed is an argStream with the text it wrote so far, in an
// append-only buffer: the deltas are views of it, as the translator's
// other deltas are of theirs.
type renamed struct {
	s   argStream
	idx int // the stream block index of the call
	buf []byte
}

// write renames chunk, which must stay valid (a view of an append-only
// buffer), and returns what it added ("" when all is held): chunk itself
// when the renaming left it as it is (most pieces), else a view of the
// buffer. scratch is reused between calls.
func (r *renamed) write(chunk string, scratch *[]byte) string {
	if *scratch == nil {
		*scratch = make([]byte, 0, 256)
	}
	out := r.s.write((*scratch)[:0], chunk)
	*scratch = out
	if string(out) == chunk {
		return chunk
	}
	if r.buf == nil {
		r.buf = make([]byte, 0, max(128, 2*len(out)))
	}
	n := len(r.buf)
	r.buf = append(r.buf, out...)
	return unsafe.String(unsafe.SliceData(r.buf[n:]), len(r.buf)-n)
}

// end returns the last delta of the block, whose final arguments are
// args: what the rename still held, or, for a call whose arguments come
// whole, args itself.
func (r *renamed) end(args json.RawMessage) string {
	if r.s.whole() {
		return string(args)
	}
	n := len(r.buf)
	r.buf = r.s.end(r.buf)
	return string(r.buf[n:])
}

// cliCall is the call of the CLI's tool for pi's tool call name(args) (the
// inverse of [ToolNames.Name] and [ToolNames.Args] under pi's names): a
// tool of [piTools] gets the CLI's name, its arguments renamed back (bash's
// timeout in milliseconds again); an edit of one replacement is the CLI's
// Edit {file_path, old_string, new_string}, one of several the CLI's
// former MultiEdit {file_path, edits:[{old_string, new_string}]}, the
// CLI's Edit taking one. Arguments pi has and the CLI lacks keep pi's
// names. Any other tool, or arguments that are not a JSON object, are
// returned as they are.
func cliCall(name string, args json.RawMessage) (string, json.RawMessage) {
	p := byPi[name]
	if p == nil {
		return name, args
	}
	in := gjson.ParseBytes(args)
	if !in.IsObject() {
		return p.CLI, args
	}
	back := make(map[string]string, len(p.Keys))
	for cli, pi := range p.Keys {
		back[pi] = cli
	}
	cliName := p.CLI
	out := make([]byte, 0, len(args)+16)
	out = append(out, '{')
	in.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		switch {
		case p.Edit && key == "edits" && v.IsArray():
			edits := v.Array()
			if len(edits) == 1 {
				out = appendMember(out, "old_string")
				out = appendRawOr(out, edits[0].Get("oldText").Raw, `""`)
				out = appendMember(out, "new_string")
				out = appendRawOr(out, edits[0].Get("newText").Raw, `""`)
				return true
			}
			cliName = "MultiEdit"
			out = appendMember(out, "edits")
			out = append(out, '[')
			for i, e := range edits {
				if i > 0 {
					out = append(out, ',')
				}
				out = append(out, `{"old_string":`...)
				out = appendRawOr(out, e.Get("oldText").Raw, `""`)
				out = append(out, `,"new_string":`...)
				out = appendRawOr(out, e.Get("newText").Raw, `""`)
				out = append(out, '}')
			}
			out = append(out, ']')
			return true
		case p.Edit && key == "oldText": // pi's edit before edits[]
			key = "old_string"
		case p.Edit && key == "newText":
			key = "new_string"
		}
		seconds := key == p.Seconds && v.Type == gjson.Number
		if r, ok := back[key]; ok {
			key = r
		}
		out = appendMember(out, key)
		if seconds {
			out = appendMilliseconds(out, v.Raw)
		} else {
			out = append(out, v.Raw...)
		}
		return true
	})
	return cliName, append(out, '}')
}

// appendMilliseconds writes the seconds s (a JSON number) in milliseconds.
func appendMilliseconds(out []byte, s string) []byte {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return append(out, s...)
	}
	return strconv.AppendFloat(out, f*1000, 'f', -1, 64)
}
