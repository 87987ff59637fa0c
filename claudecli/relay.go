package claudecli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/minihttp"
)

// The relay puts a per-turn process (pipe, pty) in the loop with
// [Config.Host], as the stream transport's control protocol does: the CLI
// reaches it through MCP servers over HTTP on the loopback interface,
// which the relay serves for the bridge:
//   - the host's tool servers ([Config.SDKServers]): each JSON-RPC message
//     is handed to Host as the mcp_message request the stream transport
//     gets ({server_name, message}); its mcp_response is the HTTP answer;
//   - with [Config.AskPermissions], a server of the relay's own,
//     [relayPermServer], whose one tool the CLI is told to ask before a
//     tool it may not run on its own (--permission-prompt-tool): the CLI
//     calls it with {tool_name, input, tool_use_id}, handed to Host as
//     can_use_tool; the answer ({behavior: allow|deny, ...}) goes back as
//     the tool's text, which is how the CLI reads a permission tool's
//     answer (checked on 2.1.328: a deny's message becomes the tool's
//     error, an allow's updatedInput is what runs, AskUserQuestion's
//     answers among it). The CLI does not offer that tool to the model;
//   - with [Config.ToolHooks], PreToolUse and PostToolUse hooks of type
//     http (--settings), handed to Host as hook_callback with callback_id
//     [HookPreTool] or [HookPostTool]; Host's answer is the hook's output.
//
// Nobody else gets in: each turn has a secret of 32 random bytes in the
// path of its URLs, which are written only to a file only the user can
// read (--mcp-config and --settings name the file, so the command line,
// which other users may list, does not hold the secret); a request
// without a live turn's secret is answered 404 and reaches nothing. A
// turn's requests end when its process does.
//
//   - with [Config.AskPermissions], an Elicitation hook of type http: an
//     MCP server's question to its user, handed to Host as the
//     elicitation request, its ElicitResult the hook's output.
//
// What the relay cannot do: the CLI's own dialogs (request_user_dialog)
// have no way out of a process without the control protocol.

// relayPermServer and relayPermTool name the permission tool:
// --permission-prompt-tool mcp__claude-rpc__permission.
const (
	relayPermServer = "claude-rpc"
	relayPermTool   = "permission"
	// relayElicitation is the Elicitation hook's path (with
	// [Config.AskPermissions]).
	relayElicitation = "elicitation"
)

// relayMaxBody bounds what one request of the CLI's may hold.
const relayMaxBody = 64 << 20

// relay serves the turns of one per-turn transport; started at its first
// turn that needs it, closed with the transport. Its mutex guards turns
// and is never held while Host runs.
type relay struct {
	srv  *minihttp.Server
	addr string
	dir  string // the turns' config files: a folder only the user can read
	log  *slog.Logger

	mu    sync.Mutex
	turns map[[32]byte]*relayTurn // by the hash of their secret
}

// relayTurn is one turn's registration: Host, and the context its
// requests run in, ended with the turn's process.
type relayTurn struct {
	host   Host
	ctx    context.Context
	cancel context.CancelFunc
}

// startRelay listens on the loopback interface and serves.
func startRelay(log *slog.Logger) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the relay for the CLI's tool calls and permission prompts: %w", err)
	}
	dir, err := os.MkdirTemp("", "claude-rpc-relay-")
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("the relay's folder: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &relay{addr: ln.Addr().String(), dir: dir, log: log, turns: map[[32]byte]*relayTurn{}}
	// A request without a live turn's secret is refused before its body
	// is read.
	admit := func(req *http.Request) bool { t, _ := r.turn(req.URL.Path); return t != nil }
	r.srv = minihttp.Serve(ln, r.serve, minihttp.Options{Admit: admit, MaxBody: relayMaxBody})
	return r, nil
}

// close stops serving, ends the turns' requests and removes the folder.
func (r *relay) close() {
	r.srv.Close()
	r.mu.Lock()
	for k, t := range r.turns {
		t.cancel()
		delete(r.turns, k)
	}
	r.mu.Unlock()
	_ = os.RemoveAll(r.dir)
}

