package transform

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// pi's names for where an assistant message came from.
const (
	API      = "anthropic-messages"
	Provider = "anthropic"
)

// Results given to tool calls the CLI never answered: the run ended first
// (aborted, crashed), or the next model call began without the result.
const (
	toolAbortedMessage  = "Tool execution was aborted"
	toolNoResultMessage = "No result was reported for this tool call"
)

// streamCutMessage is the error of an assistant message whose API stream
// broke off; what streamed before stays in it.
const streamCutMessage = "The API response broke off before the message ended"

// Translator turns the stdout lines of the CLI processes of one run (one
// prompt, from agent_start to agent_end) into protocol events. It is not safe
// for concurrent use; one goroutine feeds it.
//
// What it relies on the CLI printing, per model call (true of 2.1.328,
// whose output testdata/cli records and the tests replay): with --include-partial-messages, stream_event lines carrying
// the API's events, and one complete assistant line per content block, which
// arrives just before that block's content_block_stop. Thinking deltas are
// not relayed (system/thinking_tokens counts come instead), so the complete
// line supplies the thinking text. The CLI may run a tool as soon as its
// block is complete, so a tool's result can arrive before message_stop.
// user lines carry tool results, and synthetic user messages (the
// continuation after max_tokens, a compaction summary, local command output).
// result ends the run.
//
// The events follow pi's order: each model call is one turn; the assistant
// message streams as message_update; at its message_end, tool_execution_start
// for each tool call; each tool result as tool_execution_end and a toolResult
// message; turn_end; and at the end agent_end with the run's messages.
//
// Tool calls are shown with the names and argument shapes [ToolNames]
// says (pi's by default, toolnames.go), in every event and message.
type Translator struct {
	now func() int64

	sessionID string
	model     string
	limits    Limits
	fastMode  string // the CLI's fast_mode_state

	// thinkingLevel is the level the run's model calls are made with
	// (SetThinkingLevel); callStart is when the next model call's cause
	// came (the prompt, a tool result), for assistant durationMs.
	thinkingLevel string
	callStart     int64

	messages []Message // this run's messages, in order
	ended    bool      // agent_end emitted

	// The open turn: its assistant message (index into messages, -1 when
	// none yet) and its tool results.
	turnOpen      bool
	turnAssistant int
	toolResults   []Message

	cur     *assistantState // the assistant message being built, nil between messages
	lastID  string          // API message id of the last assistant message ended
	pending int             // index into messages of a final message whose message_end waits for the result (its cost), or -1
	// withEsc: indexes into messages of the turn's streamed messages,
	// which keep their blocks' escape offsets (see [Content]) for the
	// frames that carry them whole (message_end, turn_end, agent_end)
	// until the turn ends.
	withEsc []int

	running map[string]Content // tool calls started and not yet answered, by id
	// startedAt is when each tool_execution_start was shown, by id.
	startedAt map[string]int64
	order     []string         // their ids in call order
	early     []toolResultLine // tool results that came while their message was open

	afterCompact bool // a compact_boundary was seen: the next synthetic user message is its summary
	compacting   bool // compaction_start shown, its end not yet
	// manualCompact: the run is /compact, whose compaction is its reply,
	// not an automatic one.
	manualCompact bool
	compaction    *Compaction // the last compaction, its summary once seen

	// hold: a result ends the CLI turn, not the run ([Translator.HoldResults]).
	hold         bool
	atResult     bool      // the last line was a result the caller has not decided on
	deferred     []Message // steering messages started while a message or tools were open
	between      bool      // a result ended a turn of a run that goes on
	resultFailed bool      // the last result was an error

	retry int // the CLI's API retry attempt in progress, 0 when none

	// parent is the Agent tool call whose sub-agent this translator shows
	// (its lines carry it as parent_tool_use_id); "" for the session's own
	// conversation.
	parent string
	// subagents are the sub-agents running, by their Agent tool call;
	// subagentCount counts those the run started (subagents.go).
	subagents     map[string]*subagent
	subagentCount int
	keepDetached  bool

	// names: the names and argument shapes tool calls are shown with.
	names ToolNames

	// denied: why the CLI refused tool calls not yet answered
	// (permission_denied), by id; resets: how often the CLI cleared the
	// conversation during the run, the last time at message resetAt
	// (resetOpen: in the turn under way, whose end is the new
	// conversation's start); commands: the last commands_changed's list,
	// until taken (notices.go).
	denied map[string]denial
	// extras are what tool results carry that the CLI's lines do not (a
	// tool the bridge served over MCP: an extension's), by call id, until
	// its result comes.
	extras    map[string]ToolExtras
	resets    int
	resetAt   int
	resetOpen bool
	commands  json.RawMessage

	// Reused indexes of the line being read, its message and a block.
	top, msg, block object
	// scratch is reused to rename each piece of a tool's streamed input.
	scratch []byte

	// A long line read in pieces (pieces.go): the one being read; the
	// last one read, which the next Append is given (its own array: it
	// is read in place), and the streamed text left out of it.
	long     *longLine
	piecesOf []byte
	hole     hole
}

// HoldResults makes a result line end the CLI turn but not the run: after
// a line for which [Translator.AtResult] reports true, the caller ends the
// run ([Translator.End]) or goes on to another turn ([Translator.NextTurn])
// before it feeds the next line. Without it, a result ends the run (a
// transcript, a compaction, a test). The translator never asks its caller
// anything: whoever feeds it decides, with what it reports.
func (t *Translator) HoldResults() { t.hold = true }

// AtResult reports whether the last line was a result waiting for the
// caller's decision, and whether that result was an error.
func (t *Translator) AtResult() (at, failed bool) { return t.atResult, t.resultFailed }

// NextTurn ends the turn of a held result: the run waits between turns for
// [Translator.Inject], [Translator.Steered] or [Translator.End].
func (t *Translator) NextTurn() []Event {
	if !t.atResult || t.ended {
		return nil
	}
	t.atResult = false
	out := t.endAssistant(nil)
	out = t.flushPending(out)
	out = t.endTurn(t.emptyAssistant(out))
	t.dropEscapes()
	t.between = true
	return out
}

// Between reports whether a result ended a turn and the run waits for
// [Translator.Inject] or [Translator.End].
func (t *Translator) Between() bool { return t.between && !t.ended }

// Inject continues a run that waits between turns with a user message the
// bridge delivers (steering or a follow-up): a new turn opens with it.
func (t *Translator) Inject(user Message) []Event {
	if t.ended {
		return nil
	}
	t.callStart = t.now() // the next model call answers it
	return t.userMessage(t.turnBoundary(nil), user)
}

// userMessage shows a user message the bridge delivered.
func (t *Translator) userMessage(out []Event, user Message) []Event {
	t.messages = append(t.messages, user)
	return append(out, Event{Type: EventMessageStart, Message: user.Clone()}, Event{Type: EventMessageEnd, Message: user.Clone()})
}

