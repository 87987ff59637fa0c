package transform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnknownToolIsPis: the CLI's refusal of a tool it does not have (a
// host tool removed during the session, which CLI 2.1.328 and 2.1.332 keep
// in the model's list) reaches hosts in pi 1.6.0's words for a tool it
// does not know ("Tool X not found"); other errors are kept as they are.
func TestUnknownToolIsPis(t *testing.T) {
	for _, c := range []struct{ cli, want string }{
		{"<tool_use_error>Error: No such tool available: mcp__host__alpha</tool_use_error>", "Tool alpha not found"},
		{"<tool_use_error>Error: No such tool available: mcp__host__alpha. mcp__host__alpha is still listed for this conversation, but nothing in this session provides it right now (its source was removed or disconnected, or this version no longer has it), so it cannot run. Continue without it.</tool_use_error>", "Tool alpha not found"},
		{"<tool_use_error>Error: No such tool available: mcp__host__alpha. Its MCP server 'host' is connected but does not offer this tool here. Continue without it.</tool_use_error>", "Tool alpha not found"},
		// Another tool's name, another error: as the CLI said.
		{"<tool_use_error>Error: No such tool available: mcp__host__alphabet</tool_use_error>", ""},
		{"<tool_use_error>InputValidationError: bad</tool_use_error>", ""},
	} {
		tr := NewTranslator(clock())
		tr.Start(UserMessage(nil, 1))
		var evs []Event
		for _, l := range []string{
			`{"type":"assistant","message":{"id":"m1","model":"x","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__host__alpha","input":{}}],"usage":{}}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":` + quote(c.cli) + `}]}}`,
		} {
			evs = append(evs, tr.Line([]byte(l))...)
		}
		want := c.want
		if want == "" {
			want = c.cli
		}
		var got []string
		for _, e := range evs {
			switch {
			case e.Type == EventToolExecutionEnd:
				assert.True(t, e.IsError)
				got = append(got, e.Result.Content[0].Text)
			case e.Type == EventMessageEnd && e.Message.Role == RoleToolResult:
				got = append(got, e.Message.Content[0].Text)
			}
		}
		assert.Equal(t, []string{want, want}, got, c.cli)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
