package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/claudecli"
)

// The host in the loop is package hostlink's: the requests to the host
// waiting for its answers, the dialogs (permissions, AskUserQuestion, MCP
// elicitation, the CLI's own dialogs), the host's tools and URI schemes
// called. Here is the bridge's side: the link made with what it needs of
// the server, the CLI's control requests routed (the CLI config's Host),
// and the commands that set the host's tools and schemes (the CLI's
// settings: state keeps them with the others) or answer a request.

// newLink makes the server's link to the host.
func (s *server) newLink() *hostlink.Link {
	return hostlink.New(hostlink.Config{
		// s.out is made after the link, and before anything is asked.
		Send:        func(frame any) { s.out.Send(frame) },
		Ctx:         s.ctx,
		Log:         s.log,
		AskTimeout:  s.opts.AskTimeout,
		AskOn:       s.askOn,
		OwnServers:  []string{extServer},
		ToolStarted: s.toolStarts.wait,
		ToolUpdate: func(toolCallID, name string, args, partial json.RawMessage) {
			s.out.Send(toolExecutionUpdateJSON{Type: "tool_execution_update", ToolCallID: toolCallID,
				ToolName: s.opts.ToolNames.Name("mcp__" + hostlink.Server + "__" + name), Args: args, PartialResult: partial})
		},
		Served: s.st.hostServes,
	})
}

// hostRequest answers the CLI's control requests; it is the CLI config's
// Host. Every request it does not handle is refused with an error.
func (s *server) hostRequest(ctx context.Context, req claudecli.ControlRequest) (any, error) {
	switch req.Subtype {
	case "can_use_tool":
		return s.link.CanUseTool(ctx, req.Request)
	case "elicitation":
		return s.link.Elicitation(ctx, req.Request), nil
	case "request_user_dialog":
		return s.link.UserDialog(ctx, req.Request)
	case "hook_callback":
		return s.toolHook(ctx, req.Request), nil
	case "mcp_message":
		name := req.Request.Get("server_name").String()
		if name != hostlink.Server && name != extServer {
			return nil, fmt.Errorf("claude-rpc serves no MCP server %q", name)
		}
		return map[string]any{"mcp_response": s.mcpMessage(ctx, name, req.Request.Get("message"))}, nil
	}
	return nil, fmt.Errorf("claude-rpc does not handle %s requests", req.Subtype)
}

// mcpMessage answers one JSON-RPC message of the CLI's MCP client to
// server: the host tools' (hostlink.Server) or the extensions'
// (extServer).
func (s *server) mcpMessage(ctx context.Context, server string, m gjson.Result) map[string]any {
	if server == extServer {
		return hostlink.ServeMCP(ctx, m, func() []map[string]any {
			set, _ := s.st.currentSettings()
			return hostlink.MCPTools(set.offeredExtTools())
		}, s.callExtTool)
	}
	return s.link.MCPMessage(ctx, m)
}

// hostAnswer hands the host's answer (extension_ui_response,
// host_tool_result, host_tool_update, host_uri_result) to the request it
// names; it writes no response of its own.
func (s *server) hostAnswer(c *call) (any, error) {
	if err := s.link.Answer(c.typ, c.raw); err != nil {
		return nil, err
	}
	return nil, errAnswered
}

func (s *server) setHostTools(c *call) (any, error) {
	if !s.capsNow().Control {
		return nil, errors.New("set_host_tools: the transport cannot reach the host's tools")
	}
	tools, names, err := hostlink.ParseTools(c.raw.Get("tools"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.typ, err)
	}
	// From the next turn: the stream transport has the running process
	// list the tools again (claudecli's stream.SetConfig).
	s.applySettings(func(st *cliSettings) { st.hostTools = tools })
	return hostToolsData{ToolNames: names}, nil
}

func (s *server) setHostURISchemes(c *call) (any, error) {
	if !s.capsNow().Control {
		return nil, errors.New("set_host_uri_schemes: the transport cannot reach the host's tools")
	}
	v := c.raw.Get("schemes")
	if !v.IsArray() {
		return nil, fmt.Errorf("%s: \"schemes\" must be an array of {scheme, description?, writable?, immutable?}, got %s", c.typ, jsonKind(v))
	}
	schemes, names, err := hostlink.ParseURISchemes(v)
	if err != nil {
		return nil, err
	}
	// As host tools: the CLI lists the server's tools when it starts, so a
	// new set takes effect from the next turn.
	s.applySettings(func(st *cliSettings) { st.hostURIs = schemes })
	return hostURISchemesData{Schemes: names}, nil
}
