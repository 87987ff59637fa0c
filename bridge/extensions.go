package bridge

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/transform"
)

// pi extensions (--extension, Options.Extensions). One extension host, a
// Node process running exthost/host.mjs, loads them all and answers the
// bridge over its stdin and stdout in JSON lines (host.mjs says which);
// the bridge owns it: started with the server, ended at its shutdown, its
// stderr the bridge's log. What it serves:
//   - the extensions' tools, to the CLI as the MCP server extServer
//     (stream transport, as the host's own tools), run by the host;
//   - before_agent_start: called before each prompt's run, from an empty
//     system prompt (the bridge does not know the CLI's); what the
//     handlers return is appended to the CLI's system prompt
//     (--append-system-prompt), which takes effect as other settings do;
//   - ctx.ui: fire-and-forget calls become extension_ui_request frames,
//     dialogs go to the host through askUI.

//go:embed exthost/host.mjs exthost/hooks.mjs exthost/typebox.mjs exthost/pi.mjs
var extHostFiles embed.FS

// extServer is the MCP server name of the extensions' tools: the model
// sees them as mcp__ext__<name> (transform's extensionTools); frames show the
// extension's own name (under --tool-names pi).
const extServer = "ext"

// extLoadWait bounds how long a prompt waits for the extensions to load,
// and extCallWait how long for before_agent_start's handlers.
const (
	extLoadWait = 15 * time.Second
	extCallWait = 30 * time.Second
)

// extHostSource is the script node runs: the stand-in modules, then the
// host.
func extHostSource() string {
	read := func(name string) string {
		b, err := extHostFiles.ReadFile("exthost/" + name)
		if err != nil {
			panic(err) // embedded above
		}
		return string(b)
	}
	shims, _ := json.Marshal(map[string]string{"hooks": read("hooks.mjs"), "typebox": read("typebox.mjs"), "pi": read("pi.mjs")})
	return "const SHIMS = " + string(shims) + ";\n" + read("host.mjs")
}

// extHost is the bridge's side of the extension host. Its mutex guards
// the fields below it and is taken only in its methods, for short
// sections that call nothing else.
type extHost struct {
	log   *slog.Logger
	loads chan struct{} // closed once the host said what it loaded, or died
	done  chan struct{} // closed once the host's stdout ended (it is gone)
	// onTools is told the tools whenever the host reports them, before
	// loads closes; onUI gets each ctx.ui call. Both run on the reader's
	// goroutine and must not block.
	onTools func([]hostTool)
	onUI    func(gjson.Result)

	wmu sync.Mutex
	w   io.WriteCloser // the host's stdin

	mu          sync.Mutex
	seq         int64
	pending     map[int64]*extPending
	beforeStart bool  // a before_agent_start handler exists
	gone        error // why the host is no longer there
	stopping    bool  // the bridge is ending it: its end is no news
	stop        func()
}

// extPending is a call waiting for the host's result.
type extPending struct {
	result chan gjson.Result
	update func(gjson.Result) // a tool's onUpdate, nil for none
}

// errNoExtHost says why there is no extension host to ask.
var errNoExtHost = errors.New("the extension host is not running")

// startExtHost starts node with the host script for paths, in dir. It
// fails when there is no node on PATH or it cannot start.
func startExtHost(paths []string, dir string, env []string, log *slog.Logger, onTools func([]hostTool), onUI func(gjson.Result)) (*extHost, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("no node on PATH: pi extensions run in Node (22.18 or later strips TypeScript types itself)")
	}
	list, _ := json.Marshal(paths)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", extHostSource())
	claudecli.PrepareGroup(cmd) // its context's end kills the host and what it started
	cmd.Dir = dir
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], "CLAUDE_RPC_EXTENSIONS="+string(list))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	// Through the reaper (once enabled, a child it does not know is an
	// orphan to it, reaped before its Wait: "waitid: no child processes").
	childEnded, err := claudecli.StartChild(cmd, claudecli.EndOrphans)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("starting the extension host (%s): %w", node, err)
	}
	h := newExtHost(stdin, log, onTools, onUI)
	var logged sync.WaitGroup
	logged.Add(1)
	go func() { // the host's stderr: the bridge's log
		defer logged.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			log.Info("extension host: " + sc.Text())
		}
		_, _ = io.Copy(io.Discard, stderr) // a line too long: the rest is drained, never left to block the host
	}()
	exited := make(chan struct{})
	go func() {
		h.read(stdout)
		logged.Wait()
		err := cmd.Wait()
		childEnded()
		h.ended(fmt.Errorf("%w (it exited: %v)", errNoExtHost, err))
		close(exited)
	}()
	h.stop = func() {
		// stdin's end tells the host to fire session_shutdown and exit;
		// what does not end in time is killed, its process group with it.
		h.mu.Lock()
		h.stopping = true
		h.mu.Unlock()
		h.wmu.Lock()
		_ = h.w.Close()
		h.wmu.Unlock()
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			log.Warn("the extension host did not exit in time; killing it")
		}
		cancel()
		<-exited
	}
	return h, nil
}