// Steered shows a user message the CLI started while the run went on (a
// steering message the bridge handed it mid-turn): now, as a new turn, if
// the run is between model calls; else, while a message streams or tools
// run, at the next turn boundary, where the model gets it.
func (t *Translator) Steered(m Message) []Event {
	if t.ended {
		return nil
	}
	t.atResult = false
	if t.cur != nil || len(t.running) > 0 {
		t.deferred = append(t.deferred, m)
		return nil
	}
	t.callStart = t.now() // the next model call answers it
	return t.userMessage(t.turnBoundary(nil), m)
}

// End ends a run that waits between turns: agent_end.
func (t *Translator) End() []Event {
	if t.ended {
		return nil
	}
	return t.endRun(nil, StopAborted, abortedMessage)
}

// renamed returns the renaming of stream block idx's tool input, nil
// when it streams as it is.
func (a *assistantState) renamed(idx int) *renamed {
	for _, r := range a.args {
		if r.idx == idx {
			return r
		}
	}
	return nil
}

// assistantState is an assistant message being built from the CLI's lines.
type assistantState struct {
	msg      Message
	id       string         // the API's message id
	streamed bool           // built from stream_event lines (else from complete assistant lines)
	blocks   map[int]int    // stream block index → index in msg.Content (-1: a kind not shown)
	json     map[int][]byte // stream block index → the tool input JSON so far
	// args: stream block index → the renaming of a tool's input as it
	// streams, with what it wrote so far, for tools shown in another shape
	// (toolnames.go).
	args     []*renamed
	text     map[int][]byte // content index → the text of a text or thinking block so far
	esc      map[int]escBuf // content index → where that text has characters to escape
	complete int            // complete assistant lines seen: the stream index they describe
	stopped  bool           // the API's message_delta said why the message ended
}

// NewTranslator returns a translator for one run. now returns the time in
// Unix milliseconds; it stamps messages.
func NewTranslator(now func() int64) *Translator {
	return &Translator{now: now, turnAssistant: -1, pending: -1, running: map[string]Content{}}
}

// SetToolNames sets the names and argument shapes tool calls are shown
// with (default [toolNamesPi]); call it before the first line.
func (t *Translator) SetToolNames(n ToolNames) { t.names = n }

// ToolExtras are what a tool's result carries that the CLI's line does not:
// a tool the bridge served itself (an extension's, over MCP), whose
// result only the bridge has whole.
type ToolExtras struct {
	// Details are the result's details; the CLI's own win when it gives
	// some.
	Details json.RawMessage
	// Usage is what the tool spent (a sub-agent's tokens and cost).
	Usage json.RawMessage
}

// ToolExtras gives the extras of call id's result. Call it before the
// result's line.
func (t *Translator) ToolExtras(id string, x ToolExtras) {
	if t.extras == nil {
		t.extras = map[string]ToolExtras{}
	}
	t.extras[id] = x
}

// SetThinkingLevel names the thinking level the run's model calls are made
// with, for its assistant messages (pi's level names).
func (t *Translator) SetThinkingLevel(level string) { t.thinkingLevel = level }

// SessionID is the CLI's session id, once a line has told it.
func (t *Translator) SessionID() string { return t.sessionID }

// Model is the model the CLI reported for this run, if any.
func (t *Translator) Model() string { return t.model }

// Limits are a model's context window and output cap, in tokens.
type Limits struct {
	ContextWindow int64
	MaxTokens     int64
}

// Compaction returns the last compaction the CLI reported, nil if none.
func (t *Translator) Compaction() *Compaction { return t.compaction }

// Limits returns what the CLI's result reported for the run's model; zero
// until then.
func (t *Translator) Limits() Limits { return t.limits }

// Ended reports whether agent_end has been emitted.
func (t *Translator) Ended() bool { return t.ended }

// Messages returns the messages of the run so far (once it ended, without
// the escape offsets its frames used).
func (t *Translator) Messages() []Message { return t.messages }

// Start begins the run with the user's message: agent_start, turn_start and
// the user message's message_start and message_end.
func (t *Translator) Start(user Message) []Event {
	t.messages = append(t.messages, user)
	t.callStart = t.now()
	if len(user.Content) > 0 {
		t.manualCompact = strings.HasPrefix(user.Content[0].Text, "/compact")
	}
	t.turnOpen = true
	return []Event{
		{Type: EventAgentStart},
		{Type: EventTurnStart},
		{Type: EventMessageStart, Message: user.Clone()},
		{Type: EventMessageEnd, Message: user.Clone()},
	}
}

// StartOwn begins a run the CLI began by itself, with no prompt (it
// answers a background task that ended while idle): agent_start and
// turn_start; the turn's lines follow.
func (t *Translator) StartOwn() []Event {
	t.callStart = t.now()
	t.turnOpen = true
	return []Event{{Type: EventAgentStart}, {Type: EventTurnStart}}
}

// With shows another user message in the turn just started, before the
// model's answer: one the model gets with the prompt (a steering message
// queued while idle, delivered with the next prompt, as pi 1.5 does).
func (t *Translator) With(user Message) []Event {
	if t.ended {
		return nil
	}
	return t.userMessage(nil, user)
}

// Line translates one line of the CLI's stdout. Lines that are not JSON
// objects, and kinds it does not map, give no events.
func (t *Translator) Line(line []byte) []Event { return t.Append(nil, line) }

// streamEventPrefix starts every stream_event line the CLI prints: its hot
// path, one line per API delta.
var streamEventPrefix = []byte(`{"type":"stream_event",`)

