package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// The host in the loop (stream transport). The CLI asks the bridge over its
// control protocol (as 2.1.328 does; host_e2e_test.go checks it):
//   - can_use_tool {tool_name, display_name, input, permission_suggestions,
//     tool_use_id} before a tool it may not run on its own, when started
//     with --permission-prompt-tool stdio (--ask). Answered {behavior:
//     "allow", updatedInput[, updatedPermissions]} or {behavior:"deny",
//     message}. AskUserQuestion comes the same way; its answers go back in
//     updatedInput.answers, keyed by question text.
//   - mcp_message {server_name, message} for the MCP server the bridge
//     serves for the host's tools (set_host_tools), JSON-RPC inside.
//   - elicitation {mcp_server_name, message, mode, requested_schema,
//     property_order, url, elicitation_id, title, display_name,
//     description} when an MCP server the CLI runs asks its user (MCP's
//     elicitation/create), by form or by URL; sent by 2.1.275 to 2.1.332
//     with nothing asked of the host (2.1.275 refuses URL mode itself: its
//     MCP client does not declare it). Answered with MCP's ElicitResult
//     {action: accept|decline|cancel, content}; an error answer counts as
//     cancel. dialogs.go puts it to the host as pi's dialogs.
//   - request_user_dialog {dialog_kind, payload, tool_use_id} for a
//     dialog of the CLI's own, only of the kinds declared in initialize
//     (supportedDialogKinds: dialogs.go's userDialogs, when asking is on).
//     Answered {behavior:"completed", result} or {behavior:"cancelled"}
//     (the CLI's default for the kind).
//
// Every other request is refused with an error.
//
// The host sees pi's extension_ui_request (answered with
// extension_ui_response) and xcsh's host_tool_call (answered with
// host_tool_result, optionally preceded by host_tool_update).

// hostServer is the MCP server name of the host's tools: the model sees
// them as mcp__host__<name>.
const hostServer = "host"

// Permission answers offered to the host.
const (
	allowOnce   = "Allow once"
	allowAlways = "Allow always"
	deny        = "Deny"
)