// newExtHost is the bridge's side of a host that reads w and whose
// output is handed to read.
func newExtHost(w io.WriteCloser, log *slog.Logger, onTools func([]hostTool), onUI func(gjson.Result)) *extHost {
	return &extHost{log: log, w: w, loads: make(chan struct{}), done: make(chan struct{}),
		onTools: onTools, onUI: onUI, pending: map[int64]*extPending{}}
}

// read owns the host's stdout until it ends.
func (h *extHost) read(r io.Reader) {
	lr := jsonl.NewReader(r, 64<<20)
	for {
		b, err := lr.Next()
		if errors.Is(err, jsonl.ErrLineTooLong) {
			h.log.Warn("extension host: a line too long to read; dropped")
			continue
		}
		if err != nil {
			return
		}
		m := gjson.ParseBytes(append([]byte(nil), b...))
		if !m.IsObject() {
			h.log.Warn("extension host: a line that is no JSON object", "line", string(b))
			continue
		}
		h.handle(m)
	}
}

// handle takes one message of the host.
func (h *extHost) handle(m gjson.Result) {
	switch m.Get("type").String() {
	case "loaded":
		for _, w := range m.Get("warnings").Array() {
			h.log.Warn("--extension: " + w.String())
		}
		for _, e := range m.Get("errors").Array() {
			h.log.Warn("--extension: the extension failed to load; going on without it", "path", e.Get("path").String(), "err", e.Get("error").String())
		}
		h.mu.Lock()
		h.beforeStart = m.Get("beforeAgentStart").Bool()
		h.mu.Unlock()
		h.tools(m.Get("tools"))
		select {
		case <-h.loads:
		default:
			close(h.loads)
		}
	case "tools":
		h.tools(m.Get("tools"))
	case "result", "update":
		h.mu.Lock()
		p := h.pending[m.Get("id").Int()]
		h.mu.Unlock()
		switch {
		case p == nil:
		case m.Get("type").String() == "result":
			select {
			case p.result <- m:
			default:
			}
		case p.update != nil:
			p.update(m.Get("partialResult"))
		}
	case "ui":
		if h.onUI != nil {
			h.onUI(m)
		}
	default:
		h.log.Warn("extension host: unknown message", "type", m.Get("type").String())
	}
}

// tools checks the tools the host reports and tells onTools.
func (h *extHost) tools(list gjson.Result) {
	var tools []hostTool
	seen := map[string]bool{}
	for _, t := range list.Array() {
		tool := hostTool{Name: t.Get("name").String(), Label: t.Get("label").String(), Description: t.Get("description").String(),
			Parameters: json.RawMessage(`{"type":"object"}`)}
		switch {
		case !toolNameRe.MatchString(tool.Name):
			h.log.Warn("--extension: tool left out: a name must be 1-54 letters, digits, _ or -", "tool", tool.Name)
			continue
		case seen[tool.Name]:
			h.log.Warn("--extension: tool registered twice; the first is kept", "tool", tool.Name)
			continue
		}
		if p := t.Get("parameters"); p.IsObject() {
			tool.Parameters = json.RawMessage(p.Raw)
		}
		seen[tool.Name] = true
		tools = append(tools, tool)
	}
	if h.onTools != nil {
		h.onTools(tools)
	}
}

// ended records that the host is gone and fails what waits for it.
func (h *extHost) ended(why error) {
	h.mu.Lock()
	h.gone = why
	stopping := h.stopping
	pending := h.pending
	h.pending = map[int64]*extPending{}
	h.mu.Unlock()
	for _, p := range pending {
		close(p.result)
	}
	select {
	case <-h.loads:
		if stopping {
			break
		}
		h.log.Warn("--extension: "+why.Error()+"; the extensions' tools answer with an error from now on", "err", why)
	default:
		h.log.Warn("--extension: the extension host ended before it loaded the extensions (its messages are in the log above); going on without them", "err", why)
		close(h.loads)
	}
	close(h.done)
}