// Append is [Translator.Line] appending the events to dst, so a caller can
// reuse one slice for every line. line is only read during the call.
func (t *Translator) Append(dst []Event, line []byte) []Event {
	owned := len(line) > 0 && len(t.piecesOf) == len(line) && &t.piecesOf[0] == &line[0]
	if !owned {
		t.hole = hole{}
	}
	t.piecesOf = nil
	defer func() { t.hole = hole{} }()
	if t.ended || !gjson.ValidBytes(line) {
		return dst
	}
	if bytes.HasPrefix(line, streamEventPrefix) {
		return t.streamLine(dst, line)
	}
	defer t.release()
	// Members are found in one walk of the line: gjson.Get walks from the
	// start for each, and the CLI's assistant and result lines carry the
	// whole reply before most of them. Those two are read in place (their
	// paths copy what they keep); any other line is read from a copy, as
	// strings taken from it may be kept.
	v := t.top.index(unsafe.String(unsafe.SliceData(line), len(line)))
	typ := v.Get("type").String()
	if !owned && !t.inPlace(typ, v) {
		v = t.top.index(string(line))
	}
	t.noteSession(v.Get("session_id"))
	out := dst
	parent := v.Get("parent_tool_use_id").String()
	if parent != t.parent && t.parent != "" {
		return out // not this sub-agent's
	}
	// A sub-agent's line is, to this conversation, a line like any other
	// it does not show.
	if t.pending >= 0 && typ != "result" {
		out = t.flushPending(out) // more is coming: the run did not end with that message
	}
	if t.cur != nil && !t.cur.streamed && !(typ == "assistant" && parent == t.parent && v.Get("message.id").String() == t.cur.id) {
		out = t.endAssistant(out) // a message assembled from complete lines ends at the next line
	}
	if parent != t.parent {
		return t.subagentLine(out, parent, line) // a sub-agent's conversation, not this one
	}
	switch typ {
	case "system":
		switch v.Get("subtype").String() {
		case "init":
			if m := v.Get("model").String(); m != "" {
				t.model = m
			}
			t.noteFastMode(v)
		case "compact_boundary":
			t.afterCompact = true
			md := v.Get("compact_metadata")
			t.compaction = &Compaction{FirstKeptEntryID: v.Get("uuid").String(), TokensBefore: md.Get("pre_tokens").Int(),
				Details: &CompactionDetails{Trigger: md.Get("trigger").String(), TokensAfter: md.Get("post_tokens").Int()}}
		case "status":
			// The CLI compacts on its own (or for /compact): start, then a
			// status with its outcome; a success is followed by the
			// boundary and the summary.
			switch {
			case v.Get("status").String() == "compacting" && !t.manualCompact && !t.compacting:
				t.compacting = true
				out = append(out, Event{Type: EventCompactionStart, Reason: "threshold"})
			case t.compacting && v.Get("compact_result").String() == "failed":
				t.compacting = false
				out = append(out, Event{Type: EventCompactionEnd, Reason: "threshold", ErrorMessage: "compaction failed: " + v.Get("compact_error").String()})
			}
			out = t.notice(out, "status", v) // a permission mode
		case "task_started", "task_progress", "task_notification":
			if t.parent == "" {
				out = t.taskLine(out, v.Get("subtype").String(), v)
			}
		case "api_retry":
			prev := t.retry
			// Printed before each wait between attempts (the failed
			// attempts themselves are not shown).
			// An attempt number is what pairs the start with its end; a
			// line without one counts on from the last.
			if t.retry = int(v.Get("attempt").Int()); t.retry <= 0 {
				t.retry = prev + 1
			}
			msg := v.Get("error").String()
			if st := v.Get("error_status").Int(); st != 0 {
				msg = strconv.FormatInt(st, 10) + " " + msg
			}
			out = append(out, Event{Type: EventAutoRetryStart, Retry: &Retry{Attempt: t.retry,
				MaxAttempts: int(v.Get("max_retries").Int()), DelayMs: v.Get("retry_delay_ms").Int(), ErrorMessage: msg}})
		default:
			out = t.notice(out, v.Get("subtype").String(), v)
		}
		return out
	case "rate_limit_event", "auth_status", "conversation_reset":
		return t.notice(out, typ, v)
	case "assistant":
		return t.assistant(out, v)
	case "user":
		return t.user(out, v)
	case "result":
		return t.result(out, v)
	}
	return out
}

// noteFastMode records the CLI's fast mode state (off, cooldown or on) an
// init or result line tells.
func (t *Translator) noteFastMode(v *object) {
	if s := v.Get("fast_mode_state").String(); s != "" && s != t.fastMode {
		t.fastMode = strings.Clone(s) // a result is read in place
	}
}

// FastMode is the CLI's fast mode state as its last init or result line
// told it: off, cooldown or on; "" when none did.
func (t *Translator) FastMode() string { return t.fastMode }

// noteSession records the session id a line names.
func (t *Translator) noteSession(sid gjson.Result) {
	if s := sid.String(); s != "" && s != t.sessionID {
		t.sessionID = strings.Clone(s) // the line may be read in place
	}
}

// inPlace reports whether a line of type typ is read without copying it:
// a result, or the complete line of a block of the message being
// streamed, which keep no string of the line.
func (t *Translator) inPlace(typ string, v *object) bool {
	switch typ {
	case "result":
		return true
	case "assistant":
		c := t.cur
		return c != nil && c.streamed && t.msg.index(v.raw("message")).Get("id").String() == c.id &&
			!v.Get("is_api_error_message").Bool() && !v.Get("error").Exists() && v.Get("parent_tool_use_id").String() == ""
	}
	return false
}

// release drops the views of the last line, which may be large (the
// reply, in the CLI's assistant and result lines).
func (t *Translator) release() {
	t.top.reset()
	t.msg.reset()
	t.block.reset()
}

// streamLine handles a stream_event line without copying it: the line is
// walked in place ([fields]) and values are taken raw. Strings kept past the
// call are cloned; delta text is unescaped straight into the block's buffer.
func (t *Translator) streamLine(out []Event, line []byte) []Event {
	var ev, parent string
	fields(unsafe.String(unsafe.SliceData(line), len(line)), func(k, v string) bool {
		switch k {
		case "event":
			ev = v
		case "session_id":
			if sid := rawString(v); sid != "" && sid != t.sessionID {
				t.sessionID = strings.Clone(sid) // v views a line that will be reused
			}
		case "parent_tool_use_id":
			parent = v
		}
		return true
	})
	p := rawString(parent)
	if p != t.parent && t.parent != "" {
		return out // not this sub-agent's
	}
	if t.pending >= 0 {
		out = t.flushPending(out)
	}
	if t.cur != nil && !t.cur.streamed {
		out = t.endAssistant(out)
	}
	if p != t.parent {
		return t.subagentLine(out, p, line) // a sub-agent's stream, not this conversation's
	}
	return t.streamEvent(out, ev)
}

