package transform

import "encoding/json"

// Event types of pi's AgentSessionEvent that the bridge emits.
const (
	EventAgentStart    = "agent_start"
	EventAgentEnd      = "agent_end"
	EventTurnStart     = "turn_start"
	EventTurnEnd       = "turn_end"
	EventMessageStart  = "message_start"
	EventMessageUpdate = "message_update"
	EventMessageEnd    = "message_end"

	EventToolExecutionStart = "tool_execution_start"
	EventToolExecutionEnd   = "tool_execution_end"

	EventAutoRetryStart = "auto_retry_start"
	EventAutoRetryEnd   = "auto_retry_end"

	// pi's names (0.73.1 and 1.5.2 alike), and the only ones claude-rpc
	// writes for a compaction: never the auto_compaction_* names of pi's
	// forks as well, so a host that handles both sees each compaction once.
	EventCompactionStart = "compaction_start"
	EventCompactionEnd   = "compaction_end"
)

// Types of pi's AssistantMessageEvent, carried by message_update.
const (
	TextStart     = "text_start"
	TextDelta     = "text_delta"
	TextEnd       = "text_end"
	ThinkingStart = "thinking_start"
	ThinkingDelta = "thinking_delta"
	ThinkingEnd   = "thinking_end"
	ToolcallStart = "toolcall_start"
	ToolcallDelta = "toolcall_delta"
	ToolcallEnd   = "toolcall_end"
)

// Event is one protocol event. Type says which fields are written; the
// others are ignored. Events hold copies of messages (whose strings are
// never changed afterwards), so they stay valid after the translator moves
// on.
type Event struct {
	Type string
	// Message is the message of message_start/update/end and turn_end.
	Message Message
	// MessageID is omp's messageId of message_start/update/end: the
	// protocol layer numbers the messages it writes (msg-N).
	MessageID string
	// Update is the assistantMessageEvent of message_update.
	Update AssistantEvent
	// Messages are agent_end's messages: the messages of the run.
	Messages []Message
	// Continues says, on agent_end, that another run follows by itself
	// (the bridge sets it: isTerminal and yielded false).
	Continues bool
	// ToolResults are turn_end's tool results.
	ToolResults []Message

	// ToolCallID, ToolName, Args (a JSON object), Result and IsError
	// describe tool_execution_start (id, name, args) and tool_execution_end
	// (id, name, result, isError).
	ToolCallID string
	ToolName   string
	Args       json.RawMessage
	Result     *ToolResult
	IsError    bool
	// DurationMs is tool_execution_end's: how long since its
	// tool_execution_start; -1 (not written) when it had none.
	DurationMs int64

	// Retry describes auto_retry_start and auto_retry_end.
	Retry *Retry
	// Compaction describes compaction_end: nil when it failed.
	Compaction *Compaction
	// Reason is compaction_start's and compaction_end's reason: manual
	// (the compact command) or threshold (the CLI compacted by itself);
	// ErrorMessage says why a compaction_end has no result, Aborted that
	// the run ended first.
	Reason, ErrorMessage string
	Aborted              bool

	// Subagent is what subagent_lifecycle, subagent_progress and
	// subagent_event carry (subagents.go).
	Subagent *Subagent
	// Notice is what an extension_ui_request notify or setStatus carries
	// (notices.go).
	Notice *Notice
}

// Compaction is pi's CompactionResult, from the CLI's compact_boundary and
// the summary that follows it. The CLI keeps no entry id for the first
// message kept, so FirstKeptEntryID is its boundary's uuid.
type Compaction struct {
	Summary          string             `json:"summary"`
	FirstKeptEntryID string             `json:"firstKeptEntryId"`
	TokensBefore     int64              `json:"tokensBefore"`
	Details          *CompactionDetails `json:"details"`
}

// CompactionDetails are the CLI's figures for a compaction.
type CompactionDetails struct {
	Trigger     string `json:"trigger"`
	TokensAfter int64  `json:"tokensAfter"`
}

// Retry is what pi's auto_retry_start (Attempt, MaxAttempts, DelayMs,
// ErrorMessage) and auto_retry_end (Success, Attempt, FinalError) carry.
type Retry struct {
	Attempt      int
	MaxAttempts  int
	DelayMs      int64
	ErrorMessage string
	Success      bool
	FinalError   string
}