// hostTool is one tool the host defined with set_host_tools.
type hostTool struct {
	Name        string          `json:"name"`
	Label       string          `json:"label,omitempty"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// waiter is a request to the host waiting for its answer.
type waiter struct {
	ch     chan gjson.Result // the host's answer frame
	cancel func()            // withdraws it (a host tool call: host_tool_cancel)
}

// hostLink keeps the requests to the host waiting for its answers, by id
// (ui_N: extension_ui_request, host_N: host_tool_call). Its mutex is
// taken only by its methods, which call nothing else but a waiter's
// cancel (cancelAll: a context's cancel func, which calls back into
// nothing of the bridge's).
type hostLink struct {
	mu      sync.Mutex
	waiting map[string]*waiter
	seq     map[string]int // per prefix: the last number given
}

func newHostLink() *hostLink {
	return &hostLink{waiting: map[string]*waiter{}, seq: map[string]int{}}
}

// add makes w the waiter for request id.
func (h *hostLink) add(id string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting[id] = w
}

// remove forgets request id's waiter.
func (h *hostLink) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting, id)
}

// waiter is request id's waiter; nil when nothing waits for it.
func (h *hostLink) waiter(id string) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[id]
}

// next is the next request id with prefix.
func (h *hostLink) next(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq[prefix]++
	return prefix + strconv.Itoa(h.seq[prefix])
}

// hostRequest answers the CLI's control requests; it is the CLI config's
// Host.
func (s *server) hostRequest(ctx context.Context, req claudecli.ControlRequest) (any, error) {
	switch req.Subtype {
	case "can_use_tool":
		return s.canUseTool(ctx, req.Request)
	case "elicitation":
		return s.elicitation(ctx, req.Request), nil
	case "request_user_dialog":
		return s.userDialog(ctx, req.Request)
	case "hook_callback":
		return s.toolHook(ctx, req.Request), nil
	case "mcp_message":
		name := req.Request.Get("server_name").String()
		if name != hostServer && name != extServer {
			return nil, fmt.Errorf("claude-rpc serves no MCP server %q", name)
		}
		return map[string]any{"mcp_response": s.mcpMessage(ctx, name, req.Request.Get("message"))}, nil
	}
	return nil, fmt.Errorf("claude-rpc does not handle %s requests", req.Subtype)
}

func (s *server) canUseTool(ctx context.Context, r gjson.Result) (any, error) {
	name := r.Get("tool_name").String()
	input := json.RawMessage(r.Get("input").Raw)
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	switch {
	case name == "AskUserQuestion":
		return s.askQuestions(ctx, r.Get("input"))
	case strings.HasPrefix(name, "mcp__"+hostServer+"__"), strings.HasPrefix(name, "mcp__"+extServer+"__"):
		return allowInput(input), nil // the host (or its extension) defined the tool: its call is its consent
	case !s.askOn():
		return denial("claude-rpc runs with --ask=false: tools that need permission are refused"), nil
	}
	title := r.Get("display_name").String()
	if title == "" {
		title = name
	}
	options := []string{allowOnce}
	suggestions := r.Get("permission_suggestions")
	if len(suggestions.Array()) > 0 {
		options = append(options, allowAlways)
	}
	options = append(options, deny)
	answer, ok := s.askUI(ctx, &uiSelectJSON{Method: "select", Title: "Allow " + title + "?",
		Message: describeToolUse(name, r), Options: options})
	switch {
	case ok && answer.Get("value").String() == allowOnce:
		return allowInput(input), nil
	case ok && answer.Get("value").String() == allowAlways && len(suggestions.Array()) > 0:
		a := allowInput(input)
		a["updatedPermissions"] = json.RawMessage(suggestions.Raw)
		return a, nil
	case ok && answer.Get("confirmed").Bool(): // a host that answers a select like a confirm
		return allowInput(input), nil
	}
	return denial("The user denied " + title), nil
}

func allowInput(input json.RawMessage) map[string]any {
	return map[string]any{"behavior": "allow", "updatedInput": input}
}

func denial(msg string) map[string]any { return map[string]any{"behavior": "deny", "message": msg} }

// textResult is MCP's CallToolResult of one text block.
func textResult(text string, isError bool) map[string]any {
	return map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isError}
}

// describeToolUse says in a line or two what the tool would do: the
// command, the file, or the input itself.
func describeToolUse(name string, r gjson.Result) string {
	in := r.Get("input")
	var what string
	switch {
	case in.Get("command").Exists():
		what = in.Get("command").String()
	case in.Get("file_path").Exists():
		what = in.Get("file_path").String()
	default:
		what = in.Raw
	}
	if len(what) > 2000 {
		what = what[:2000] + "…"
	}
	desc := r.Get("description").String()
	if desc != "" && desc != what {
		return name + ": " + what + "\n" + desc
	}
	return name + ": " + what
}

// askQuestions puts AskUserQuestion's questions to the host, one dialog
// each (select with the options; input when several may be chosen), and
// answers the tool with them. A question left unanswered denies the tool,
// which tells the model the user did not answer.
func (s *server) askQuestions(ctx context.Context, in gjson.Result) (any, error) {
	answers := map[string]string{}
	for _, q := range in.Get("questions").Array() {
		text := q.Get("question").String()
		var labels []string
		for _, o := range q.Get("options").Array() {
			labels = append(labels, o.Get("label").String())
		}
		title := q.Get("header").String()
		if title == "" {
			title = text
		}
		var req uiRequest = &uiSelectJSON{Method: "select", Title: title, Message: text, Options: labels}
		if q.Get("multiSelect").Bool() || len(labels) == 0 {
			req = &uiInputJSON{Method: "input", Title: title, Message: text, Placeholder: strings.Join(labels, ", ")}
		}
		answer, ok := s.askUI(ctx, req)
		if !ok || answer.Get("value").String() == "" {
			return denial("The user did not answer: " + text), nil
		}
		answers[text] = answer.Get("value").String()
	}
	var updated map[string]any
	if err := json.Unmarshal([]byte(in.Raw), &updated); err != nil {
		return nil, fmt.Errorf("AskUserQuestion input is not an object: %w", err)
	}
	updated["answers"] = answers
	return map[string]any{"behavior": "allow", "updatedInput": updated}, nil
}

// uiRequest is an extension_ui_request frame (frames.go), given its id and
// timeout when sent.
type uiRequest interface {
	setID(id string, timeout int64)
}

// uiOutcome is how a dialog ended.
type uiOutcome int

const (
	uiAnswered  uiOutcome = iota // the host answered
	uiCancelled                  // the host answered {cancelled: true}
	uiTimedOut                   // --ask-timeout passed first
	uiWithdrawn                  // ctx ended first: the CLI withdrew its request, the run ended, or the bridge shuts down
)

// askUI sends an extension_ui_request and waits for its answer, the
// timeout (--ask-timeout), or ctx. It reports false when the host cancelled
// it or it was not answered; a request left unanswered is withdrawn
// (method cancel, as omp does), so the host closes its dialog.
func (s *server) askUI(ctx context.Context, req uiRequest) (gjson.Result, bool) {
	a, how := s.ask(ctx, req)
	return a, how == uiAnswered
}

// ask is askUI that says how the dialog ended.
func (s *server) ask(ctx context.Context, req uiRequest) (gjson.Result, uiOutcome) {
	id, w, ctx, done := s.register(ctx, "ui_", 1)
	defer done()
	req.setID(id, s.opts.AskTimeout.Milliseconds())
	s.out.Send(req)
	how := uiWithdrawn
	select {
	case a := <-w.ch:
		if a.Get("cancelled").Bool() {
			return a, uiCancelled
		}
		return a, uiAnswered
	case <-ctx.Done():
	case <-s.timeout():
		s.log.Warn("no answer to a UI request in time; taking it as denied", "id", id, "timeout", s.opts.AskTimeout)
		how = uiTimedOut
	}
	done() // an answer from now on finds nothing waiting
	s.out.Send(uiCancelJSON{Type: "extension_ui_request", ID: s.host.next("ui_cancel_"), Method: "cancel", TargetID: id})
	return gjson.Result{}, how
}

// timeout fires after --ask-timeout, or never when it is 0.
func (s *server) timeout() <-chan time.Time {
	if s.opts.AskTimeout <= 0 {
		return nil
	}
	return time.After(s.opts.AskTimeout)
}

// register makes a waiter for the host's answer to request prefix+N. Its
// context ends when the request is withdrawn (by the CLI, the end of its
// run, or the shutdown: the server's context); done forgets it.
func (s *server) register(ctx context.Context, prefix string, buf int) (string, *waiter, context.Context, func()) {
	id := s.host.next(prefix)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	w := &waiter{ch: make(chan gjson.Result, buf), cancel: cancel}
	s.host.add(id, w)
	return id, w, ctx, func() {
		s.host.remove(id)
		stop()
		cancel()
	}
}

// answer hands the host's answer frame (extension_ui_response,
// host_tool_result, host_tool_update) to the request it names; a frame for
// nothing waiting is refused with a clear error.
func (s *server) answer(c *call, prefix string) error {
	id := c.raw.Get("id").String()
	w := s.host.waiter(id)
	if w == nil || !strings.HasPrefix(id, prefix) {
		return fmt.Errorf("%s: no request %q is waiting for an answer", c.typ, id)
	}
	deliver(w, c.raw)
	return errAnswered
}

func (s *server) uiResponse(c *call) (any, error) {
	v := c.raw
	if !v.Get("value").Exists() && !v.Get("confirmed").IsBool() && !v.Get("cancelled").Exists() {
		return nil, errors.New(c.typ + ": give \"value\", \"confirmed\" or \"cancelled\"")
	}
	return nil, s.answer(c, "ui_")
}

// deliver passes an answer on; a second answer to the same request is
// dropped.
func deliver(w *waiter, v gjson.Result) {
	select {
	case w.ch <- v:
	default:
	}
}

// toolNameRe is what the Messages API accepts as a tool name (with the
// mcp__host__ prefix the CLI adds, within its 64 characters).
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,54}$`)