// streamEvent maps one raw API streaming event (raw JSON). ev may view a
// line that will be reused: strings kept are cloned.
func (t *Translator) streamEvent(out []Event, ev string) []Event {
	var typ, delta, block, message, usage string
	idx := -1
	fields(ev, func(k, v string) bool {
		switch k {
		case "type":
			typ = rawString(v)
		case "index":
			idx = rawInt(v)
		case "delta":
			delta = v
		case "content_block":
			block = v
		case "message":
			message = v
		case "usage":
			usage = v
		}
		return true
	})
	if typ == "message_start" {
		out = t.endRetry(out, true, "")
		out = t.endAssistant(out)
		out = t.turnBoundary(out)
		m := gjson.Parse(message)
		t.cur = t.newAssistant(strings.Clone(m.Get("id").String()), strings.Clone(m.Get("model").String()), true)
		addUsage(&t.cur.msg.Usage, m.Get("usage"))
		return append(out, t.snapshot(EventMessageStart, AssistantEvent{}))
	}
	c := t.cur
	if c == nil || !c.streamed {
		return out
	}
	switch typ {
	case "content_block_start":
		cb := gjson.Parse(block)
		var b Content
		var kind string
		switch cb.Get("type").String() {
		case "text":
			b, kind = TextContent(strings.Clone(cb.Get("text").String())), TextStart
		case "thinking":
			b, kind = Content{Type: "thinking", Thinking: strings.Clone(cb.Get("thinking").String())}, ThinkingStart
		case "redacted_thinking":
			b, kind = Content{Type: "thinking"}, ThinkingStart
		case "tool_use", "server_tool_use":
			name := cb.Get("name").String()
			shown := t.names.Name(name) // pi's name: a constant
			if shown == name {
				shown = strings.Clone(name) // a view of the line
			}
			b, kind = Content{Type: "toolCall", ID: strings.Clone(cb.Get("id").String()), Name: shown}, ToolcallStart
			c.json[idx] = nil
			if r := t.names.stream(name, idx); r != nil {
				c.args = append(c.args, r)
			}
		default:
			c.blocks[idx] = -1
			return out
		}
		c.blocks[idx] = len(c.msg.Content)
		c.msg.Content = append(c.msg.Content, b)
		return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: kind, ContentIndex: c.blocks[idx]}))
	case "content_block_delta":
		ci, ok := c.blocks[idx]
		if !ok || ci < 0 {
			return out
		}
		var dtype, text string
		fields(delta, func(k, v string) bool {
			switch k {
			case "type":
				dtype = rawString(v)
			case "text", "thinking", "partial_json":
				text = v
			}
			return true
		})
		switch dtype {
		case "text_delta", "thinking_delta":
			return t.appendRaw(out, ci, text)
		case "input_json_delta":
			buf := c.json[idx]
			n := len(buf)
			buf = appendJSONString(buf, text)
			c.json[idx] = buf
			d := unsafe.String(unsafe.SliceData(buf[n:]), len(buf)-n) // append-only: stays valid
			if r := c.renamed(idx); r != nil {
				if d = r.write(d, &t.scratch); d == "" {
					return out // held (a key, a value to convert, an edit)
				}
			}
			return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallDelta, ContentIndex: ci, Delta: d}))
		}
		return out // signature_delta, citations_delta: nothing to show
	case "content_block_stop":
		ci, ok := c.blocks[idx]
		if !ok || ci < 0 {
			return out
		}
		b := &c.msg.Content[ci]
		switch b.Type {
		case "text":
			return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: TextEnd, ContentIndex: ci, Content: b.Text, parts: b.parts}))
		case "thinking":
			return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ThinkingEnd, ContentIndex: ci, Content: b.Thinking, parts: b.parts}))
		case "toolCall":
			if len(b.Arguments) == 0 { // no complete line came for it
				b.Arguments = t.names.Args(t.names.CLIName(b.Name), jsonObject(string(c.json[idx])))
			}
			if r := c.renamed(idx); r != nil {
				// What the rename still held; an edit's arguments, whole.
				if d := r.end(b.Arguments); d != "" {
					out = append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallDelta, ContentIndex: ci, Delta: d}))
				}
			}
			call := *b
			return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallEnd, ContentIndex: ci, ToolCall: &call}))
		}
	case "message_delta":
		if sr := gjson.Get(delta, "stop_reason").String(); sr != "" {
			c.msg.StopReason, c.msg.RawStopReason = stopReason(sr), strings.Clone(sr)
			c.stopped = true
		}
		setUsage(&c.msg.Usage, gjson.Parse(usage))
	case "message_stop":
		if !c.stopped {
			// The API never said why the message ended: the CLI closes a
			// message whose stream broke off (a dropped connection:
			// TestConnectionCutMidStream), then retries the call as a new
			// message.
			c.msg.StopReason, c.msg.ErrorMessage = StopError, streamCutMessage
		}
		return t.endAssistant(out)
	}
	return out
}

// appendText adds streamed text to a text or thinking block.
func (t *Translator) appendText(out []Event, ci int, s string) []Event {
	return t.appendTo(out, ci, s, "")
}

// appendRaw adds a JSON string (raw, with its quotes) to a text or thinking
// block, unescaping it straight into the block's buffer.
func (t *Translator) appendRaw(out []Event, ci int, raw string) []Event {
	return t.appendTo(out, ci, "", raw)
}

// appendTo grows block ci's text with s, or with the value of the JSON
// string literal raw, and emits the delta.
//
// The block's text grows in an append-only buffer and the block holds a
// string view of it, as the delta does of the part added. Appending never
// changes bytes a view already covers (it writes past them, or into a new
// array), so the strings in earlier events stay valid, and a delta costs
// O(len(delta)), not O(len(text)). The same holds for the text's escaped
// JSON, kept beside it for the frames ([Encoder]).
func (t *Translator) appendTo(out []Event, ci int, s, raw string) []Event {
	b := &t.cur.msg.Content[ci]
	buf, ok := t.cur.text[ci]
	if !ok { // start from what the block already has
		if b.Type == "thinking" {
			buf = append(buf, b.Thinking...)
		} else {
			buf = append(buf, b.Text...)
		}
	}
	need := max(len(s), len(raw)) // raw unescapes to no more than its length
	if len(buf)+need > cap(buf) && len(buf) >= partSize/2 {
		buf = t.cur.seal(ci, b, buf)
	}
	n := len(buf)
	buf = roomFor(buf, need)
	if raw != "" {
		buf = appendJSONString(buf, raw)
	} else {
		buf = append(buf, s...)
	}
	t.cur.text[ci] = buf
	view := unsafe.String(unsafe.SliceData(buf), len(buf))
	b.escOf, b.escAt = t.cur.escape(ci, view, n, raw)
	kind := TextDelta
	if b.Type == "thinking" {
		b.Thinking = view
		kind = ThinkingDelta
	} else {
		b.Text = view
	}
	return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: kind, ContentIndex: ci, Delta: view[n:]}))
}

// seal makes block b's text so far (buf, its last part) one of its parts,
// all but a character cut at its end (escape leaves it unscanned), which
// begins the new array that the text goes on in, returned. The part keeps
// its escapes' offsets. On the translator's goroutine.
func (a *assistantState) seal(ci int, b *Content, buf []byte) []byte {
	st := a.esc[ci]
	if st.n < len(buf)-utf8.UTFMax {
		return buf // not scanned (a block that began with text): grows on
	}
	b.parts = sealed(b.parts, textPart{s: unsafe.String(unsafe.SliceData(buf), st.n), escAt: st.at, escKnown: true})
	next := make([]byte, len(buf)-st.n, partSize)
	copy(next, buf[st.n:])
	a.esc[ci] = escBuf{}
	return next
}

// roomFor returns buf with room for n more bytes. A short text's buffer
// grows as append grows it; past a quarter of partSize it grows once, to
// partSize (where appendTo seals it, as a part), or by a quarter when the
// text is not kept in parts (a part longer than partSize: one delta that
// long), into an array that is not cleared beyond what is copied: append
// clears the new array's tail, which makes all of it resident at once,
// where memory the heap has not used before is already zero and becomes
// resident only as the text reaches it.
func roomFor(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n || len(buf) < partSize/4 && len(buf)+n <= partSize {
		return buf
	}
	grown := make([]byte, len(buf), max(partSize, len(buf)+n, len(buf)+len(buf)/4))
	copy(grown, buf)
	return grown
}

// escBuf is where the first n bytes of a block's text have characters
// JSON escapes (see [Content]), grown append-only as the text grows.
type escBuf struct {
	at []uint32
	n  int
}

