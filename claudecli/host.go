package claudecli

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/tidwall/gjson"
)

// ControlRequest is a request the CLI makes of its host over the control
// protocol (stream transport only): can_use_tool when it asks whether a tool
// may run (--permission-prompt-tool stdio), mcp_message for a tool server
// the host serves ([Config.SDKServers]), elicitation when an MCP server
// asks the user, request_user_dialog for a dialog of a kind the host
// declared ([Config.DialogKinds]).
type ControlRequest struct {
	ID      string
	Subtype string
	// Request is the request object (subtype, tool_name, input, ...).
	Request gjson.Result
}

// Host answers the CLI's control requests. It runs on a goroutine of its
// own per request and may take as long as a person needs; ctx is cancelled
// when the CLI withdraws the request (control_cancel_request, sent when a
// turn is interrupted) or its process ends, and then nothing is answered.
// The response is the "response" object of a success; an error is sent as
// the CLI's error response.
type Host func(ctx context.Context, req ControlRequest) (response any, err error)

// sdkServerArgs is the --mcp-config of servers the host serves itself over
// the control protocol ("type":"sdk", as the Agent SDKs pass them), and the
// rule that lets their tools run without asking: the host defined them.
func sdkServerArgs(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	names = append([]string(nil), names...)
	sort.Strings(names)
	servers := map[string]any{}
	for _, n := range names {
		servers[n] = map[string]string{"type": "sdk", "name": n}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": servers}) // maps of strings always encode
	args := []string{"--mcp-config", string(cfg)}
	for _, n := range names {
		args = append(args, "--allowedTools", "mcp__"+n)
	}
	return args
}