func (s *server) setHostTools(c *call) (any, error) {
	if !s.capsNow().Control {
		return nil, errors.New("set_host_tools: the transport cannot reach the host's tools")
	}
	var tools []hostTool
	names := []string{}
	seen := map[string]bool{}
	for i, t := range c.raw.Get("tools").Array() {
		tool := hostTool{Name: t.Get("name").String(), Label: t.Get("label").String(), Description: t.Get("description").String()}
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
			return nil, fmt.Errorf("%s: %w", c.typ, err)
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
	// From the next turn: the stream transport has the running process
	// list the tools again (claudecli's stream.SetConfig).
	s.applySettings(func(st *cliSettings) { st.hostTools = tools })
	return hostToolsData{ToolNames: names}, nil
}

// mcpMessage answers one JSON-RPC message of the CLI's MCP client to
// server: the host tools' (hostServer) or the extensions' (extServer).
func (s *server) mcpMessage(ctx context.Context, server string, m gjson.Result) map[string]any {
	result := func(r any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "result": r}
	}
	method := m.Get("method").String()
	switch {
	case method == "initialize":
		return result(map[string]any{"protocolVersion": m.Get("params.protocolVersion").String(),
			"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]string{"name": "claude-rpc host tools", "version": "1"}})
	case method == "tools/list" && server == extServer:
		set, _ := s.st.currentSettings()
		return result(map[string]any{"tools": mcpTools(set.offeredExtTools())})
	case method == "tools/call" && server == extServer:
		return result(s.callExtTool(ctx, m.Get("params")))
	case method == "tools/list":
		return result(map[string]any{"tools": hostToolList(s.st.hostServes())})
	case method == "tools/call":
		if name := m.Get("params.name").String(); name == uriReadTool || name == uriWriteTool {
			return result(s.callURITool(ctx, name, m.Get("params.arguments")))
		}
		return result(s.callHostTool(ctx, m.Get("params")))
	case method == "ping" || strings.HasPrefix(method, "notifications/") || !m.Get("id").Exists():
		return map[string]any{"jsonrpc": "2.0", "result": map[string]any{}} // acknowledged
	}
	return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw),
		"error": map[string]any{"code": -32601, "message": "method not found: " + method}}
}