// escape finds the characters to escape in what block ci's text gained
// since the last call and returns the text scanned so far and their
// offsets, for [Content]. The text grew from n bytes; raw, when not empty,
// is the JSON string literal it grew by: when the CLI escaped it as the
// Encoder does (the usual case), its backslashes are the offsets, found
// with a byte search. A character cut at the end of the text (a delta that
// ended inside one) waits for the next call.
func (a *assistantState) escape(ci int, text string, n int, raw string) (of string, at []uint32) {
	st := a.esc[ci]
	if inner := strings.TrimSuffix(strings.TrimPrefix(raw, `"`), `"`); st.n == n && len(inner)+2 == len(raw) && escapedAsGo(inner) {
		off := n // the text offset of inner[j]
		for j := 0; ; {
			k := strings.IndexByte(inner[j:], '\\')
			if k < 0 {
				break
			}
			off += k
			st.at = append(st.at, uint32(off))
			off++ // each of these escapes is one byte of text
			j += k + 2
		}
		st.n = len(text)
	} else {
		k := len(text)
		for i := k - 1; i >= st.n && i >= k-utf8.UTFMax; i-- {
			if utf8.RuneStart(text[i]) {
				if !utf8.FullRuneInString(text[i:]) {
					k = i
				}
				break
			}
		}
		st.at = appendEscapes(st.at, text[st.n:k], st.n)
		st.n = k
	}
	a.esc[ci] = st
	return text[:st.n], st.at
}

// escapedAsGo reports whether s, the inside of a valid JSON string literal,
// is exactly what [appendEscaped] writes for its value: valid UTF-8 without
// U+2028 or U+2029, every escape one of \" \\ \b \f \n \r \t (JSON.stringify
// writes these; \uXXXX and \/ take the slow way).
func escapedAsGo(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0; {
		if i+1 >= len(s) || strings.IndexByte(`"\\bfnrt`, s[i+1]) < 0 {
			return false
		}
		j := strings.IndexByte(s[i+2:], '\\')
		if j < 0 {
			break
		}
		i += 2 + j
	}
	for i := strings.IndexByte(s, 0xE2); i >= 0; {
		if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
			return false
		}
		j := strings.IndexByte(s[i+1:], 0xE2)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return utf8.ValidString(s)
}

// assistant maps a complete assistant line: an API error (a synthetic
// message with no stream), the authoritative content of a streamed block, or
// a block of a message the CLI did not stream.
func (t *Translator) assistant(out []Event, v *object) []Event {
	m := t.msg.index(v.raw("message"))
	id := m.Get("id").String()
	if v.Get("is_api_error_message").Bool() || v.Get("error").Exists() && m.Get("model").String() == "<synthetic>" {
		text := m.Get("content.0.text").String()
		out = t.endRetry(out, false, text)
		return t.errorMessage(out, StopError, text)
	}
	if c := t.cur; c != nil && c.streamed && id == c.id {
		idx := c.complete
		c.complete++
		ci, ok := c.blocks[idx]
		if !ok || ci < 0 {
			return out
		}
		return t.authoritative(out, ci, t.block.index(firstElement(m.raw("content"))))
	}
	if id != "" && id == t.lastID {
		return out // the line of a message already ended
	}
	// Not streamed: build the message from complete lines, one block each.
	if t.cur == nil {
		out = t.endRetry(out, true, "")
		out = t.turnBoundary(out)
		t.cur = t.newAssistant(id, m.Get("model").String(), false)
		addUsage(&t.cur.msg.Usage, m.Get("usage"))
		out = append(out, t.snapshot(EventMessageStart, AssistantEvent{}))
	}
	if sr := m.Get("stop_reason").String(); sr != "" {
		t.cur.msg.StopReason, t.cur.msg.RawStopReason = stopReason(sr), strings.Clone(sr)
	}
	for _, b := range m.Get("content").Array() {
		out = t.wholeBlock(out, b)
	}
	return out
}

// authoritative applies a complete block to the streamed block ci. Text the
// stream did not carry (thinking, whose deltas the CLI holds back) is sent
// as one delta, so the host sees all of it before the block ends.
func (t *Translator) authoritative(out []Event, ci int, b *object) []Event {
	c := &t.cur.msg.Content[ci]
	switch {
	case c.Type == "text" && b.Get("type").String() == "text":
		return t.complete(out, ci, c.textOf(), b.raw("text"), "text")
	case c.Type == "thinking" && b.Get("type").String() == "thinking":
		return t.complete(out, ci, c.textOf(), b.raw("thinking"), "thinking")
	case c.Type == "toolCall":
		if in := b.Get("input"); in.IsObject() {
			c.Arguments = t.names.Args(t.names.CLIName(c.Name), json.RawMessage(in.Raw))
		}
	}
	return out
}

// complete sends what the complete text (raw, a JSON string literal) has
// beyond the text streamed so far. When the literal is no longer than the
// streamed text, nothing is missing, and the reply (2 MB in the recording)
// is not unescaped into a copy to compare.
//
// A line read in pieces has the text left out (raw is "") when it began
// with the streamed text; the hole says how long it was and what it has
// beyond the streamed text.
func (t *Translator) complete(out []Event, ci int, streamed rope, raw, key string) []Event {
	n := streamed.Len()
	if h := &t.hole; h.set && h.key == key && raw == `""` {
		if h.n > n && h.ref.Len() == n {
			out = t.appendText(out, ci, unsafe.String(unsafe.SliceData(h.tail), len(h.tail)))
		}
		return out
	}
	if unescapedLen(raw) <= n {
		return out
	}
	if full := rawString(raw); len(full) > n && streamed.prefixOf(full) {
		out = t.appendText(out, ci, full[n:])
	}
	return out
}

// wholeBlock adds a complete block to a message that is not streamed, with
// the start, delta and end updates a streamed one would have had.
func (t *Translator) wholeBlock(out []Event, b gjson.Result) []Event {
	c := t.cur
	ci := len(c.msg.Content)
	switch b.Get("type").String() {
	case "text":
		s := b.Get("text").String()
		c.msg.Content = append(c.msg.Content, TextContent(""))
		out = append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: TextStart, ContentIndex: ci}))
		out = t.appendText(out, ci, s)
		return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: TextEnd, ContentIndex: ci, Content: s}))
	case "thinking":
		s := b.Get("thinking").String()
		c.msg.Content = append(c.msg.Content, Content{Type: "thinking"})
		out = append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ThinkingStart, ContentIndex: ci}))
		out = t.appendText(out, ci, s)
		return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ThinkingEnd, ContentIndex: ci, Content: s}))
	case "tool_use":
		name := b.Get("name").String()
		args := t.names.Args(name, jsonObject(b.Get("input").Raw))
		c.msg.Content = append(c.msg.Content, Content{Type: "toolCall", ID: b.Get("id").String(), Name: t.names.Name(name)})
		out = append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallStart, ContentIndex: ci}))
		c.msg.Content[ci].Arguments = args
		out = append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallDelta, ContentIndex: ci, Delta: string(args)}))
		call := c.msg.Content[ci]
		c.msg.StopReason = StopToolUse
		return append(out, t.snapshot(EventMessageUpdate, AssistantEvent{Type: ToolcallEnd, ContentIndex: ci, ToolCall: &call}))
	}
	return out
}

