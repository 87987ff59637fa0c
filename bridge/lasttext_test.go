package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/claude-rpc/claude-rpc/transform"
)

// TestLastAssistantText: get_last_assistant_text's rule, pi 1.6.0's
// (checked against pi 1.6.0 itself: testdata/pi16/last-assistant-text.jsonl):
// the messages of an aborted or failed turn that have no text, and those
// that only call tools, are skipped; a reply that ended normally answers
// even without text.
func TestLastAssistantText(t *testing.T) {
	user := transform.UserMessage([]transform.Content{transform.TextContent("hi")}, 1)
	reply := func(stop string, content ...transform.Content) transform.Message {
		return transform.Message{Role: transform.RoleAssistant, StopReason: stop, Content: content}
	}
	text := transform.TextContent
	call := transform.Content{Type: "toolCall", ID: "t1", Name: "bash"}
	thinking := transform.Content{Type: "thinking", Thinking: "hmm"}
	result := transform.Message{Role: transform.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Content: []transform.Content{text("out")}}
	first := reply(transform.StopStop, text("  first reply\n"))
	for _, tc := range []struct {
		name string
		msgs []transform.Message
		want string
	}{
		{"no messages", nil, ""},
		{"only a prompt", []transform.Message{user}, ""},
		{"a reply, trimmed", []transform.Message{user, first}, "first reply"},
		{"text blocks joined", []transform.Message{user, reply(transform.StopStop, text("a"), call, text("b"))}, "ab"},
		{"a reply after a tool", []transform.Message{user, first, user, reply(transform.StopToolUse, call), result, reply(transform.StopStop, text("done"))}, "done"},
		// pi 1.6.0 answers the reply before these; pi 1.5.2 answered {}.
		{"a tool-only message last (a run aborted during its tool)", []transform.Message{user, first, user, reply(transform.StopToolUse, call), result}, "first reply"},
		{"an aborted message with a tool call", []transform.Message{user, first, user, reply(transform.StopAborted, call)}, "first reply"},
		{"an aborted message with thinking only", []transform.Message{user, first, user, reply(transform.StopAborted, thinking)}, "first reply"},
		{"a failed turn", []transform.Message{user, first, user, reply(transform.StopError)}, "first reply"},
		{"a failed turn with blank text", []transform.Message{user, first, user, reply(transform.StopError, text(" \n"))}, "first reply"},
		{"a cut reply without text", []transform.Message{user, first, user, reply(transform.StopLength, thinking)}, "first reply"},
		// As in both generations.
		{"an aborted message without content", []transform.Message{user, first, user, reply(transform.StopAborted)}, "first reply"},
		{"an aborted message with text", []transform.Message{user, first, user, reply(transform.StopAborted, text("word word"))}, "word word"},
		{"a tool call with text", []transform.Message{user, first, user, reply(transform.StopToolUse, text("Running."), call), result}, "Running."},
		{"a reply that ended normally without text", []transform.Message{user, first, user, reply(transform.StopStop, thinking)}, ""},
		{"nothing before the skipped ones", []transform.Message{user, reply(transform.StopError)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, lastAssistantText(tc.msgs))
		})
	}
}
