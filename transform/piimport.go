package transform

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// PiImport says whose transcript [ImportPi] writes.
type PiImport struct {
	// SessionID is the CLI session the transcript is for.
	SessionID string
	// Cwd is the working folder the CLI runs the session in.
	Cwd string
	// Version is the CLI's version, written in each line as the CLI does
	// ("" leaves it out).
	Version string
	// Now stands for the time of an entry that carries none.
	Now time.Time
}

// ImportReport says what an import made of a pi session.
type ImportReport struct {
	// Lines is the number of transcript lines written.
	Lines int
	// Dropped names what pi's model saw and the CLI's will not, each
	// "N what (why)"; empty when nothing was.
	Dropped []string
	// Ignored names pi's entries that are no part of what the model sees
	// (settings, labels, names, pi's system prompt), each "N what".
	Ignored []string
}

// ImportPi writes a pi session's branch (its entries as pi wrote them, the
// first to the leaf: sessions.PiFile.Branch) as the lines of a CLI
// transcript the CLI resumes with that history: what the model saw in pi
// is what it sees next. The CLI (2.1.275 to 2.1.332, measured) needs of
// each line type, uuid, parentUuid (null on the first), timestamp
// (2.1.275 and 2.1.328 find no conversation without it) and message; the
// lines also carry what the CLI writes beside them (sessionId, cwd,
// version, isSidechain, userType) and piEntryId, the pi entry each came
// from.
//
// What the model is sent is pi's context of the branch (pi 1.6.0's
// buildSessionContext): from its newest compaction on, the summary and the
// entries kept; context edits applied; pi's own messages (bash commands
// run by the user, extensions' messages, branch and compaction summaries)
// as user text, as pi sends them; a compaction summary is marked
// isCompactSummary, as the CLI marks its own.
//
// Messages become the CLI's: user content with its images; assistant
// messages with their text, tool calls under the CLI's names and argument
// shapes ([cliCall]), and thinking whose Anthropic signature came with it
// (the CLI sends it to the model that signed it, and leaves it out for
// another); tool results, each a user line with pi's details as the CLI's
// toolUseResult. Tool call ids are made what the API takes
// ([A-Za-z0-9_-], at most 64); a call left without a result gets an error
// result, as pi gives it; a result whose call is not in the message before
// it is dropped. What is dropped and why is in the report: thinking
// without a signature (the API takes thinking back only with its
// signature, and the reasoning of earlier turns is not sent anyway),
// assistant messages that ended in an error or were aborted (pi leaves
// them out of the model's context too), unknown roles.
//
// Line uuids are derived from the session id, so a new id gives new
// lines. ImportPi is pure: the same input gives the same lines.
func ImportPi(entries [][]byte, in PiImport) ([][]byte, ImportReport) {
	im := importer{in: in, dropped: map[string]int{}, ignored: map[string]int{}, ids: map[string]bool{}}
	var msgs []importMsg
	for _, e := range piContext(entries, im.ignored) {
		msgs = append(msgs, im.entry(e)...)
	}
	msgs = im.pair(msgs)
	lines := im.lines(msgs)
	return lines, ImportReport{Lines: len(lines), Dropped: counted(im.dropped), Ignored: counted(im.ignored)}
}

// piEntry is one entry of a pi session, read.
type piEntry struct {
	v        gjson.Result
	typ, id  string
	replaced *gjson.Result // a context edit's replacement content; nil: none
	omitted  bool          // a context edit left the entry out
}