// user maps a user line: tool results, or a message the CLI added itself.
func (t *Translator) user(out []Event, v *object) []Event {
	content := v.Get("message.content")
	if content.IsArray() {
		var results []gjson.Result
		for _, b := range content.Array() {
			if b.Get("type").String() == "tool_result" {
				results = append(results, b)
			}
		}
		if len(results) > 0 {
			// The line's structured result (Bash: stdout, stderr,
			// interrupted) describes its result when there is one.
			var details gjson.Result
			if d := v.Get("tool_use_result"); len(results) == 1 && d.IsObject() {
				details = d
			}
			for _, r := range results {
				tr := toolResultLine{block: r, details: details}
				if t.cur != nil {
					t.early = append(t.early, tr)
					continue
				}
				out = t.toolResult(out, tr)
			}
			return out
		}
	}
	text := ContentText(content)
	switch {
	case strings.HasPrefix(text, "<local-command-stdout>"), strings.HasPrefix(text, "<local-command-stderr>"):
		// A slash command's output: show it as the assistant's answer.
		body := text
		for _, tag := range []string{"local-command-stdout", "local-command-stderr"} {
			body = strings.TrimPrefix(strings.TrimSuffix(body, "</"+tag+">"), "<"+tag+">")
		}
		out = t.turnBoundary(out)
		t.cur = t.newAssistant("", t.model, false)
		t.cur.msg.Content = []Content{TextContent(strings.TrimSpace(body))}
		out = append(out, t.snapshot(EventMessageStart, AssistantEvent{}))
		return t.endAssistant(out)
	case v.Get("isReplay").Bool():
		return out // the CLI echoing a message we sent
	case t.afterCompact && v.Get("isSynthetic").Bool():
		t.afterCompact = false // the compaction summary: context for the model, not a message of this run
		if c := t.compaction; c != nil {
			c.Summary = text
			if t.compacting {
				t.compacting = false
				out = append(out, Event{Type: EventCompactionEnd, Reason: "threshold", Compaction: c})
			}
		}
		return out
	case text == "":
		return out
	}
	// A message the CLI added (e.g. "Output token limit hit…"): a user
	// message opening the next turn, as pi shows injected messages.
	out = t.turnBoundary(out)
	m := UserMessage([]Content{TextContent(text)}, t.now())
	t.messages = append(t.messages, m)
	return append(out, Event{Type: EventMessageStart, Message: m.Clone()}, Event{Type: EventMessageEnd, Message: m.Clone()})
}

// toolResultLine is one tool_result block and the structured details the
// CLI gave with it, if any.
type toolResultLine struct {
	block, details gjson.Result
}

// toolResult emits a tool's result: tool_execution_end and a toolResult
// message.
func (t *Translator) toolResult(out []Event, r toolResultLine) []Event {
	id := r.block.Get("tool_use_id").String()
	call, known := t.running[id]
	if !known {
		// Not a call of this run (or answered already): pi has no event
		// for it without its start.
		return out
	}
	delete(t.running, id)
	cli := t.names.CLIName(call.Name)
	details := t.names.Details(cli, r.details)
	x := t.extras[id]
	delete(t.extras, id)
	if len(details) == 0 {
		details = x.Details
	}
	content := toolContent(r.block.Get("content"))
	isError := r.block.Get("is_error").Bool()
	if d, ok := t.denied[id]; ok {
		delete(t.denied, id)
		if len(details) == 0 && d != (denial{}) {
			details = deniedDetails(d)
		}
	}
	if !isError {
		content = t.names.Content(cli, call.Arguments, r.details, content)
	} else if unknownTool(content, cli, hostTools+call.Name, extensionTools+call.Name) {
		content = []Content{TextContent("Tool " + call.Name + " not found")}
	}
	return t.emitToolResult(out, id, call.Name, content, details, x.Usage, isError)
}

// unknownTool reports whether a tool's error result is the CLI's refusal
// of a tool it does not have: one never offered, or one the host or an
// extension removed during the session, which CLI 2.1.328 and 2.1.332
// keep in the model's list ("No such tool available: X", alone or with a
// sentence on why: "Its MCP server 'host' is connected but does not offer
// this tool here. ..."). Hosts get pi's words for a tool it does not know
// instead (pi 1.6.0's agent loop: "Tool X not found"); the model keeps
// the CLI's.
// The call's CLI name is one of names (a host's or an extension's tool is
// shown by its own name: which server's it was is not kept).
func unknownTool(content []Content, names ...string) bool {
	if len(content) != 1 || content[0].Type != "text" {
		return false
	}
	for _, cli := range names {
		rest, ok := strings.CutPrefix(content[0].Text, "<tool_use_error>Error: No such tool available: "+cli)
		if ok && (strings.HasPrefix(rest, "</tool_use_error>") || strings.HasPrefix(rest, ". ")) {
			return true
		}
	}
	return false
}

func (t *Translator) emitToolResult(out []Event, id, name string, content []Content, details, usage json.RawMessage, isError bool) []Event {
	isErr := isError
	m := Message{Role: RoleToolResult, Content: content, ToolCallID: id, ToolName: name,
		Details: details, ToolUsage: usage, IsError: &isErr, Timestamp: t.now()}
	t.callStart = m.Timestamp // the next model call answers the results
	end := Event{Type: EventToolExecutionEnd, ToolCallID: id, ToolName: name,
		Result: &ToolResult{Content: content, Details: details, Usage: usage}, IsError: isError, DurationMs: -1}
	if at, ok := t.startedAt[id]; ok {
		end.DurationMs = max(m.Timestamp-at, 0)
		d := end.DurationMs
		m.DurationMs = &d
		delete(t.startedAt, id)
	}
	t.messages = append(t.messages, m)
	t.toolResults = append(t.toolResults, m)
	return append(out, end,
		Event{Type: EventMessageStart, Message: m.Clone()},
		Event{Type: EventMessageEnd, Message: m.Clone()})
}

// toolContent maps tool_result content (a string, or text and image blocks)
// to pi content.
func toolContent(c gjson.Result) []Content {
	if c.Type == gjson.String {
		return []Content{TextContent(c.String())}
	}
	out := []Content{}
	for _, b := range c.Array() {
		switch b.Get("type").String() {
		case "text":
			out = append(out, TextContent(b.Get("text").String()))
		case "image":
			out = append(out, Content{Type: "image", Data: b.Get("source.data").String(), MimeType: b.Get("source.media_type").String()})
		}
	}
	return out
}

// ContentText returns the text of a message's content: a string, or its text blocks joined by newlines.
func ContentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.String()
	}
	var parts []string
	for _, b := range c.Array() {
		if b.Get("type").String() == "text" {
			parts = append(parts, b.Get("text").String())
		}
	}
	return strings.Join(parts, "\n")
}