// open registers a turn of cfg and returns the command-line arguments
// that connect its process to the relay, and end, which the caller calls
// once the process ended.
func (r *relay) open(cfg Config) (args []string, end func(), err error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, nil, err
	}
	token := hex.EncodeToString(secret[:])
	base := "http://" + r.addr + "/" + token + "/"
	servers := map[string]any{}
	for _, n := range cfg.SDKServers {
		servers[n] = map[string]any{"type": "http", "url": base + "mcp/" + n}
	}
	if cfg.AskPermissions {
		servers[relayPermServer] = map[string]any{"type": "http", "url": base + "mcp/" + relayPermServer}
	}
	settings := cfg.flagSettingsMap()
	hook := func(id string) []map[string]any {
		return []map[string]any{{"matcher": "*", "hooks": []map[string]any{{"type": "http", "url": base + "hook/" + id, "timeout": 600}}}}
	}
	hooks := map[string]any{}
	if cfg.ToolHooks {
		hooks["PreToolUse"], hooks["PostToolUse"] = hook(HookPreTool), hook(HookPostTool)
	}
	if cfg.AskPermissions {
		hooks["Elicitation"] = hook(relayElicitation)
	}
	if len(hooks) > 0 {
		if settings == nil {
			settings = map[string]any{}
		}
		settings["hooks"] = hooks
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &relayTurn{host: cfg.Host, ctx: ctx, cancel: cancel}
	files := []string{}
	write := func(name string, v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		f := filepath.Join(r.dir, token[:16]+"-"+name+".json")
		files = append(files, f)
		return f, os.WriteFile(f, b, 0o600)
	}
	end = func() {
		r.mu.Lock()
		delete(r.turns, sha256.Sum256([]byte(token)))
		r.mu.Unlock()
		cancel()
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
	if len(servers) > 0 {
		f, err := write("mcp", map[string]any{"mcpServers": servers})
		if err != nil {
			end()
			return nil, nil, err
		}
		args = append(args, "--mcp-config", f)
		for _, n := range slices.Sorted(slices.Values(cfg.SDKServers)) {
			args = append(args, "--allowedTools", "mcp__"+n)
		}
	}
	if cfg.AskPermissions {
		args = append(args, "--permission-prompt-tool", "mcp__"+relayPermServer+"__"+relayPermTool)
	}
	if len(settings) > 0 {
		// One --settings: the CLI keeps only the last it is given.
		f, err := write("settings", settings)
		if err != nil {
			end()
			return nil, nil, err
		}
		args = append(args, "--settings", f)
	}
	r.mu.Lock()
	r.turns[sha256.Sum256([]byte(token))] = t
	r.mu.Unlock()
	return args, end, nil
}

// turn is the live turn whose secret begins path, and the rest of path.
func (r *relay) turn(path string) (*relayTurn, string) {
	token, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok {
		return nil, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turns[sha256.Sum256([]byte(token))], rest
}

// serve answers the CLI's MCP messages and hooks of a live turn.
func (r *relay) serve(w *minihttp.Response, req *http.Request, body []byte) {
	t, rest := r.turn(req.URL.Path)
	if t == nil { // its turn ended since it was admitted
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		// MCP's GET opens a stream of the server's own messages: the
		// relay sends none.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if !gjson.ValidBytes(body) {
		http.Error(w, "the body must be JSON", http.StatusBadRequest)
		return
	}
	ctx, stop := context.WithCancel(req.Context())
	defer stop()
	defer context.AfterFunc(t.ctx, stop)()
	kind, name, _ := strings.Cut(rest, "/")
	var answer any
	switch {
	case kind == "mcp" && name == relayPermServer:
		answer = r.permission(ctx, t, gjson.ParseBytes(body))
	case kind == "mcp":
		answer = r.mcp(ctx, t, name, gjson.ParseBytes(body))
	case kind == "hook" && (name == HookPreTool || name == HookPostTool):
		answer = r.hook(ctx, t, name, gjson.ParseBytes(body))
	case kind == "hook" && name == relayElicitation:
		answer = r.elicitation(ctx, t, gjson.ParseBytes(body))
	default:
		http.NotFound(w, req)
		return
	}
	if answer == nil { // a notification: nothing to answer
		w.WriteHeader(http.StatusAccepted)
		return
	}
	b, err := json.Marshal(answer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// ask hands Host a request as the stream transport's control protocol
// carries it; an error when there is no Host, or Host refused it.
func (t *relayTurn) ask(ctx context.Context, subtype string, request map[string]any) (gjson.Result, error) {
	if t.host == nil {
		return gjson.Result{}, errors.New("nothing answers the CLI's requests")
	}
	request["subtype"] = subtype
	b, err := json.Marshal(request)
	if err != nil {
		return gjson.Result{}, err
	}
	v, err := t.host(ctx, ControlRequest{Subtype: subtype, Request: gjson.ParseBytes(b)})
	if err != nil {
		return gjson.Result{}, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return gjson.Result{}, err
	}
	return gjson.ParseBytes(out), nil
}

// mcp hands a message to server of Host's; nil for a notification.
func (r *relay) mcp(ctx context.Context, t *relayTurn, server string, m gjson.Result) any {
	v, err := t.ask(ctx, "mcp_message", map[string]any{"server_name": server, "message": json.RawMessage(m.Raw)})
	if !m.Get("id").Exists() {
		return nil
	}
	if err != nil {
		return rpcError(m, -32603, err.Error())
	}
	return json.RawMessage(v.Get("mcp_response").Raw)
}

// permission is the permission server: its one tool asks Host
// (can_use_tool) and answers with Host's decision as its text.
func (r *relay) permission(ctx context.Context, t *relayTurn, m gjson.Result) any {
	result := func(v any) any {
		return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "result": v}
	}
	switch method := m.Get("method").String(); {
	case !m.Get("id").Exists():
		return nil
	case method == "initialize":
		return result(map[string]any{"protocolVersion": m.Get("params.protocolVersion").String(),
			"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]string{"name": "claude-rpc permission prompts", "version": "1"}})
	case method == "tools/list":
		return result(map[string]any{"tools": []map[string]any{{"name": relayPermTool,
			"description": "Asks claude-rpc's host whether a tool may run.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"tool_name": map[string]string{"type": "string"}, "input": map[string]string{"type": "object"},
				"tool_use_id": map[string]string{"type": "string"}}}}}})
	case method == "tools/call" && m.Get("params.name").String() == relayPermTool:
		a := m.Get("params.arguments")
		req := map[string]any{"tool_name": a.Get("tool_name").String(), "input": json.RawMessage(orEmpty(a.Get("input").Raw)),
			"tool_use_id": a.Get("tool_use_id").String()}
		text := ""
		if v, err := t.ask(ctx, "can_use_tool", req); err == nil {
			text = v.Raw
		} else {
			b, _ := json.Marshal(map[string]string{"behavior": "deny", "message": "claude-rpc could not ask: " + err.Error()})
			text = string(b)
		}
		return result(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	case method == "ping":
		return result(map[string]any{})
	}
	return rpcError(m, -32601, "method not found: "+m.Get("method").String())
}

// hook hands a hook's input to Host as hook_callback; its answer is the
// hook's output ({} goes on as if there were no hook).
func (r *relay) hook(ctx context.Context, t *relayTurn, id string, in gjson.Result) any {
	v, err := t.ask(ctx, "hook_callback", map[string]any{"callback_id": id, "input": json.RawMessage(in.Raw),
		"tool_use_id": in.Get("tool_use_id").String()})
	if err != nil {
		r.log.Warn("claude-rpc relay: a hook was not answered; the tool goes on", "hook", id, "err", err)
		return map[string]any{}
	}
	return json.RawMessage(orEmpty(v.Raw))
}

// elicitation hands an MCP server's question to its user (the CLI's
// Elicitation hook's input: mcp_server_name, message, mode,
// requested_schema, url, elicitation_id) to Host as the elicitation
// request the stream transport gets, and answers the hook with Host's
// ElicitResult (action, content); a failure declines.
func (r *relay) elicitation(ctx context.Context, t *relayTurn, in gjson.Result) any {
	req := map[string]any{}
	for _, k := range []string{"mcp_server_name", "message", "mode", "url", "elicitation_id", "requested_schema"} {
		if v := in.Get(k); v.Exists() {
			req[k] = json.RawMessage(v.Raw)
		}
	}
	out := map[string]any{"hookEventName": "Elicitation", "action": "decline"}
	v, err := t.ask(ctx, "elicitation", req)
	switch {
	case err != nil:
		r.log.Warn("claude-rpc relay: an MCP server's question was not answered; declined", "err", err)
	case v.Get("action").String() != "":
		out["action"] = v.Get("action").String()
		if c := v.Get("content"); c.IsObject() {
			out["content"] = json.RawMessage(c.Raw)
		}
	}
	return map[string]any{"hookSpecificOutput": out}
}

// rpcError is a JSON-RPC error answer to m.
func rpcError(m gjson.Result, code int, msg string) any {
	return map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "error": map[string]any{"code": code, "message": msg}}
}

func orEmpty(raw string) string {
	if raw == "" {
		return "{}"
	}
	return raw
}