// piContext selects the entries pi builds the model's context from: all of
// the branch, or, after a compaction, the newest compaction, the entries
// from its firstKeptEntryId up to it (pi's system messages among them
// left out) and all after it; with the newest context edit of each entry
// applied. Entry kinds that carry no conversation are counted in ignored.
func piContext(raw [][]byte, ignored map[string]int) []piEntry {
	all := make([]piEntry, 0, len(raw))
	for _, r := range raw {
		v := gjson.ParseBytes(r)
		if !gjson.ValidBytes(r) || !v.IsObject() {
			continue // pi skips such lines too
		}
		all = append(all, piEntry{v: v, typ: v.Get("type").String(), id: v.Get("id").String()})
	}
	last := -1
	for i, e := range all {
		if e.typ == "compaction" {
			last = i
		}
	}
	ctx := all
	if last >= 0 {
		keep := all[last].v.Get("firstKeptEntryId").String()
		ctx = []piEntry{all[last]}
		kept := false
		for _, e := range all[:last] {
			kept = kept || e.id == keep
			switch {
			case !kept:
			case e.typ == "message" && e.v.Get("message.role").String() == "system":
			case e.typ == "compaction": // an older one: its summary is in the newest's
			default:
				ctx = append(ctx, e)
			}
		}
		ctx = append(ctx, all[last+1:]...)
	}
	edits := map[string]gjson.Result{}
	for _, e := range ctx {
		if e.typ == "context_edit" {
			edits[e.v.Get("targetId").String()] = e.v
		}
	}
	out := ctx[:0:0]
	for _, e := range ctx {
		if ed, ok := edits[e.id]; ok && e.id != "" {
			if r := ed.Get("replacement"); !r.Exists() || r.Type == gjson.Null {
				e.omitted = true
			} else {
				c := r.Get("content")
				e.replaced = &c
			}
		}
		switch e.typ {
		case "message", "custom_message", "branch_summary", "compaction":
			out = append(out, e)
		case "context_edit": // applied
		default:
			ignored[e.typ+" entries"]++
		}
	}
	return out
}

// importMsg is one line to write: a user or assistant message of the CLI's.
type importMsg struct {
	role    string // "user" or "assistant"
	content any    // a string, or []any of blocks
	piID    string
	ts      string // the line's timestamp
	compact bool   // a compaction's summary

	// assistant
	model, stop string
	usage       cliUsage
	calls       []cliToolUse // the tool_use blocks, also in content

	// a tool result
	result     bool
	callID     string // pi's id of its call
	toolName   string
	resultBody []any
	isError    bool
	details    json.RawMessage
}

type importer struct {
	in      PiImport
	dropped map[string]int
	ignored map[string]int
	ids     map[string]bool // tool call ids given out
}

// entry converts one context entry into the messages the CLI gets for it.
func (im *importer) entry(e piEntry) []importMsg {
	if e.omitted {
		return nil
	}
	ts := im.timestamp(e.v.Get("timestamp").String(), e.v.Get("message.timestamp").Int())
	user := func(content gjson.Result, prefix, suffix string) []importMsg {
		blocks := im.userBlocks(content, prefix, suffix)
		if len(blocks) == 0 {
			return nil
		}
		return []importMsg{{role: "user", content: blocks, piID: e.id, ts: ts}}
	}
	summary := func(s string) gjson.Result {
		b, _ := json.Marshal(s)
		return gjson.ParseBytes(b)
	}
	switch e.typ {
	case "compaction":
		m := user(summary(e.v.Get("summary").String()), compactionPrefix, compactionSuffix)
		for i := range m {
			m[i].compact = true
		}
		return m
	case "branch_summary":
		if e.v.Get("summary").String() == "" {
			return nil
		}
		return user(summary(e.v.Get("summary").String()), branchPrefix, branchSuffix)
	case "custom_message":
		return user(im.replacedOr(e, e.v.Get("content")), "", "")
	}
	msg := e.v.Get("message")
	content := im.replacedOr(e, msg.Get("content"))
	switch role := msg.Get("role").String(); role {
	case RoleUser:
		if content.Type == gjson.String {
			if strings.TrimSpace(content.String()) == "" {
				return nil
			}
			return []importMsg{{role: "user", content: content.String(), piID: e.id, ts: ts}}
		}
		return user(content, "", "")
	case "custom":
		return user(content, "", "")
	case "bashExecution":
		if msg.Get("excludeFromContext").Bool() {
			im.ignored["bash commands run by the user and kept out of the context"]++
			return nil
		}
		return user(summary(bashText(msg)), "", "")
	case "branchSummary", "compactionSummary":
		if msg.Get("summary").String() == "" {
			return nil
		}
		p, s := branchPrefix, branchSuffix
		if role == "compactionSummary" {
			p, s = compactionPrefix, compactionSuffix
		}
		return user(summary(msg.Get("summary").String()), p, s)
	case RoleAssistant:
		return im.assistant(e, msg, content, ts)
	case RoleToolResult:
		m := importMsg{role: "user", piID: e.id, ts: ts, result: true, callID: msg.Get("toolCallId").String(),
			toolName: msg.Get("toolName").String(), isError: msg.Get("isError").Bool()}
		if content.Type == gjson.String { // a context edit's
			content = summary(content.String())
		}
		m.resultBody = im.userBlocks(content, "", "")
		if d := msg.Get("details"); (d.IsObject() || d.IsArray()) && json.Valid([]byte(d.Raw)) {
			m.details = json.RawMessage(d.Raw)
		}
		return []importMsg{m}
	case "system":
		im.ignored["pi system prompts (the CLI sends its own)"]++
		return nil
	default:
		im.dropped[fmt.Sprintf("messages of role %q (no kind of the CLI's)", role)]++
		return nil
	}
}