// hostToolList is the host server's tools/list: the host's tools and
// those of its URI schemes.
func hostToolList(tools []hostTool, uris []hostURIScheme) []map[string]any {
	return append(mcpTools(tools), uriTools(uris)...)
}

// fingerprint is a tools/list's [claudecli.Config.SDKTools] entry.
func fingerprint(list []map[string]any) string {
	b, err := json.Marshal(list)
	if err != nil {
		return "" // not reached: made of JSON values
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// mcpTools is tools/list's list of tools.
func mcpTools(tools []hostTool) []map[string]any {
	list := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		// alwaysLoad: the model gets the tool itself, not a placeholder
		// behind the CLI's tool search (which defers MCP tools).
		list = append(list, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.Parameters,
			"_meta": map[string]any{"anthropic/alwaysLoad": true}})
	}
	return list
}

// callHostTool sends host_tool_call and waits for host_tool_result; if
// the CLI withdraws the call (an interrupted turn) or the run ends, the
// host gets host_tool_cancel. It returns MCP's CallToolResult.
func (s *server) callHostTool(ctx context.Context, p gjson.Result) map[string]any {
	name := p.Get("name").String()
	id, w, ctx, done := s.register(ctx, "host_", 16)
	defer done()
	toolCallID := p.Get(`_meta.claudecode/toolUseId`).String()
	args := json.RawMessage(p.Get("arguments").Raw)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	s.toolStarts.wait(ctx, toolCallID) // host_tool_call and its progress after tool_execution_start
	s.out.Send(hostToolCallJSON{Type: "host_tool_call", ID: id, ToolCallID: toolCallID, ToolName: name, Arguments: args})
	for {
		select {
		case a := <-w.ch:
			if a.Get("type").String() == "host_tool_update" {
				s.out.Send(toolExecutionUpdateJSON{Type: "tool_execution_update", ToolCallID: toolCallID,
					ToolName: s.opts.ToolNames.Name("mcp__" + hostServer + "__" + name), Args: args, PartialResult: json.RawMessage(a.Get("partialResult").Raw)})
				continue
			}
			content := json.RawMessage(a.Get("result.content").Raw)
			return map[string]any{"content": content, "isError": a.Get("isError").Bool()}
		case <-ctx.Done():
			s.out.Send(hostToolCancelJSON{Type: "host_tool_cancel", ID: s.host.next("host_cancel_"), TargetID: id})
			return textResult("The tool call was cancelled.", true)
		}
	}
}

// hostToolAnswer handles host_tool_result and host_tool_update.
func (s *server) hostToolAnswer(c *call) (any, error) {
	v := c.raw
	switch {
	case c.typ == "host_tool_result" && !v.Get("result.content").IsArray():
		return nil, errors.New(`host_tool_result: "result.content" must be an array of content blocks`)
	case c.typ == "host_tool_update" && !v.Get("partialResult").IsObject():
		return nil, errors.New(`host_tool_update: "partialResult" must be an object`)
	}
	return nil, s.answer(c, "host_")
}

// cancelAll withdraws every request waiting for the host: the run they
// belong to is over.
func (h *hostLink) cancelAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.waiting {
		w.cancel()
	}
}
