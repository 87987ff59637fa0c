package transform

import "encoding/json"

// The structs below are what MarshalJSON writes: one per JSON shape of an
// event, a message, a content block and an assistantMessageEvent, their
// keys in pi's order. Their field comments are the protocol reference's
// descriptions (bridge's reference test generates testdata/protocol from
// them), so they speak to the host's developer. A `schema` tag names the
// reference's type for a field whose Go type does not say it (raw JSON, or
// a narrower kind of message).

// typeOnlyJSON is an event that carries nothing but its type: agent_start
// (a run begins) and turn_start (a model call begins).
type typeOnlyJSON struct {
	Type string `json:"type"`
}

// agentEndJSON is sent when a run ends: nothing more comes for the prompt.
type agentEndJSON struct {
	Type string `json:"type"`
	// Messages are the run's messages in order: the prompt, steering and
	// follow-up messages, assistant messages and tool results.
	Messages []Message `json:"messages"`
	// WillRetry is pi 1.5's: always false, the CLI retries API calls
	// within a run (auto_retry_start/end), never a whole run.
	WillRetry bool `json:"willRetry"`
	// IsTerminal is omp's: false when the bridge goes on by itself with
	// another run (messages queued meanwhile, abort_and_prompt's prompt).
	IsTerminal bool `json:"isTerminal"`
	// Yielded is omp's: the same as isTerminal (nothing runs in the
	// background that could wake the session).
	Yielded bool `json:"yielded"`
}

// turnEndJSON is sent when one model call and the tool calls it made are
// over.
type turnEndJSON struct {
	Type string `json:"type"`
	// Message is the turn's assistant message, as in its message_end.
	Message *Message `json:"message"`
	// ToolResults are the results of the turn's tool calls, in order.
	ToolResults []Message `json:"toolResults" schema:"ref=ToolResultMessage"`
}

// messageJSON is sent when a message starts and when it ends.
type messageJSON struct {
	Type string `json:"type"`
	// Message is the message: at message_start as far as known (an
	// assistant message has no content yet), at message_end complete.
	Message *Message `json:"message"`
	// MessageID names the message across its frames (omp's): "msg-N",
	// counted over the bridge's life.
	MessageID string `json:"messageId,omitempty"`
}

// messageUpdateJSON is sent for each step of an assistant message's
// streaming.
type messageUpdateJSON struct {
	Type string `json:"type"`
	// Usage is the message's usage so far (pi 1.5's).
	Usage *Usage `json:"usage"`
	// Update says what changed.
	Update json.RawMessage `json:"assistantMessageEvent" schema:"ref=AssistantMessageEvent"`
	// Message is the assistant message so far, the same as the update's
	// partial. Absent with --message-updates delta (pi 1.5's frames: the
	// host keeps the message from the deltas).
	Message *Message `json:"message,omitempty" schema:"ref=AssistantMessage"`
	// MessageID is the message_start's messageId.
	MessageID string `json:"messageId,omitempty"`
}

// toolExecutionStartJSON is sent when the CLI runs a tool the model called.
type toolExecutionStartJSON struct {
	Type string `json:"type"`
	// ToolCallID is the toolCall block's id.
	ToolCallID string `json:"toolCallId"`
	// ToolName is the tool's name: with --tool-names pi (the default) pi's
	// for the CLI's tools pi has (read, write, edit, bash, grep, find, ls),
	// else the CLI's (Bash, Read, mcp__server__tool, …).
	ToolName string `json:"toolName"`
	// Args are the call's arguments, a JSON object: in pi's shape for a
	// tool shown by pi's name (the CLI's arguments pi lacks kept beside).
	Args json.RawMessage `json:"args"`
}