// call sends the host a request and waits for its result's value, ctx, or
// the host's end. cancel, when ctx ends first, tells the host.
func (h *extHost) call(ctx context.Context, typ string, fields map[string]any, update func(gjson.Result)) (gjson.Result, error) {
	h.mu.Lock()
	if h.gone != nil {
		err := h.gone
		h.mu.Unlock()
		return gjson.Result{}, err
	}
	h.seq++
	id := h.seq
	p := &extPending{result: make(chan gjson.Result, 1), update: update}
	h.pending[id] = p
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}()
	fields["type"], fields["id"] = typ, id
	if err := h.send(fields); err != nil {
		return gjson.Result{}, err
	}
	select {
	case m, ok := <-p.result:
		if !ok {
			return gjson.Result{}, h.why()
		}
		if e := m.Get("error"); e.Exists() {
			return gjson.Result{}, errors.New(e.String())
		}
		return m.Get("value"), nil
	case <-ctx.Done():
		_ = h.send(map[string]any{"type": "cancel", "id": id})
		return gjson.Result{}, context.Cause(ctx)
	}
}

// send writes one message to the host.
func (h *extHost) send(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if _, err := h.w.Write(append(b, '\n')); err != nil {
		return h.why()
	}
	return nil
}

// why is why the host cannot be asked.
func (h *extHost) why() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone != nil {
		return h.gone
	}
	return errNoExtHost
}

// loaded waits until the host said what it loaded (or died), ctx, or
// extLoadWait; it reports whether the extensions are there.
func (h *extHost) loaded(ctx context.Context) bool {
	select {
	case <-h.loads:
	case <-ctx.Done():
		return false
	case <-time.After(extLoadWait):
		h.log.Warn("--extension: the extensions did not load in time; going on without them for now", "waited", extLoadWait)
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gone == nil
}

// hasBeforeStart reports whether an extension handles before_agent_start.
func (h *extHost) hasBeforeStart() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.beforeStart && h.gone == nil
}

// The server's side.

// startExtensions starts the extension host for Options.Extensions; no
// node, or one that does not start, is a warning and no host.
func (s *server) startExtensions() {
	if len(s.opts.Extensions) == 0 {
		return
	}
	h, err := startExtHost(s.opts.Extensions, s.cwd, s.opts.CLI.Env, s.log,
		func(tools []hostTool) { s.applySettings(func(st *cliSettings) { st.extTools = tools }) },
		s.extUI)
	if err != nil {
		s.log.Warn("--extension ignored: " + err.Error())
		return
	}
	s.ext = h
}

// warnExtensionTransport says, once the transport is known, that the
// extensions' tools need the stream transport.
func (s *server) warnExtensionTransport() {
	if s.ext != nil && !s.capsNow().Control {
		s.log.Warn("--extension: the extensions' tools need the stream transport (--transport stream): the CLI calls them over its control protocol; on " +
			s.transportName() + " they are not offered (before_agent_start still applies)")
	}
}

// extBeforeStart calls the extensions' before_agent_start handlers before
// a prompt's run and appends what they return to the CLI's system prompt
// (a change takes effect as other settings do: applySettings). Off the
// runner's loop.
func (s *server) extBeforeStart(prompt string) {
	h := s.ext
	if h == nil || !h.loaded(s.ctx) || !h.hasBeforeStart() {
		return
	}
	ctx, cancel := context.WithTimeoutCause(s.ctx, extCallWait, errors.New("before_agent_start took too long"))
	defer cancel()
	v, err := h.call(ctx, "before_agent_start", map[string]any{"prompt": prompt}, nil)
	if err != nil {
		s.log.Warn("--extension: before_agent_start failed; the system prompt stays as it was", "err", err)
		return
	}
	text := strings.TrimSpace(v.Get("systemPrompt").String())
	if set, _ := s.st.currentSettings(); set.extPrompt != text {
		s.applySettings(func(st *cliSettings) { st.extPrompt = text })
	}
}