// replacedOr is an entry's content as its context edit left it.
func (im *importer) replacedOr(e piEntry, content gjson.Result) gjson.Result {
	if e.replaced != nil {
		return *e.replaced
	}
	return content
}

func (im *importer) assistant(e piEntry, msg, content gjson.Result, ts string) []importMsg {
	switch msg.Get("stopReason").String() {
	case StopError, StopAborted:
		im.dropped["assistant messages that ended in an error or were aborted (pi leaves them out of the model's context too)"]++
		return nil
	}
	if content.Type == gjson.String { // a context edit's
		b, _ := json.Marshal([]cliText{{Type: "text", Text: content.String()}})
		content = gjson.ParseBytes(b)
	}
	anthropic := msg.Get("api").String() == "anthropic-messages"
	m := importMsg{role: "assistant", piID: e.id, ts: ts, model: msg.Get("model").String(), stop: apiStopReason(msg.Get("stopReason").String())}
	u := msg.Get("usage")
	m.usage = cliUsage{Input: u.Get("input").Int(), Output: u.Get("output").Int(), CacheRead: u.Get("cacheRead").Int(), CacheWrite: u.Get("cacheWrite").Int()}
	var blocks []any
	for _, b := range content.Array() {
		switch b.Get("type").String() {
		case "text":
			if t := b.Get("text").String(); strings.TrimSpace(t) != "" {
				blocks = append(blocks, cliText{Type: "text", Text: t})
			}
		case "thinking":
			sig := b.Get("thinkingSignature").String()
			switch {
			case sig != "" && anthropic && b.Get("redacted").Bool():
				blocks = append(blocks, cliRedacted{Type: "redacted_thinking", Data: sig})
			case sig != "" && anthropic:
				blocks = append(blocks, cliThinking{Type: "thinking", Thinking: b.Get("thinking").String(), Signature: sig})
			case strings.TrimSpace(b.Get("thinking").String()) != "":
				im.dropped["thinking blocks without an Anthropic signature (the API takes thinking back only with its signature)"]++
			}
		case "toolCall":
			name, args := cliCall(b.Get("name").String(), json.RawMessage(b.Get("arguments").Raw))
			if !json.Valid(args) || !gjson.ParseBytes(args).IsObject() {
				args = json.RawMessage("{}")
			}
			call := cliToolUse{Type: "tool_use", ID: b.Get("id").String(), Name: name, Input: args}
			m.calls = append(m.calls, call)
			blocks = append(blocks, call)
		default:
			im.dropped[fmt.Sprintf("assistant content blocks of type %q (no kind the API takes from the model)", b.Get("type").String())]++
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	m.content = blocks
	return []importMsg{m}
}

// userBlocks is pi's user content (a string, or text and image blocks) as
// the CLI's blocks, between prefix and suffix when it is text; blank text
// is left out (the API refuses it).
func (im *importer) userBlocks(content gjson.Result, prefix, suffix string) []any {
	var blocks []any
	text := func(s string) {
		if strings.TrimSpace(s) != "" {
			blocks = append(blocks, cliText{Type: "text", Text: prefix + s + suffix})
		}
	}
	if content.Type == gjson.String {
		text(content.String())
		return blocks
	}
	for _, b := range content.Array() {
		switch b.Get("type").String() {
		case "text":
			text(b.Get("text").String())
		case "image":
			blocks = append(blocks, cliImageOf(b))
		default:
			im.dropped[fmt.Sprintf("user content blocks of type %q", b.Get("type").String())]++
		}
	}
	return blocks
}

// pair gives each tool call an id the API takes and puts its result after
// it: a call whose result never comes gets an error result before the next
// message; a result whose call is not in the assistant message before it
// is dropped.
func (im *importer) pair(msgs []importMsg) []importMsg {
	out := make([]importMsg, 0, len(msgs))
	var open []cliToolUse    // the last assistant message's calls, with new ids
	idOf := map[string]int{} // pi's id → index in open
	answered := map[int]bool{}
	closeOpen := func(ts string) {
		for i, c := range open {
			if !answered[i] {
				out = append(out, importMsg{role: "user", ts: ts, result: true, callID: c.ID, toolName: c.Name, isError: true,
					resultBody: []any{cliText{Type: "text", Text: noResult}}})
				im.dropped["tool calls without a result (each given an error result)"]++
			}
		}
		open, idOf, answered = nil, map[string]int{}, map[int]bool{}
	}
	for _, m := range msgs {
		switch {
		case m.result:
			i, ok := idOf[m.callID]
			if !ok || answered[i] {
				im.dropped["tool results whose call is not in the message before them"]++
				continue
			}
			answered[i] = true
			m.callID = open[i].ID
			out = append(out, m)
		case m.role == "assistant":
			closeOpen(m.ts)
			blocks := m.content.([]any)
			for i, b := range blocks {
				c, ok := b.(cliToolUse)
				if !ok {
					continue
				}
				if _, dup := idOf[c.ID]; !dup { // one id twice: the second gets no result of pi's
					idOf[c.ID] = len(open)
				}
				c.ID = im.callID(c.ID)
				blocks[i] = c
				open = append(open, c)
			}
			out = append(out, m)
		default:
			closeOpen(m.ts)
			out = append(out, m)
		}
	}
	end := im.in.Now.UTC().Format(cliTime)
	if len(out) > 0 {
		end = out[len(out)-1].ts
	}
	closeOpen(end)
	return out
}

// noResult is the result given to a tool call pi recorded none for.
const noResult = "No result was recorded for this tool call."

var badIDChar = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// callID is a tool call id the API takes, made from pi's and given out
// once.
func (im *importer) callID(id string) string {
	base := badIDChar.ReplaceAllString(id, "_")
	if base == "" {
		base = "toolu_pi"
	}
	if len(base) > 64 {
		base = base[:64]
	}
	out := base
	for n := 2; im.ids[out]; n++ {
		suffix := "_" + strconv.Itoa(n)
		out = base[:min(len(base), 64-len(suffix))] + suffix
	}
	im.ids[out] = true
	return out
}

// lines writes the messages as transcript lines, each the child of the one
// before.
func (im *importer) lines(msgs []importMsg) [][]byte {
	out := make([][]byte, 0, len(msgs))
	var parent *string
	lastAssistant := ""
	for i, m := range msgs {
		id := lineUUID(im.in.SessionID, i)
		line := transcriptLine{ParentUUID: parent, Type: m.role, UUID: id, Timestamp: m.ts, UserType: "external",
			Cwd: im.in.Cwd, SessionID: im.in.SessionID, Version: im.in.Version, PiEntryID: m.piID, IsCompactSummary: m.compact}
		switch {
		case m.role == "assistant":
			line.Message = cliAssistantMsg{ID: "msg_pi_" + strings.ReplaceAll(id, "-", "")[:24], Type: "message", Role: "assistant", Model: m.model,
				Content: m.content.([]any), StopReason: m.stop, Usage: m.usage}
			lastAssistant = id
		case m.result:
			body := m.resultBody
			if len(body) == 0 {
				body = nil
			}
			line.Message = cliUserMsg{Role: "user", Content: []any{cliToolResult{Type: "tool_result", ToolUseID: m.callID, Content: body, IsError: m.isError}}}
			line.ToolUseResult = m.details
			line.SourceToolAssistantUUID = lastAssistant
		default:
			line.Message = cliUserMsg{Role: "user", Content: m.content}
		}
		b, err := marshalNoEscape(line)
		if err != nil { // the values above always encode
			continue
		}
		out = append(out, b)
		parent = &line.UUID
	}
	return out
}

// cliTime is how the CLI writes a line's timestamp.
const cliTime = "2006-01-02T15:04:05.000Z"

// timestamp is an entry's time as the CLI writes it: its ISO time, else
// its message's (Unix milliseconds), else now.
func (im *importer) timestamp(iso string, ms int64) string {
	if t, err := time.Parse(time.RFC3339Nano, iso); err == nil {
		return t.UTC().Format(cliTime)
	}
	if ms > 0 {
		return time.UnixMilli(ms).UTC().Format(cliTime)
	}
	return im.in.Now.UTC().Format(cliTime)
}

// lineUUID is the uuid of the n-th line of session id's import (a
// name-based UUID, version 5).
func lineUUID(session string, n int) string {
	h := sha1.Sum([]byte("claude-rpc pi import:" + session + ":" + strconv.Itoa(n)))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// apiStopReason is the API's stop_reason for pi's.
func apiStopReason(pi string) string {
	switch pi {
	case StopToolUse:
		return "tool_use"
	case StopLength:
		return "max_tokens"
	default:
		return "end_turn"
	}
}

// The words pi's own kinds of message reach the model in: pi sends each as
// a user message's text.
const (
	compactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	compactionSuffix = "\n</summary>"
	branchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	branchSuffix     = "</summary>"
)

// bashText is a command the user ran in pi (its bashExecution message) as
// the text pi gives the model.
func bashText(m gjson.Result) string {
	var b strings.Builder
	b.WriteString("Ran `" + m.Get("command").String() + "`\n")
	if out := m.Get("output").String(); out != "" {
		b.WriteString("```\n" + out + "\n```")
	} else {
		b.WriteString("(no output)")
	}
	if m.Get("cancelled").Bool() {
		b.WriteString("\n\n(command cancelled)")
	} else if c := m.Get("exitCode"); c.Type == gjson.Number && c.Int() != 0 {
		b.WriteString("\n\nCommand exited with code " + c.Raw)
	}
	if m.Get("truncated").Bool() && m.Get("fullOutputPath").String() != "" {
		b.WriteString("\n\n[Output truncated. Full output: " + m.Get("fullOutputPath").String() + "]")
	}
	return b.String()
}

// counted writes counts as "N what", sorted by what.
func counted(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for what, n := range m {
		out = append(out, strconv.Itoa(n)+" "+what)
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.SplitN(out[i], " ", 2)[1] < strings.SplitN(out[j], " ", 2)[1]
	})
	return out
}

// The CLI's transcript line and message shapes, in its key order.
type (
	transcriptLine struct {
		ParentUUID              *string         `json:"parentUuid"`
		IsSidechain             bool            `json:"isSidechain"`
		Type                    string          `json:"type"`
		Message                 any             `json:"message"`
		UUID                    string          `json:"uuid"`
		Timestamp               string          `json:"timestamp"`
		IsCompactSummary        bool            `json:"isCompactSummary,omitempty"`
		ToolUseResult           json.RawMessage `json:"toolUseResult,omitempty"`
		SourceToolAssistantUUID string          `json:"sourceToolAssistantUUID,omitempty"`
		UserType                string          `json:"userType"`
		Cwd                     string          `json:"cwd"`
		SessionID               string          `json:"sessionId"`
		Version                 string          `json:"version,omitempty"`
		PiEntryID               string          `json:"piEntryId,omitempty"`
	}
	cliUserMsg struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	cliAssistantMsg struct {
		ID           string   `json:"id"`
		Type         string   `json:"type"`
		Role         string   `json:"role"`
		Model        string   `json:"model,omitempty"`
		Content      []any    `json:"content"`
		StopReason   string   `json:"stop_reason"`
		StopSequence *string  `json:"stop_sequence"`
		Usage        cliUsage `json:"usage"`
	}
	cliUsage struct {
		Input      int64 `json:"input_tokens"`
		CacheWrite int64 `json:"cache_creation_input_tokens"`
		CacheRead  int64 `json:"cache_read_input_tokens"`
		Output     int64 `json:"output_tokens"`
	}
	cliText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	cliThinking struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	cliRedacted struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	cliToolUse struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	cliToolResult struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   []any  `json:"content,omitempty"`
		IsError   bool   `json:"is_error,omitempty"`
	}
	cliImage struct {
		Type   string         `json:"type"`
		Source cliImageSource `json:"source"`
	}
	cliImageSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
)

func cliImageOf(b gjson.Result) cliImage {
	return cliImage{Type: "image", Source: cliImageSource{Type: "base64", MediaType: b.Get("mimeType").String(), Data: b.Get("data").String()}}
}