// toolExecutionEndJSON is sent when a tool call finished.
type toolExecutionEndJSON struct {
	Type       string `json:"type"`
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	// Result is what the tool returned.
	Result *ToolResult `json:"result"`
	// IsError is true when the tool failed or was refused.
	IsError bool `json:"isError"`
	// DurationMs is how long the tool ran, from tool_execution_start (pi
	// 1.5's); absent when it never started.
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// autoRetryStartJSON is sent when the CLI waits to retry a failed API call.
type autoRetryStartJSON struct {
	Type string `json:"type"`
	// Attempt counts from 1.
	Attempt int `json:"attempt"`
	// MaxAttempts is the CLI's retry limit (CLAUDE_CODE_MAX_RETRIES).
	MaxAttempts int `json:"maxAttempts"`
	// DelayMs is how long the CLI waits before the attempt.
	DelayMs int64 `json:"delayMs"`
	// ErrorMessage is the API error that caused the retry.
	ErrorMessage string `json:"errorMessage"`
}

// autoRetryEndJSON is sent when the retries are over: the call went
// through or failed for good.
type autoRetryEndJSON struct {
	Type    string `json:"type"`
	Success bool   `json:"success"`
	// Attempt is the last attempt made.
	Attempt int `json:"attempt"`
	// FinalError is the last error when the retries failed.
	FinalError string `json:"finalError,omitempty"`
}

// compactionStartJSON is sent when a compaction starts: the compact
// command's, or the CLI's own when the context is nearly full.
type compactionStartJSON struct {
	Type string `json:"type"`
	// Reason is "manual" (the compact command) or "threshold" (the CLI
	// compacted by itself: the context was nearly full).
	Reason string `json:"reason" schema:"enum=manual|threshold"`
}

// compactionEndJSON is sent when a compaction ended.
type compactionEndJSON struct {
	Type string `json:"type"`
	// Reason is the compaction_start's.
	Reason string `json:"reason" schema:"enum=manual|threshold"`
	// Result is the compaction; null when it failed or was aborted.
	Result *Compaction `json:"result" schema:"nullable"`
	// Aborted is true when the run ended before the compaction did.
	Aborted bool `json:"aborted"`
	// WillRetry is always false: the CLI decides about retries itself.
	WillRetry bool `json:"willRetry"`
	// ErrorMessage says why there is no result.
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// uiNotifyJSON asks the host to show a message that goes by itself (pi's
// ctx.ui.notify): one of the CLI's notices (a hook that failed, a usage
// limit near, the conversation cleared …), or an extension's
// (--extension). Fire-and-forget: no answer is expected.
type uiNotifyJSON struct {
	Type string `json:"type"`
	// ID names the request.
	ID     string `json:"id"`
	Method string `json:"method"`
	// Message is the text to show.
	Message string `json:"message"`
	// NotifyType is info, warning or error.
	NotifyType string `json:"notifyType" schema:"enum=info|warning|error"`
}

// uiSetStatusJSON sets or clears an entry of the host's status bar (pi's
// ctx.ui.setStatus): one of the CLI's states (a hook running, a usage
// limit, the permission mode, background tasks), or an extension's
// (--extension). Fire-and-forget: no answer is expected.
type uiSetStatusJSON struct {
	Type string `json:"type"`
	// ID names the request.
	ID     string `json:"id"`
	Method string `json:"method"`
	// StatusKey names the entry: the CLI's are claude.hook.<hook id> (a
	// hook running), claude.rateLimit, claude.auth,
	// claude.permissionMode and claude.backgroundTasks.
	StatusKey string `json:"statusKey"`
	// StatusText is absent to clear the entry.
	StatusText *string `json:"statusText,omitempty"`
}

// assistantEventJSON is pi's AssistantMessageEvent: one step of an
// assistant message's streaming.
type assistantEventJSON struct {
	Type string `json:"type"`
	// ContentIndex is the index of the content block it is about.
	ContentIndex int `json:"contentIndex"`
	// Delta is the new text of a text_delta or thinking_delta, or the next
	// piece of the arguments' JSON of a toolcall_delta. Deltas of one block
	// that arrive within --coalesce (4 ms; longer for a long message) come
	// as one, their concatenation (--coalesce 0: one event each, as pi).
	Delta *string `json:"delta,omitempty"`
	// Content is the block's whole text, on text_end and thinking_end.
	Content *string `json:"content,omitempty"`
	// ID and ToolName name the tool call, on toolcall_start (pi 1.5's).
	ID       string `json:"id,omitempty"`
	ToolName string `json:"toolName,omitempty"`
	// ToolCall is the finished call, on toolcall_end.
	ToolCall *Content `json:"toolCall,omitempty" schema:"ref=ToolCall"`
	// Partial is the assistant message so far; absent with
	// --message-updates delta.
	Partial *Message `json:"partial,omitempty" schema:"ref=AssistantMessage"`
}

// assistantJSON is a message from the model.
type assistantJSON struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`
	// API is "anthropic-messages".
	API string `json:"api"`
	// Provider is "anthropic".
	Provider string `json:"provider"`
	// Model is the model id the API answered with.
	Model string `json:"model"`
	// Usage are the tokens of this model call. cost.total is the cost the
	// CLI reports for a turn, on the turn's last assistant message (0 on
	// the others).
	Usage Usage `json:"usage"`
	// StopReason is why the message ended.
	StopReason string `json:"stopReason" schema:"enum=stop|length|toolUse|error|aborted|pending"`
	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
	// ResponseID is the API's message id.
	ResponseID string `json:"responseId,omitempty"`
	// ErrorMessage says what went wrong when stopReason is error or aborted.
	ErrorMessage string `json:"errorMessage,omitempty"`
	// RawStopReason is the API's stop_reason (end_turn, tool_use,
	// max_tokens …), when the API gave one.
	RawStopReason string `json:"rawStopReason,omitempty"`
	// DurationMs is how long the model call took, as the bridge saw it:
	// from the request's cause (the prompt, the last tool result) to the
	// message's end.
	DurationMs *int64 `json:"durationMs,omitempty"`
	// ThinkingLevel is the thinking level the call was made with.
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
}

// toolResultJSON is what a tool call returned, as the model sees it.
type toolResultJSON struct {
	Role string `json:"role"`
	// ToolCallID is the id of the toolCall block it answers.
	ToolCallID string    `json:"toolCallId"`
	ToolName   string    `json:"toolName"`
	Content    []Content `json:"content"`
	// Details are the CLI's structured result when it gives one (Bash:
	// stdout, stderr, interrupted); for pi's edit, pi's {diff,
	// firstChangedLine} instead.
	Details json.RawMessage `json:"details,omitempty"`
	IsError bool            `json:"isError"`
	// Usage is what the tool spent when it ran a model (a pi extension's
	// sub-agent), as its tool_execution_end's.
	Usage json.RawMessage `json:"usage,omitempty"`
	// DurationMs is how long the tool ran, as its tool_execution_end's.
	DurationMs *int64 `json:"durationMs,omitempty"`
	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
}

// userJSON is a message from the user: a prompt, a steering or follow-up
// message, or the CLI's own continuation after a reply hit max_tokens.
type userJSON struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`
	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
}

// customJSON is a pi extension's message (its sendMessage, or what its
// before_agent_start adds to a run): the model gets its content as the
// user's.
type customJSON struct {
	Role string `json:"role"`
	// CustomType is the extension's kind of message.
	CustomType string `json:"customType"`
	// Content is a string or Content blocks, as the extension gave it.
	Content any `json:"content"`
	// Display is whether a UI shows it; absent when the extension did not
	// say.
	Display *bool `json:"display,omitempty"`
	// Details are the extension's, as it gave them.
	Details json.RawMessage `json:"details,omitempty"`
	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
}

// textJSON is a text block.
type textJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// thinkingJSON is the model's thinking, whole (the CLI relays no thinking
// deltas).
type thinkingJSON struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

// toolCallJSON is a tool call of the model.
type toolCallJSON struct {
	Type string `json:"type"`
	// ID is the API's tool_use id.
	ID string `json:"id"`
	// Name is the tool's name, as tool_execution_start's toolName.
	Name string `json:"name"`
	// Arguments are the call's input, a JSON object, as
	// tool_execution_start's args.
	Arguments json.RawMessage `json:"arguments"`
}

// imageJSON is an image the host sent with a prompt.
type imageJSON struct {
	Type string `json:"type"`
	// Data is base64.
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// Shape is one JSON shape this package writes, for the protocol reference:
// a zero value of the struct MarshalJSON encodes for it (Go), what it is a
// shape of (Kind: "event", "message", "content" or "assistantMessageEvent")
// and the value of the field that tells it from its siblings (Tag: an
// event's or block's type, a message's role; type.method for the
// extension_ui_request frames, told apart by their method).
type Shape struct {
	Kind, Tag string
	Go        any
}

// Shapes lists every shape MarshalJSON writes.
func Shapes() []Shape {
	s := []Shape{
		{"event", EventAgentStart, typeOnlyJSON{}},
		{"event", EventAgentEnd, agentEndJSON{}},
		{"event", EventTurnStart, typeOnlyJSON{}},
		{"event", EventTurnEnd, turnEndJSON{}},
		{"event", EventMessageStart, messageJSON{}},
		{"event", EventMessageUpdate, messageUpdateJSON{}},
		{"event", EventMessageEnd, messageJSON{}},
		{"event", EventToolExecutionStart, toolExecutionStartJSON{}},
		{"event", EventToolExecutionEnd, toolExecutionEndJSON{}},
		{"event", EventAutoRetryStart, autoRetryStartJSON{}},
		{"event", EventAutoRetryEnd, autoRetryEndJSON{}},
		{"event", EventCompactionStart, compactionStartJSON{}},
		{"event", EventCompactionEnd, compactionEndJSON{}},
		{"event", EventSubagentLifecycle, subagentLifecycleJSON{}},
		{"event", EventSubagentProgress, subagentProgressJSON{}},
		{"event", EventSubagentEvent, subagentEventJSON{}},
		{"event", eventUIRequest + "." + NoticeNotify, uiNotifyJSON{}},
		{"event", eventUIRequest + "." + NoticeSetStatus, uiSetStatusJSON{}},
		{"message", RoleUser, userJSON{}},
		{"message", RoleAssistant, assistantJSON{}},
		{"message", RoleToolResult, toolResultJSON{}},
		{"message", RoleCustom, customJSON{}},
		{"content", "text", textJSON{}},
		{"content", "thinking", thinkingJSON{}},
		{"content", "toolCall", toolCallJSON{}},
		{"content", "image", imageJSON{}},
	}
	for _, t := range []string{TextStart, TextDelta, TextEnd, ThinkingStart, ThinkingDelta, ThinkingEnd,
		ToolcallStart, ToolcallDelta, ToolcallEnd} {
		s = append(s, Shape{"assistantMessageEvent", t, assistantEventJSON{}})
	}
	return s
}