// result ends the run.
func (t *Translator) result(out []Event, v *object) []Event {
	v.Get("modelUsage").ForEach(func(model, u gjson.Result) bool {
		if t.model == "" || model.String() == t.model {
			t.limits = Limits{ContextWindow: u.Get("contextWindow").Int(), MaxTokens: u.Get("maxOutputTokens").Int()}
			return false
		}
		return true
	})
	if cost := v.Get("total_cost_usd").Float(); cost > 0 && t.pending >= 0 {
		// The run's cost, on its last message: summed over a session's
		// messages it gives the session's cost.
		t.messages[t.pending].Usage.Cost.Total = cost
	}
	t.noteFastMode(v)
	out = t.flushPending(out)
	if v.Get("is_error").Bool() && !t.lastAssistantIs(StopError) {
		msg := strings.Clone(v.Get("result").String()) // read in place
		if msg == "" {
			var errs []string
			for _, e := range v.Get("errors").Array() {
				errs = append(errs, e.String())
			}
			msg = strings.Clone(strings.Join(errs, "; ")) // one error: Join returns it, a view of the line
		}
		if msg == "" {
			msg = "claude: " + v.Get("subtype").String()
		}
		out = t.errorMessage(out, StopError, msg)
	}
	t.resultFailed = v.Get("is_error").Bool()
	if t.hold {
		t.atResult = true
		return out
	}
	return t.endRun(out, StopAborted, abortedMessage)
}

// Finish ends a run whose CLI process exited. If the CLI printed its result
// the run is over already and Finish returns nothing; otherwise the run ends
// with an error message naming how the process ended.
func (t *Translator) Finish(exitDesc string) []Event {
	if t.ended {
		return nil
	}
	msg := "claude exited without a result"
	if exitDesc != "" {
		msg += ": " + exitDesc
	}
	return t.endRun(t.errorMessage(t.flushPending(nil), StopError, msg), StopError, msg)
}

// Fail ends the run with an error message, for failures outside the CLI's
// output (the process could not start, a line was too long to read).
func (t *Translator) Fail(errorMessage string) []Event {
	if t.ended {
		return nil
	}
	return t.endRun(t.errorMessage(t.flushPending(nil), StopError, errorMessage), StopError, errorMessage)
}

// Abort ends the run as pi does when it is aborted: the assistant message
// being streamed (or a new one, between model calls) ends with stopReason
// "aborted" and errorMessage [abortedMessage]; tools still running end with
// an error result, [toolAbortedMessage]. A run whose last message was
// already complete just ends.
func (t *Translator) Abort() []Event {
	if t.ended {
		return nil
	}
	var out []Event
	if t.pending >= 0 || t.cur == nil && len(t.running) > 0 {
		// Nothing was streaming: the run just ends, tools still running
		// with an aborted result (endRun), as pi aborts a tool.
		return t.endRun(t.flushPending(out), StopAborted, abortedMessage)
	}
	return t.endRun(t.errorMessage(out, StopAborted, abortedMessage), StopAborted, abortedMessage)
}

func (t *Translator) newAssistant(id, model string, streamed bool) *assistantState {
	if model == "" || model == "<synthetic>" {
		model = t.model
	}
	return &assistantState{
		msg: Message{Role: RoleAssistant, Content: []Content{}, API: API, Provider: Provider,
			Model: model, StopReason: StopStop, Timestamp: t.now(), ResponseID: id},
		id: id, streamed: streamed, blocks: map[int]int{}, json: map[int][]byte{}, text: map[int][]byte{}, esc: map[int]escBuf{},
	}
}

// errorMessage ends the open assistant message with the given stop reason and
// error, or, when none is open, emits a whole new one.
func (t *Translator) errorMessage(out []Event, stop, errMsg string) []Event {
	if t.cur == nil {
		// A whole new message: like pi, its message_start already shows
		// the error.
		out = t.turnBoundary(out)
		t.cur = t.newAssistant("", "", false)
		t.cur.msg.StopReason, t.cur.msg.ErrorMessage = stop, errMsg
		out = append(out, t.snapshot(EventMessageStart, AssistantEvent{}))
	}
	t.cur.msg.StopReason = stop
	t.cur.msg.ErrorMessage = errMsg
	return t.endAssistant(out)
}

// endAssistant ends the open assistant message. A message with tool calls
// ends at once, followed by tool_execution_start for each call and any
// results that came early; a final message (no tool calls) waits for the
// next line, so the run's cost from the result can go on it.
func (t *Translator) endAssistant(out []Event) []Event {
	c := t.cur
	if c == nil {
		return out
	}
	t.cur = nil
	u := &c.msg.Usage
	u.TotalTokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
	now := t.now()
	d := max(now-t.callStart, 0)
	c.msg.DurationMs, c.msg.ThinkingLevel = &d, t.thinkingLevel
	t.callStart = now // a message that follows in the same call (the CLI's continuation) counts from here
	t.messages = append(t.messages, c.msg)
	// The escape offsets served the updates; they serve the frames that
	// carry the message whole too (message_end, turn_end, agent_end: a
	// long reply is written four times more), and go when its turn ends
	// (dropEscapes), never into the session's history.
	for i := range c.msg.Content {
		if c.msg.Content[i].escOf != "" || c.msg.Content[i].parts != nil {
			t.withEsc = append(t.withEsc, len(t.messages)-1)
			break
		}
	}
	t.turnAssistant = len(t.messages) - 1
	t.lastID = c.id
	var calls []Content
	for i := range c.msg.Content {
		b := &c.msg.Content[i]
		if b.Type != "toolCall" {
			continue
		}
		if len(b.Arguments) == 0 { // cut off before its block ended
			b.Arguments = json.RawMessage("{}")
		}
		// Tools of a message that failed or was aborted never run.
		if c.msg.StopReason != StopError && c.msg.StopReason != StopAborted {
			calls = append(calls, *b)
		}
	}
	if len(calls) == 0 && c.msg.StopReason != StopError && c.msg.StopReason != StopAborted && c.msg.StopReason != StopToolUse {
		t.pending = len(t.messages) - 1
		return out
	}
	out = t.emitEnd(out, len(t.messages)-1)
	for _, call := range calls {
		t.running[call.ID] = call
		t.order = append(t.order, call.ID)
		out = append(out, Event{Type: EventToolExecutionStart, ToolCallID: call.ID, ToolName: call.Name, Args: call.Arguments})
		if t.startedAt == nil {
			t.startedAt = map[string]int64{}
		}
		t.startedAt[call.ID] = t.now()
	}
	early := t.early
	t.early = nil
	for _, r := range early {
		out = t.toolResult(out, r)
	}
	return out
}

func (t *Translator) emitEnd(out []Event, i int) []Event {
	return append(out, Event{Type: EventMessageEnd, Message: t.messages[i].Clone()})
}

// flushPending emits the message_end held back by endAssistant.
func (t *Translator) flushPending(out []Event) []Event {
	if t.pending < 0 {
		return out
	}
	i := t.pending
	t.pending = -1
	return t.emitEnd(out, i)
}

