package hostlink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// Server is the MCP server name of the host's tools: the model sees
// them as mcp__host__<name>.
const Server = "host"

// Tool is one tool the host defined with set_host_tools (or an
// extension's, which the bridge serves the same way).
type Tool struct {
	Name        string          `json:"name"`
	Label       string          `json:"label,omitempty"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolNameRe is what the Messages API accepts as a tool name (with the
// mcp__host__ prefix the CLI adds, within its 64 characters).
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,54}$`)

// ParseTools reads set_host_tools' tools and their names, in order; the
// error says which tool is wrong and why.
func ParseTools(v gjson.Result) ([]Tool, []string, error) {
	var tools []Tool
	names := []string{}
	seen := map[string]bool{}
	for i, t := range v.Array() {
		tool := Tool{Name: t.Get("name").String(), Label: t.Get("label").String(), Description: t.Get("description").String()}
		params := t.Get("parameters")
		var err error
		switch {
		case !t.IsObject():
			err = fmt.Errorf("tools[%d] must be an object", i)
		case !toolNameRe.MatchString(tool.Name):
			err = fmt.Errorf("tools[%d]: name %q must be 1-54 letters, digits, _ or -", i, tool.Name)
		case seen[tool.Name]:
			err = fmt.Errorf("tools[%d]: name %q is given twice", i, tool.Name)
		case tool.Name == uriReadTool || tool.Name == uriWriteTool:
			err = fmt.Errorf("tools[%d]: name %q is claude-rpc's, for host URIs (set_host_uri_schemes)", i, tool.Name)
		case params.Exists() && !params.IsObject():
			err = fmt.Errorf("tools[%d]: parameters must be a JSON Schema object", i)
		}
		if err != nil {
			return nil, nil, err
		}
		tool.Parameters = json.RawMessage(`{"type":"object"}`)
		if params.Exists() {
			tool.Parameters = json.RawMessage(params.Raw)
		}
		if tool.Description == "" {
			tool.Description = tool.Label
		}
		seen[tool.Name] = true
		names = append(names, tool.Name)
		tools = append(tools, tool)
	}
	return tools, names, nil
}

// ServeMCP answers one JSON-RPC message m of the CLI's MCP client to a
// server the bridge serves over the control protocol, whose tools/list is
// list's and whose tools/call call answers (MCP's CallToolResult).
func ServeMCP(ctx context.Context, m gjson.Result, list func() []map[string]any, call func(ctx context.Context, params gjson.Result) map[string]any) map[string]any {
	result := func(r any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "result": r}
	}
	method := m.Get("method").String()
	switch {
	case method == "initialize":
		return result(map[string]any{"protocolVersion": m.Get("params.protocolVersion").String(),
			"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]string{"name": "claude-rpc host tools", "version": "1"}})
	case method == "tools/list":
		return result(map[string]any{"tools": list()})
	case method == "tools/call":
		return result(call(ctx, m.Get("params")))
	case method == "ping" || strings.HasPrefix(method, "notifications/") || !m.Get("id").Exists():
		return map[string]any{"jsonrpc": "2.0", "result": map[string]any{}} // acknowledged
	}
	return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw),
		"error": map[string]any{"code": -32601, "message": "method not found: " + method}}
}

// MCPMessage answers one JSON-RPC message of the CLI's MCP client to the
// host's server ([Server]): its tools and those of its URI schemes.
func (h *Link) MCPMessage(ctx context.Context, m gjson.Result) map[string]any {
	return ServeMCP(ctx, m, func() []map[string]any { return ToolList(h.cfg.Served()) }, h.CallTool)
}

// ToolList is the host server's tools/list: the host's tools and those
// of its URI schemes.
func ToolList(tools []Tool, uris []URIScheme) []map[string]any {
	return append(MCPTools(tools), uriTools(uris)...)
}

// Fingerprint is a tools/list's entry in claudecli.Config's SDKTools.
func Fingerprint(list []map[string]any) string {
	b, err := json.Marshal(list)
	if err != nil {
		return "" // not reached: made of JSON values
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// MCPTools is tools/list's list of tools.
func MCPTools(tools []Tool) []map[string]any {
	list := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		// alwaysLoad: the model gets the tool itself, not a placeholder
		// behind the CLI's tool search (which defers MCP tools).
		list = append(list, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.Parameters,
			"_meta": map[string]any{"anthropic/alwaysLoad": true}})
	}
	return list
}

// TextResult is MCP's CallToolResult of one text block.
func TextResult(text string, isError bool) map[string]any {
	return map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isError}
}

// CallTool runs the host server's tools/call (params): a host URI tool's
// ([Link.callURITool]) or one of the host's tools, which it sends as
// host_tool_call and waits for host_tool_result; if the CLI withdraws
// the call (an interrupted turn) or the run ends, the host gets
// host_tool_cancel. It returns MCP's CallToolResult.
func (h *Link) CallTool(ctx context.Context, p gjson.Result) map[string]any {
	name := p.Get("name").String()
	if name == uriReadTool || name == uriWriteTool {
		return h.callURITool(ctx, name, p.Get("arguments"))
	}
	id, w, ctx, done := h.register(ctx, "host_", 16)
	defer done()
	toolCallID := p.Get(`_meta.claudecode/toolUseId`).String()
	args := json.RawMessage(p.Get("arguments").Raw)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	h.cfg.ToolStarted(ctx, toolCallID) // host_tool_call and its progress after tool_execution_start
	h.cfg.Send(hostToolCallJSON{Type: "host_tool_call", ID: id, ToolCallID: toolCallID, ToolName: name, Arguments: args})
	for {
		select {
		case a := <-w.ch:
			if a.Get("type").String() == "host_tool_update" {
				h.cfg.ToolUpdate(toolCallID, name, args, json.RawMessage(a.Get("partialResult").Raw))
				continue
			}
			content := json.RawMessage(a.Get("result.content").Raw)
			return map[string]any{"content": content, "isError": a.Get("isError").Bool()}
		case <-ctx.Done():
			h.cfg.Send(hostToolCancelJSON{Type: "host_tool_cancel", ID: h.Next("host_cancel_"), TargetID: id})
			return TextResult("The tool call was cancelled.", true)
		}
	}
}
