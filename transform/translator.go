package transform

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// pi's names for where an assistant message came from.
const (
	API      = "anthropic-messages"
	Provider = "anthropic"
)

// Translator turns the stdout lines of the CLI processes of one run (one
// prompt, from agent_start to agent_end) into protocol events. It is not safe
// for concurrent use; one goroutine feeds it.
//
// The CLI prints, per model call, stream_event lines carrying the API's
// deltas (with --include-partial-messages) and one complete assistant line
// per content block. Deltas drive message_update; the complete lines are
// authoritative for message_end; nothing is emitted twice.
type Translator struct {
	now func() int64

	sessionID string
	model     string

	messages []Message // this run's messages, in order
	ended    bool      // agent_end emitted

	// The open turn: its assistant message (index into messages, -1 when
	// none yet) and its tool results.
	turnOpen      bool
	turnAssistant int
	toolResults   []Message

	// The assistant message being streamed, nil between messages.
	cur      *Message
	curID    string      // the API's message id of cur
	blocks   map[int]int // stream block index → index in cur.Content
	toolJSON map[int]*strings.Builder
	lastID   string // API message id of the last assistant message ended
}

// NewTranslator returns a translator for one run. now returns the time in
// Unix milliseconds; it stamps messages.
func NewTranslator(now func() int64) *Translator {
	return &Translator{now: now, turnAssistant: -1}
}

// SessionID is the CLI's session id, once a line has told it.
func (t *Translator) SessionID() string { return t.sessionID }

// Model is the model the CLI reported for this run, if any.
func (t *Translator) Model() string { return t.model }

// Ended reports whether agent_end has been emitted.
func (t *Translator) Ended() bool { return t.ended }

// Messages returns the messages of the run so far.
func (t *Translator) Messages() []Message { return t.messages }

// Start begins the run with the user's message: agent_start, turn_start and
// the user message's message_start and message_end.
func (t *Translator) Start(user Message) []Event {
	t.messages = append(t.messages, user)
	u := user.Clone()
	t.turnOpen = true
	return []Event{
		{Type: EventAgentStart},
		{Type: EventTurnStart},
		{Type: EventMessageStart, Message: &u},
		{Type: EventMessageEnd, Message: &u},
	}
}

// Line translates one line of the CLI's stdout. Lines that are not JSON
// objects, and kinds it does not map, give no events.
func (t *Translator) Line(line []byte) []Event {
	if t.ended || !gjson.ValidBytes(line) {
		return nil
	}
	v := gjson.ParseBytes(line)
	if sid := v.Get("session_id").String(); sid != "" {
		t.sessionID = sid
	}
	switch v.Get("type").String() {
	case "system":
		if v.Get("subtype").String() == "init" {
			if m := v.Get("model").String(); m != "" {
				t.model = m
			}
		}
		return nil
	case "stream_event":
		if v.Get("parent_tool_use_id").String() != "" {
			return nil // a subagent's stream: not this conversation's
		}
		return t.streamEvent(v.Get("event"))
	case "assistant":
		if v.Get("parent_tool_use_id").String() != "" {
			return nil
		}
		return t.assistant(v)
	case "result":
		return t.result(v)
	}
	return nil
}

