// Package transform turns the Claude CLI's stream-json output into the pi
// coding agent's RPC events and messages. It is pure: lines in, events out,
// no I/O, no processes, no clocks other than the one it is given. That keeps
// the mapping testable on recorded streams (golden files) and fuzzable.
package transform

import (
	"bytes"
	"encoding/json"
)

// Roles of pi's AgentMessage.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolResult = "toolResult"
	// RoleCustom is a pi extension's message (sendMessage, or what its
	// before_agent_start adds): the model gets its content as the user's.
	RoleCustom = "custom"
)

// Stop reasons of pi's AssistantMessage.
const (
	StopStop = "stop"
	// StopPending is an assistant message's stop reason at its
	// message_start, before it is known.
	StopPending = "pending"
	StopLength  = "length"
	StopToolUse = "toolUse"
	StopError   = "error"
	StopAborted = "aborted"
)

// abortedMessage is the errorMessage pi gives an aborted assistant message.
const abortedMessage = "This operation was aborted"

// Content is one block of a message's content: text, thinking, toolCall or
// image. Only the fields of its Type are written.
type Content struct {
	Type string
	// Text is the text of a "text" block, and Thinking the text of a
	// "thinking" block: all of it, or for a long streamed block (past
	// partSize) its last part, after parts. [Content.Whole] is the whole
	// text either way; the encoders write it part by part.
	Text     string
	Thinking string
	// ID, Name and Arguments describe a "toolCall" block; Arguments is a
	// JSON object.
	ID        string
	Name      string
	Arguments json.RawMessage
	// Data (base64) and MimeType describe an "image" block.
	Data     string
	MimeType string

	// escOf and escAt, when set, are a prefix of the text of a text or
	// thinking block being streamed and the offsets in it of the characters
	// JSON escapes, found as the text grows so that frames write it without
	// scanning it again: a copy of the runs between them ([Encoder]).
	escOf string
	escAt []uint32

	// parts, for a long streamed text or thinking block, are the parts of
	// its text before Text (or Thinking), each complete, in arrays of
	// their own; nil for every other block. Never changed in place.
	parts []textPart
}

// TextContent returns a text block.
func TextContent(s string) Content { return Content{Type: "text", Text: s} }

// MarshalJSON writes the block in pi's shape (shapes.go):
// {type:"text",text} and so on.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "text":
		return marshalNoEscape(textJSON{c.Type, c.Whole()})
	case "thinking":
		return marshalNoEscape(thinkingJSON{c.Type, c.Whole()})
	case "toolCall":
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return marshalNoEscape(toolCallJSON{c.Type, c.ID, c.Name, args})
	case "image":
		return marshalNoEscape(imageJSON{c.Type, c.Data, c.MimeType})
	default:
		return marshalNoEscape(typeOnlyJSON{c.Type})
	}
}

// UnmarshalJSON reads a block written by MarshalJSON.
func (c *Content) UnmarshalJSON(b []byte) error {
	var v struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Data      string          `json:"data"`
		MimeType  string          `json:"mimeType"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Content{Type: v.Type, Text: v.Text, Thinking: v.Thinking, ID: v.ID, Name: v.Name,
		Arguments: v.Arguments, Data: v.Data, MimeType: v.MimeType}
	return nil
}

// Cost is a cost breakdown in US dollars.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// Usage is pi's token usage of one assistant message.
type Usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
	Cost        Cost  `json:"cost"`
}

// Message is pi's AgentMessage: a user, assistant or toolResult message.
// Fields that do not belong to its Role stay empty and are not written.
type Message struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`

	// Assistant fields.
	API          string `json:"api,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	Usage        Usage  `json:"usage"`
	StopReason   string `json:"stopReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`

	// ResponseID is the API's message id of an assistant message.
	ResponseID string `json:"responseId,omitempty"`
	// RawStopReason is the API's stop_reason of an assistant message;
	// ThinkingLevel is the level it was asked with (pi 1.5's).
	RawStopReason string `json:"rawStopReason,omitempty"`
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// DurationMs is how long an assistant message's model call or a tool
	// result's tool took (pi 1.5's); nil when unknown.
	DurationMs *int64 `json:"durationMs,omitempty"`

	// ToolResult fields. ToolUsage is what the tool spent, when it ran a
	// model (a pi extension's sub-agent): ToolResult.Usage.
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	IsError    *bool           `json:"isError,omitempty"`
	ToolUsage  json.RawMessage `json:"-"`

	// CustomType and Display are a custom message's: the extension's kind
	// of message, and whether a UI shows it (nil: not said). Its Details
	// are the extension's too.
	CustomType string `json:"customType,omitempty"`
	Display    *bool  `json:"display,omitempty"`
	// ContentString: the extension gave a custom message's content as a
	// string (its one text block), which is written back as one, as pi
	// keeps it.
	ContentString bool `json:"-"`

	// Timestamp is Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
}

