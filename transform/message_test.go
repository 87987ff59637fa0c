package transform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMessageFromPi(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      Message
		ok        bool
	}{
		{"user string", `{"role":"user","content":"hi","timestamp":5}`, Message{Role: RoleUser, Content: []Content{TextContent("hi")}, Timestamp: 5}, true},
		{"user blocks", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}],"timestamp":1}`,
			Message{Role: RoleUser, Content: []Content{TextContent("a"), {Type: "image", Data: "AA==", MimeType: "image/png"}}, Timestamp: 1}, true},
		{"assistant", `{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"sig"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a"}}],"model":"m","stopReason":"toolUse","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"timestamp":2}`,
			Message{Role: RoleAssistant, Content: []Content{{Type: "thinking", Thinking: "t"}, {Type: "toolCall", ID: "c", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}},
				Model: "m", StopReason: "toolUse", Usage: Usage{Input: 1, Output: 2, TotalTokens: 3}, Timestamp: 2}, true},
		{"tool result", `{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":3}`,
			Message{Role: RoleToolResult, ToolCallID: "c", ToolName: "read", Content: []Content{TextContent("x")}, IsError: new(false), Timestamp: 3}, true},
		{"custom", `{"role":"custom","customType":"x","content":"y","display":true,"details":{"a":1},"timestamp":4}`,
			Message{Role: RoleCustom, CustomType: "x", Content: []Content{TextContent("y")}, ContentString: true, Display: new(true), Details: json.RawMessage(`{"a":1}`), Timestamp: 4}, true},
		{"bash", `{"role":"bashExecution","command":"ls"}`, Message{}, false},
		{"bad content", `{"role":"user","content":5}`, Message{}, false},
		{"not json", `{`, Message{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := MessageFromPi([]byte(tc.raw))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, m)
		})
	}
}