// streamEvent maps one raw API streaming event.
func (t *Translator) streamEvent(ev gjson.Result) []Event {
	switch ev.Get("type").String() {
	case "message_start":
		var out []Event
		out = t.endCurrent(out, "", "")
		out = t.turnBoundary(out)
		m := ev.Get("message")
		t.curID = m.Get("id").String()
		model := m.Get("model").String()
		if model == "" {
			model = t.model
		}
		t.cur = &Message{Role: RoleAssistant, Content: []Content{}, API: API, Provider: Provider,
			Model: model, Usage: &Usage{}, StopReason: StopStop, Timestamp: t.now()}
		addUsage(t.cur.Usage, m.Get("usage"))
		t.blocks = map[int]int{}
		t.toolJSON = map[int]*strings.Builder{}
		return append(out, t.snapshot(EventMessageStart, nil))
	case "content_block_start":
		if t.cur == nil {
			return nil
		}
		idx := int(ev.Get("index").Int())
		cb := ev.Get("content_block")
		var c Content
		var kind string
		switch cb.Get("type").String() {
		case "text":
			c, kind = TextContent(cb.Get("text").String()), TextStart
		case "thinking":
			c, kind = Content{Type: "thinking", Thinking: cb.Get("thinking").String()}, ThinkingStart
		case "redacted_thinking":
			c, kind = Content{Type: "thinking"}, ThinkingStart
		case "tool_use", "server_tool_use":
			c, kind = Content{Type: "toolCall", ID: cb.Get("id").String(), Name: cb.Get("name").String()}, ToolcallStart
			t.toolJSON[idx] = &strings.Builder{}
		default:
			return nil
		}
		t.blocks[idx] = len(t.cur.Content)
		t.cur.Content = append(t.cur.Content, c)
		return []Event{t.snapshot(EventMessageUpdate, &AssistantEvent{Type: kind, ContentIndex: t.blocks[idx]})}
	case "content_block_delta":
		if t.cur == nil {
			return nil
		}
		idx := int(ev.Get("index").Int())
		ci, ok := t.blocks[idx]
		if !ok {
			return nil
		}
		d := ev.Get("delta")
		c := &t.cur.Content[ci]
		var ae AssistantEvent
		switch d.Get("type").String() {
		case "text_delta":
			s := d.Get("text").String()
			c.Text += s
			ae = AssistantEvent{Type: TextDelta, ContentIndex: ci, Delta: s}
		case "thinking_delta":
			s := d.Get("thinking").String()
			c.Thinking += s
			ae = AssistantEvent{Type: ThinkingDelta, ContentIndex: ci, Delta: s}
		case "input_json_delta":
			s := d.Get("partial_json").String()
			if b := t.toolJSON[idx]; b != nil {
				b.WriteString(s)
			}
			ae = AssistantEvent{Type: ToolcallDelta, ContentIndex: ci, Delta: s}
		default: // signature_delta, citations_delta: nothing to show
			return nil
		}
		return []Event{t.snapshot(EventMessageUpdate, &ae)}
	case "content_block_stop":
		if t.cur == nil {
			return nil
		}
		idx := int(ev.Get("index").Int())
		ci, ok := t.blocks[idx]
		if !ok {
			return nil
		}
		c := &t.cur.Content[ci]
		switch c.Type {
		case "text":
			return []Event{t.snapshot(EventMessageUpdate, &AssistantEvent{Type: TextEnd, ContentIndex: ci, Content: c.Text})}
		case "thinking":
			return []Event{t.snapshot(EventMessageUpdate, &AssistantEvent{Type: ThinkingEnd, ContentIndex: ci, Content: c.Thinking})}
		case "toolCall":
			if b := t.toolJSON[idx]; b != nil {
				c.Arguments = jsonObject(b.String())
			}
			call := *c
			return []Event{t.snapshot(EventMessageUpdate, &AssistantEvent{Type: ToolcallEnd, ContentIndex: ci, ToolCall: &call})}
		}
		return nil
	case "message_delta":
		if t.cur == nil {
			return nil
		}
		if sr := ev.Get("delta.stop_reason").String(); sr != "" {
			t.cur.StopReason = stopReason(sr)
		}
		setUsage(t.cur.Usage, ev.Get("usage"))
		return nil
	case "message_stop":
		return t.endCurrent(nil, "", "")
	}
	return nil
}

// assistant maps a complete assistant line. With partial messages on, its
// content was already streamed; it matters only for API errors, which come
// as a synthetic assistant message with no stream, and for streams the CLI
// did not relay.
func (t *Translator) assistant(v gjson.Result) []Event {
	m := v.Get("message")
	id := m.Get("id").String()
	if v.Get("is_api_error_message").Bool() || v.Get("error").Exists() && m.Get("model").String() == "<synthetic>" {
		return t.errorMessage(nil, StopError, m.Get("content.0.text").String())
	}
	if t.cur != nil && id == t.curID || id != "" && id == t.lastID {
		return nil // streamed already
	}
	// A message that was not streamed: show it whole.
	var out []Event
	out = t.endCurrent(out, "", "")
	out = t.turnBoundary(out)
	model := m.Get("model").String()
	msg := &Message{Role: RoleAssistant, Content: []Content{}, API: API, Provider: Provider,
		Model: model, Usage: &Usage{}, StopReason: StopStop, Timestamp: t.now()}
	addUsage(msg.Usage, m.Get("usage"))
	for _, b := range m.Get("content").Array() {
		switch b.Get("type").String() {
		case "text":
			msg.Content = append(msg.Content, TextContent(b.Get("text").String()))
		case "thinking":
			msg.Content = append(msg.Content, Content{Type: "thinking", Thinking: b.Get("thinking").String()})
		case "tool_use":
			msg.Content = append(msg.Content, Content{Type: "toolCall", ID: b.Get("id").String(),
				Name: b.Get("name").String(), Arguments: jsonObject(b.Get("input").Raw)})
		}
	}
	if sr := m.Get("stop_reason").String(); sr != "" {
		msg.StopReason = stopReason(sr)
	}
	t.cur, t.curID = msg, id
	out = append(out, t.snapshot(EventMessageStart, nil))
	return t.endCurrent(out, "", "")
}