// ToolResult is the result of tool_execution_end: what the tool returned
// and, when the CLI reported them, structured details (e.g. Bash's stdout,
// stderr and interrupted).
type ToolResult struct {
	Content []Content       `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
	// Usage is what a tool that ran a model spent (a pi extension's: a
	// sub-agent's tokens and cost), as the tool gave it.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// AssistantEvent is pi's AssistantMessageEvent inside message_update.
type AssistantEvent struct {
	Type         string
	ContentIndex int
	// Delta is the new text of a *_delta event.
	Delta string
	// Content is the whole block's text of text_end and thinking_end: all
	// of it, or its last part after parts (see [Content]).
	Content string
	parts   []textPart
	// ToolCall is the finished call of toolcall_end.
	ToolCall *Content
}

// WholeContent is Content whole: joined, when the block it ends is kept
// in parts (see [Content]), which copies it.
func (a *AssistantEvent) WholeContent() string {
	return rope{parts: a.parts, last: a.Content}.String()
}

// MarshalJSON writes the event in pi's shape (shapes.go).
func (e Event) MarshalJSON() ([]byte, error) {
	switch e.Type {
	case EventAgentEnd:
		msgs := e.Messages
		if msgs == nil {
			msgs = []Message{}
		}
		return marshalNoEscape(agentEndJSON{e.Type, msgs, false, !e.Continues, !e.Continues})
	case EventTurnEnd:
		trs := e.ToolResults
		if trs == nil {
			trs = []Message{}
		}
		return marshalNoEscape(turnEndJSON{e.Type, &e.Message, trs})
	case EventMessageStart, EventMessageEnd:
		return marshalNoEscape(messageJSON{e.Type, &e.Message, e.MessageID})
	case EventToolExecutionStart:
		args := e.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return marshalNoEscape(toolExecutionStartJSON{e.Type, e.ToolCallID, e.ToolName, args})
	case EventToolExecutionEnd:
		var d *int64
		if e.DurationMs >= 0 {
			d = &e.DurationMs
		}
		return marshalNoEscape(toolExecutionEndJSON{e.Type, e.ToolCallID, e.ToolName, e.Result, e.IsError, d})
	case EventAutoRetryStart:
		r := e.Retry
		return marshalNoEscape(autoRetryStartJSON{e.Type, r.Attempt, r.MaxAttempts, r.DelayMs, r.ErrorMessage})
	case EventAutoRetryEnd:
		r := e.Retry
		return marshalNoEscape(autoRetryEndJSON{e.Type, r.Success, r.Attempt, r.FinalError})
	case EventCompactionStart:
		return marshalNoEscape(compactionStartJSON{e.Type, e.Reason})
	case EventCompactionEnd:
		return marshalNoEscape(compactionEndJSON{e.Type, e.Reason, e.Compaction, e.Aborted, false, e.ErrorMessage})
	case EventSubagentLifecycle:
		return marshalNoEscape(subagentLifecycleJSON{e.Type, e.Subagent.Lifecycle})
	case EventSubagentProgress:
		return marshalNoEscape(subagentProgressJSON{e.Type, e.Subagent.Progress})
	case EventSubagentEvent:
		return marshalNoEscape(subagentEventJSON{e.Type, SubagentEventPayload{e.Subagent.ID, e.Subagent.Event}})
	case eventUIRequest:
		return e.Notice.marshal()
	case EventMessageUpdate:
		return marshalNoEscape(messageUpdateJSON{e.Type, &e.Message.Usage, e.Update.marshal(&e.Message), &e.Message, e.MessageID})
	case EventAgentStart, EventTurnStart:
		return marshalNoEscape(typeOnlyJSON{e.Type})
	default:
		unknownEvent(e.Type)
		return marshalNoEscape(typeOnlyJSON{e.Type})
	}
}

// OnUnknownEvent, when set, is called with the type of each event that has
// no encoding (its case missing in [Event.MarshalJSON] and the Encoder),
// before the event is written as {"type":…} alone. A new event type
// must not go out so by accident: transform's and the bridge's tests set
// it to panic (TestMain); the binary leaves it nil, and the host sees an
// event of a type it may ignore. Set it before any event is encoded and
// never after.
var OnUnknownEvent func(typ string)

func unknownEvent(typ string) {
	if f := OnUnknownEvent; f != nil {
		f(typ)
	}
}

// marshal writes the assistantMessageEvent with partial, the message so far.
func (a *AssistantEvent) marshal(partial *Message) json.RawMessage {
	v := assistantEventJSON{Type: a.Type, ContentIndex: a.ContentIndex, ToolCall: a.ToolCall, Partial: partial}
	if c := partial.block(a.ContentIndex); a.Type == ToolcallStart && c != nil {
		v.ID, v.ToolName = c.ID, c.Name
	}
	switch a.Type {
	case TextDelta, ThinkingDelta, ToolcallDelta:
		v.Delta = &a.Delta
	case TextEnd, ThinkingEnd:
		whole := a.WholeContent()
		v.Content = &whole
	}
	b, err := marshalNoEscape(v)
	if err != nil {
		// Only a message with invalid tool-call JSON can fail, and the
		// translator never stores one.
		panic("transform: encoding assistant event: " + err.Error())
	}
	return b
}

// block is content block i, nil when there is none.
func (m *Message) block(i int) *Content {
	if i < 0 || i >= len(m.Content) {
		return nil
	}
	return &m.Content[i]
}