// MarshalJSON writes the message in pi's shape (shapes.go), with its keys
// in pi's order for the role; nil content is written as [].
func (m Message) MarshalJSON() ([]byte, error) {
	content := m.Content
	if content == nil {
		content = []Content{}
	}
	switch m.Role {
	case RoleAssistant:
		return marshalNoEscape(assistantJSON{m.Role, content, m.API, m.Provider, m.Model, m.Usage, m.StopReason, m.Timestamp, m.ResponseID,
			m.ErrorMessage, m.RawStopReason, m.DurationMs, m.ThinkingLevel})
	case RoleToolResult:
		isError := m.IsError != nil && *m.IsError
		return marshalNoEscape(toolResultJSON{m.Role, m.ToolCallID, m.ToolName, content, m.Details, isError, m.ToolUsage, m.DurationMs, m.Timestamp})
	case RoleCustom:
		return marshalNoEscape(customJSON{m.Role, m.CustomType, m.customContent(), m.Display, m.Details, m.Timestamp})
	default:
		return marshalNoEscape(userJSON{m.Role, content, m.Timestamp})
	}
}

// customContent is a custom message's content as pi keeps it: a string
// when it was given as one, else its blocks.
func (m *Message) customContent() any {
	if m.ContentString && len(m.Content) == 1 && m.Content[0].Type == "text" {
		return m.Content[0].Whole()
	}
	if m.Content == nil {
		return []Content{}
	}
	return m.Content
}

// CustomContentJSON is a custom message's content as pi keeps it (a
// string when it was given as one, else its blocks), encoded.
func (m *Message) CustomContentJSON() (json.RawMessage, error) {
	return marshalNoEscape(m.customContent())
}

// Text returns the concatenated text blocks of the message.
func (m *Message) Text() string {
	var n int
	for i := range m.Content {
		if c := &m.Content[i]; c.Type == "text" {
			n += c.TextLen()
		}
	}
	b := make([]byte, 0, n)
	for i := range m.Content {
		if c := &m.Content[i]; c.Type == "text" {
			b = c.textOf().appendTo(b)
		}
	}
	return string(b)
}

// Clone returns a copy that shares no mutable state with m.
func (m *Message) Clone() Message {
	c := *m
	c.Content = append([]Content(nil), m.Content...)
	return c
}

// Stored returns a copy of m to keep in a session's history: without the
// escape offsets a streamed message carries for its frames.
func (m *Message) Stored() Message {
	c := m.Clone()
	for i := range c.Content {
		c.Content[i].escOf, c.Content[i].escAt = "", nil
	}
	return c
}

// UserMessage returns a user message with the given content.
func UserMessage(content []Content, ts int64) Message {
	return Message{Role: RoleUser, Content: content, Timestamp: ts}
}

// marshalNoEscape encodes v as JSON without HTML escaping, so <, > and &
// reach the host as they are.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MessageFromPi reads a message as pi writes it in its session files and
// frames: a user, assistant, toolResult or custom message whose content is
// an array of blocks or, for a user or custom message, a string (one text
// block). ok is false for other roles (pi's bashExecution, system,
// compactionSummary, branchSummary: no Message of claude-rpc's) and for
// what is no message at all.
func MessageFromPi(raw []byte) (m Message, ok bool) {
	var v struct {
		Message
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return Message{}, false
	}
	switch v.Role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleCustom:
	default:
		return Message{}, false
	}
	m = v.Message
	var s string
	switch {
	case json.Unmarshal(v.Content, &s) == nil:
		if s != "" {
			m.Content = []Content{TextContent(s)}
			m.ContentString = m.Role == RoleCustom
		}
	case len(v.Content) > 0 && json.Unmarshal(v.Content, &m.Content) != nil:
		return Message{}, false
	}
	return m, true
}