// result ends the run.
func (t *Translator) result(v gjson.Result) []Event {
	var out []Event
	if v.Get("is_error").Bool() {
		msg := v.Get("result").String()
		if msg == "" {
			msg = "claude: " + v.Get("subtype").String()
		}
		if !t.lastAssistantIs(StopError) {
			out = t.errorMessage(out, StopError, msg)
		}
	}
	out = t.endCurrent(out, "", "")
	return t.endRun(out)
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
	return t.endRun(t.errorMessage(nil, StopError, msg))
}

// Fail ends the run with an error message, for failures outside the CLI's
// output (the process could not start, a line was too long to read).
func (t *Translator) Fail(errorMessage string) []Event {
	if t.ended {
		return nil
	}
	return t.endRun(t.errorMessage(nil, StopError, errorMessage))
}

// Abort ends the run as pi does when it is aborted: the assistant message
// ends with stopReason "aborted" and errorMessage [AbortedMessage].
func (t *Translator) Abort() []Event {
	if t.ended {
		return nil
	}
	return t.endRun(t.errorMessage(nil, StopAborted, AbortedMessage))
}

// errorMessage ends the open assistant message with the given stop reason and
// error, or, when none is open, emits a whole new one.
func (t *Translator) errorMessage(out []Event, stop, errMsg string) []Event {
	if t.cur == nil {
		out = t.turnBoundary(out)
		t.cur = &Message{Role: RoleAssistant, Content: []Content{}, API: API, Provider: Provider,
			Model: t.model, Usage: &Usage{}, Timestamp: t.now()}
		t.curID = ""
		out = append(out, t.snapshot(EventMessageStart, nil))
	}
	return t.endCurrent(out, stop, errMsg)
}

// endCurrent emits message_end for the open assistant message, if any,
// overriding its stop reason and error when stop is not empty.
func (t *Translator) endCurrent(out []Event, stop, errMsg string) []Event {
	if t.cur == nil {
		return out
	}
	if stop != "" {
		t.cur.StopReason = stop
		t.cur.ErrorMessage = errMsg
	}
	t.cur.Usage.TotalTokens = t.cur.Usage.Input + t.cur.Usage.Output + t.cur.Usage.CacheRead + t.cur.Usage.CacheWrite
	final := t.cur.Clone()
	t.messages = append(t.messages, final)
	t.turnAssistant = len(t.messages) - 1
	t.lastID = t.curID
	t.cur, t.curID, t.blocks, t.toolJSON = nil, "", nil, nil
	m := final.Clone()
	return append(out, Event{Type: EventMessageEnd, Message: &m})
}

// turnBoundary closes the open turn if it already has its assistant message,
// and opens the next one: each model call is one pi turn.
func (t *Translator) turnBoundary(out []Event) []Event {
	if t.turnOpen && t.turnAssistant < 0 {
		return out
	}
	out = t.endTurn(out)
	t.turnOpen = true
	return append(out, Event{Type: EventTurnStart})
}

func (t *Translator) endTurn(out []Event) []Event {
	if !t.turnOpen {
		return out
	}
	var msg *Message
	if t.turnAssistant >= 0 {
		m := t.messages[t.turnAssistant].Clone()
		msg = &m
	}
	out = append(out, Event{Type: EventTurnEnd, Message: msg, ToolResults: t.toolResults})
	t.turnOpen, t.turnAssistant, t.toolResults = false, -1, nil
	return out
}

func (t *Translator) endRun(out []Event) []Event {
	out = t.endCurrent(out, StopAborted, AbortedMessage) // only if still open
	out = t.endTurn(out)
	t.ended = true
	msgs := make([]Message, len(t.messages))
	for i := range t.messages {
		msgs[i] = t.messages[i].Clone()
	}
	return append(out, Event{Type: EventAgentEnd, Messages: msgs})
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
func (t *Translator) snapshot(typ string, ae *AssistantEvent) Event {
	m := t.cur.Clone()
	return Event{Type: typ, Message: &m, Update: ae}
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
}

// setUsage applies a message_delta usage: its counts are totals so far.
func setUsage(dst *Usage, u gjson.Result) {
	for key, p := range map[string]*int64{
		"input_tokens":                &dst.Input,
		"output_tokens":               &dst.Output,
		"cache_read_input_tokens":     &dst.CacheRead,
		"cache_creation_input_tokens": &dst.CacheWrite,
	} {
		if r := u.Get(key); r.Exists() {
			*p = r.Int()
		}
	}
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