// extUI turns an extension's ctx.ui call into an extension_ui_request:
// fire-and-forget ones are sent as they come; a dialog is asked through
// askUI, on a goroutine of its own, and its answer handed back. On the
// host's reader goroutine.
func (s *server) extUI(m gjson.Result) {
	method := m.Get("method").String()
	id := s.host.next("ui_")
	const typ = "extension_ui_request"
	var req uiRequest
	switch method {
	case "setTitle":
		s.out.send(uiSetTitleJSON{Type: typ, ID: id, Method: method, Title: m.Get("title").String()})
	case "notify":
		ev := transform.NotifyEvent(m.Get("notifyType").String(), m.Get("message").String())
		ev.Notice.ID = id
		s.out.events([]transform.Event{ev})
	case "setStatus":
		var text *string
		if t := m.Get("statusText"); t.Exists() && t.Type != gjson.Null {
			text = new(string)
			*text = t.String()
		}
		ev := transform.StatusEvent(m.Get("statusKey").String(), text)
		ev.Notice.ID = id
		s.out.events([]transform.Event{ev})
	case "setWidget":
		f := uiSetWidgetJSON{Type: typ, ID: id, Method: method, WidgetKey: m.Get("widgetKey").String(), WidgetPlacement: m.Get("widgetPlacement").String()}
		for _, l := range m.Get("widgetLines").Array() {
			f.WidgetLines = append(f.WidgetLines, l.String())
		}
		s.out.send(f)
	case "set_editor_text":
		s.out.send(uiSetEditorTextJSON{Type: typ, ID: id, Method: method, Text: m.Get("text").String()})
	case "select":
		var options []string
		for _, o := range m.Get("options").Array() {
			options = append(options, o.String())
		}
		req = &uiSelectJSON{Method: method, Title: m.Get("title").String(), Options: options}
	case "confirm":
		req = &uiConfirmJSON{Method: method, Title: m.Get("title").String(), Message: m.Get("message").String()}
	case "input":
		req = &uiInputJSON{Method: method, Title: m.Get("title").String(), Placeholder: m.Get("placeholder").String()}
	case "editor":
		req = &uiEditorJSON{Method: method, Title: m.Get("title").String(), Prefill: m.Get("prefill").String()}
	default:
		s.log.Warn("extension host: unknown ctx.ui method", "method", method)
	}
	if req == nil || !m.Get("uiId").Exists() {
		return
	}
	uiID := m.Get("uiId").Int()
	// Refused at shutdown: the extension host is ended with the bridge.
	s.goes.start(func() {
		answer := map[string]any{"type": "ui_response", "uiId": uiID}
		if a, ok := s.askUI(s.ctx, req); ok {
			if v := a.Get("value"); v.Exists() {
				answer["value"] = v.Value()
			}
			if c := a.Get("confirmed"); c.Exists() {
				answer["confirmed"] = c.Bool()
			}
		} else {
			answer["cancelled"] = true
		}
		_ = s.ext.send(answer) // a host that is gone has nobody to answer
	})
}

// callExtTool runs an extension's tool in the host for the CLI's
// tools/call and returns MCP's CallToolResult; its onUpdate calls become
// tool_execution_update frames.
func (s *server) callExtTool(ctx context.Context, p gjson.Result) map[string]any {
	if s.ext == nil {
		return textResult("claude-rpc runs no extensions", true)
	}
	name := p.Get("name").String()
	toolCallID := p.Get(`_meta.claudecode/toolUseId`).String()
	args := json.RawMessage(p.Get("arguments").Raw)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	update := func(partial gjson.Result) {
		raw := json.RawMessage(partial.Raw)
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		s.out.send(toolExecutionUpdateJSON{Type: "tool_execution_update", ToolCallID: toolCallID,
			ToolName: s.opts.ToolNames.Name("mcp__" + extServer + "__" + name), Args: args, PartialResult: raw})
	}
	v, err := s.ext.call(ctx, "tool_call", map[string]any{"name": name, "toolCallId": toolCallID, "params": args}, update)
	switch {
	case ctx.Err() != nil:
		return textResult("The tool call was cancelled.", true)
	case err != nil:
		return textResult("The extension's tool "+name+" could not run: "+err.Error(), true)
	}
	content := json.RawMessage(v.Get("content").Raw)
	if !v.Get("content").IsArray() {
		content = json.RawMessage(`[]`)
	}
	return map[string]any{"content": content, "isError": v.Get("isError").Bool()}
}

// stopExtensions ends the extension host, if any.
func (s *server) stopExtensions() {
	if s.ext != nil && s.ext.stop != nil {
		s.ext.stop()
	}
}