// turnBoundary closes the open turn if it already has its assistant message,
// and opens the next one: each model call is one pi turn.
func (t *Translator) turnBoundary(out []Event) []Event {
	t.between = false
	if !t.turnOpen || t.turnAssistant >= 0 {
		out = t.endTurn(out)
		t.dropEscapes()
		t.turnOpen = true
		if t.resetOpen { // the new conversation starts with this turn
			t.resetAt, t.resetOpen = len(t.messages), false
		}
		out = append(out, Event{Type: EventTurnStart})
	}
	return t.flushDeferred(out)
}

// flushDeferred shows the steering messages the CLI started while the model
// or tools were busy: the model got them with the call that comes next.
func (t *Translator) flushDeferred(out []Event) []Event {
	for _, m := range t.deferred {
		out = t.userMessage(out, m)
	}
	t.deferred = nil
	return out
}

// endRetry ends the CLI's API retries, if any: the next attempt streamed
// (success) or the last one failed.
func (t *Translator) endRetry(out []Event, success bool, finalError string) []Event {
	if t.retry == 0 {
		return out
	}
	r := &Retry{Success: success, Attempt: t.retry, FinalError: finalError}
	t.retry = 0
	return append(out, Event{Type: EventAutoRetryEnd, Retry: r})
}

// closeRunning gives every tool call still waiting for its result an error
// result saying why: in pi's event grammar each tool_execution_start has its
// end before the turn ends.
func (t *Translator) closeRunning(out []Event, why string) []Event {
	for _, id := range t.order {
		if call, ok := t.running[id]; ok {
			delete(t.running, id)
			out = t.emitToolResult(out, id, call.Name, []Content{TextContent(why)}, nil, nil, true)
		}
	}
	t.order = t.order[:0]
	return out
}

func (t *Translator) endTurn(out []Event) []Event {
	if !t.turnOpen {
		return out
	}
	out = t.flushPending(out)
	out = t.closeRunning(out, toolNoResultMessage)
	var msg Message
	if t.turnAssistant >= 0 {
		msg = t.messages[t.turnAssistant].Clone()
	}
	out = append(out, Event{Type: EventTurnEnd, Message: msg, ToolResults: t.toolResults})
	t.turnOpen, t.turnAssistant, t.toolResults = false, -1, nil
	return out
}

// emptyAssistant gives the open turn an empty assistant message when it
// has none: pi's turns always have their assistant message, and a turn
// that ends without one (a slash command that printed nothing, at the
// run's end or before a queued message's turn) gets an empty one.
func (t *Translator) emptyAssistant(out []Event) []Event {
	if !t.turnOpen || t.turnAssistant >= 0 {
		return out
	}
	t.cur = t.newAssistant("", "", false)
	out = append(out, t.snapshot(EventMessageStart, AssistantEvent{}))
	out = t.endAssistant(out)
	return t.flushPending(out)
}

// endRun ends what is still open and emits agent_end. A message still open
// ends with stop and errMsg; a tool still running gets an error result.
func (t *Translator) endRun(out []Event, stop, errMsg string) []Event {
	t.atResult = false
	out = t.endSubagents(out)
	out = t.endRetry(out, false, errMsg)
	if t.compacting {
		t.compacting = false
		out = append(out, Event{Type: EventCompactionEnd, Reason: "threshold", Aborted: true, ErrorMessage: errMsg})
	}
	if t.cur != nil {
		t.cur.msg.StopReason, t.cur.msg.ErrorMessage = stop, errMsg
		out = t.endAssistant(out)
	}
	out = t.flushPending(out)
	if len(t.deferred) > 0 {
		// Started by the CLI, so part of the conversation, though the
		// run ends before the model answers them.
		out = t.flushDeferred(t.closeRunning(out, toolAbortedMessage))
	}
	out = t.emptyAssistant(out)
	out = t.closeRunning(out, toolAbortedMessage)
	out = t.endTurn(out)
	t.ended = true
	msgs := make([]Message, len(t.messages))
	for i := range t.messages {
		msgs[i] = t.messages[i].Clone()
	}
	t.dropEscapes()
	return append(out, Event{Type: EventAgentEnd, Messages: msgs})
}

// dropEscapes drops the escape offsets the ended turn's messages kept:
// the events made so far carry copies of the blocks, and the messages go
// on without them ([Translator.Messages], the session's history).
func (t *Translator) dropEscapes() {
	for _, i := range t.withEsc {
		for j := range t.messages[i].Content {
			c := &t.messages[i].Content[j]
			c.escOf, c.escAt = "", nil
			if c.parts != nil {
				c.parts = withoutEscapes(c.parts)
			}
		}
	}
	t.withEsc = t.withEsc[:0]
}

func (t *Translator) lastAssistantIs(stop string) bool {
	for i := len(t.messages) - 1; i >= 0; i-- {
		if t.messages[i].Role == RoleAssistant {
			return t.messages[i].StopReason == stop
		}
	}
	return false
}

// snapshot makes an event carrying a copy of the message so far.
func (t *Translator) snapshot(typ string, ae AssistantEvent) Event {
	ev := Event{Type: typ, Message: t.cur.msg.Clone(), Update: ae}
	if typ == EventMessageStart && ev.Message.StopReason == StopStop {
		// As pi 1.5: the stop reason is known at message_end (a message
		// that failed before it streamed shows its error at once).
		ev.Message.StopReason = StopPending
	}
	return ev
}

// stopReason maps the API's stop_reason to pi's.
func stopReason(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return StopLength
	case "tool_use":
		return StopToolUse
	case "refusal":
		return StopError
	default: // end_turn, stop_sequence, pause_turn
		return StopStop
	}
}

// addUsage adds the API usage object u to pi's usage.
func addUsage(dst *Usage, u gjson.Result) {
	dst.Input += u.Get("input_tokens").Int()
	dst.Output += u.Get("output_tokens").Int()
	dst.CacheRead += u.Get("cache_read_input_tokens").Int()
	dst.CacheWrite += u.Get("cache_creation_input_tokens").Int()
	dst.TotalTokens = dst.Input + dst.Output + dst.CacheRead + dst.CacheWrite
}

// setUsage applies a message_delta usage: its counts are totals so far.
func setUsage(dst *Usage, u gjson.Result) {
	if r := u.Get("input_tokens"); r.Exists() {
		dst.Input = r.Int()
	}
	if r := u.Get("output_tokens"); r.Exists() {
		dst.Output = r.Int()
	}
	if r := u.Get("cache_read_input_tokens"); r.Exists() {
		dst.CacheRead = r.Int()
	}
	if r := u.Get("cache_creation_input_tokens"); r.Exists() {
		dst.CacheWrite = r.Int()
	}
	dst.TotalTokens = dst.Input + dst.Output + dst.CacheRead + dst.CacheWrite
}

// jsonObject returns s when it is a JSON object, else {} (a tool call cut off
// mid-arguments has no usable arguments).
func jsonObject(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" || !gjson.Valid(s) || !strings.HasPrefix(s, "{") {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
