// Package extensions runs pi extensions for the bridge: one Node process,
// the extension host (host.mjs), loads them through pi 1.6.0's own runtime
// (its loader and jiti for TypeScript, its ExtensionRunner, the packages it
// gives extensions), imported from pi's npm package (runtime.go finds or
// fetches it), and serves them to the bridge over JSON lines on its stdin
// and stdout.
//
// The bridge calls a [Host] at named points (a prompt's start, a tool call
// of the CLI to an extension's tool, an extension command, each event an
// extension handles, the session's state as it changes) and is called back
// through [Callbacks] (tools and commands as they change, ctx.ui calls,
// extension errors, and the API calls: sendMessage, appendEntry,
// setModel, newSession, ...).
//
// The session's side of them is here too, on a [Session] the bridge
// implements (the commands it runs as the host's, the session's state
// and entries): [Actions] carries out the API calls on it (those the
// extensions do not wait for in order, settled before the bridge goes on
// from the handler that made them), and [Pump] hands the host the frames
// the extensions handle, the session's state before them. Nothing else of
// the bridge is known here.
package extensions

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/sessions"
)

//go:embed host.mjs
var hostScript []byte

// LoadWait bounds how long a caller waits for the extensions to load (the
// first start may fetch pi's runtime first: FetchWait), and CallWait how
// long for a handler's answer the bridge waits on (before_agent_start, an
// event whose result matters).
const (
	LoadWait  = 20 * time.Second
	FetchWait = 3 * time.Minute
	CallWait  = 30 * time.Second
)

// Config says what to load and how.
type Config struct {
	// Paths are pi's --extension arguments (files or folders), in order.
	Paths []string
	// NoExtensions is pi's --no-extensions: Paths only, nothing discovered.
	NoExtensions bool
	// Dir is the session's folder (the extensions' cwd; project-local
	// extensions are found from it).
	Dir string
	// Env is the host's environment (nil: the bridge's own).
	Env []string
	// Flags are the extensions' flags given on the command line, by name
	// without dashes: a string, or true for a bare flag, as pi's parser
	// gives them (a bare flag sets a boolean one; a string one then wants a
	// value, and pi's runtime says so).
	Flags map[string]any
	// Cache is the folder pi's runtime is installed in, or fetched into.
	Cache string
	Log   *slog.Logger
}

// what names the extensions cfg asks for, as a user gave them.
func (cfg Config) what() string {
	var parts []string
	for _, p := range cfg.Paths {
		parts = append(parts, "--extension "+p)
	}
	if !cfg.NoExtensions {
		parts = append(parts, "those pi's settings and places name")
	}
	return strings.Join(parts, ", ")
}

// Callbacks are how the host reaches the bridge. Each runs on the host's
// reader goroutine, in the order the host sent them, and must not block;
// any may be nil.
type Callbacks struct {
	Tools    func([]Tool)
	Commands func([]Command)
	UI       func(UI)
	Error    func(Error)
	Action   func(Action)
	// Notice is told what a user must know (node missing or too old, an
	// extension that failed to load): level "warning" or "error".
	Notice func(level, text string)
}

// Tool is an extension's tool, as the CLI is offered it.
type Tool struct {
	Name        string          `json:"name"`
	Label       string          `json:"label,omitempty"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Command is an extension's command, as pi's get_commands lists it.
type Command struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Source      string          `json:"source"`
	SourceInfo  json.RawMessage `json:"sourceInfo,omitempty"`
}

// Error is pi's extension_error: a handler, tool or command that threw.
type Error struct {
	ExtensionPath string `json:"extensionPath"`
	Event         string `json:"event"`
	Error         string `json:"error"`
}

// UI is one ctx.ui call: Fields is the host's message (method, title, ...).
// A dialog (Dialog) is answered with [Host.AnswerUI]; Withdrawn tells
// that a dialog asked before ended without an answer (its timeout or
// signal).
type UI struct {
	Method    string
	Fields    gjson.Result
	Dialog    bool
	Withdrawn bool
	ID        int64
}

// Action is an API call the bridge carries out (ExtensionAPI's
// sendMessage, appendEntry, setModel, the command context's newSession,
// ...). One the extension awaits (Awaited) must be answered with Reply,
// once, from any goroutine.
type Action struct {
	Name string
	Args gjson.Result
	id   int64
	h    *Host
}

// Awaited reports whether the extension waits for the answer.
func (a Action) Awaited() bool { return a.id != 0 }

// Reply answers an awaited action; it does nothing for another.
func (a Action) Reply(value any, err error) {
	if a.id == 0 {
		return
	}
	m := map[string]any{"type": "action_result", "id": a.id}
	if err != nil {
		m["error"] = err.Error()
	} else {
		m["value"] = value
	}
	_ = a.h.send(m) // a host that is gone waits for nothing
}

// ErrNotRunning says the host is not there to ask.
var ErrNotRunning = errors.New("the extension host is not running")

// Host is the bridge's side of the extension host. Its methods may be
// called from any goroutine; none blocks on another's call.
type Host struct {
	log   *slog.Logger
	cb    Callbacks
	loads chan struct{} // closed once the host said what it loaded, or could not
	done  chan struct{} // closed once the host is gone (or never started)

	w io.WriteCloser // the host's stdin, owned by writeLines

	// qmu guards the lines queued for the host and closing (Stop asked
	// for stdin's end once they are written); wake tells writeLines.
	qmu     sync.Mutex
	lines   [][]byte
	closing bool
	wake    chan struct{}

	mu       sync.Mutex
	seq      int64
	pending  map[int64]*pending
	handlers map[string]bool
	commands []Command
	flags    []string
	gone     error
	stopping bool
	cancel   func()
	exited   chan struct{}
}

type pending struct {
	result chan gjson.Result
	update func(gjson.Result)
}

// Start starts the host for cfg and returns at once: finding Node, pi's
// runtime (fetched the first time) and loading happen on a goroutine of
// its own; [Host.Loaded] waits for them. What fails is logged and told
// through cb.Notice, and the host is then gone ([ErrNotRunning] and why).
func Start(cfg Config, cb Callbacks) *Host {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	h := &Host{log: cfg.Log, cb: cb, loads: make(chan struct{}), done: make(chan struct{}),
		pending: map[int64]*pending{}, handlers: map[string]bool{}, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		if err := h.start(ctx, cfg); err != nil {
			if ctx.Err() == nil { // not Stop's doing
				h.notice("error", "pi extensions are not loaded ("+cfg.what()+"): "+err.Error())
			}
			h.ended(err)
			close(h.exited)
		}
	}()
	return h
}

// start finds Node and pi's runtime and starts the host process.
func (h *Host) start(ctx context.Context, cfg Config) error {
	node, version, err := FindNode(cfg.Env)
	if err != nil {
		return err
	}
	fetchCtx, stopFetch := context.WithTimeout(ctx, FetchWait)
	defer stopFetch()
	npm, _ := exec.LookPath("npm")
	piDir, err := PiPackage(fetchCtx, cfg.Cache, npm, logWriter{h.log})
	if err != nil {
		return err
	}
	script, err := writeScript(cfg.Cache)
	if err != nil {
		return err
	}
	conf, _ := json.Marshal(map[string]any{"pi": piDir, "paths": cfg.Paths, "noExtensions": cfg.NoExtensions,
		"cwd": cfg.Dir, "flags": cfg.Flags})
	cmd := exec.CommandContext(ctx, node, script)
	claudecli.PrepareGroup(cmd) // its context's end kills the host and what it started
	cmd.Dir = cfg.Dir
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], "CLAUDE_RPC_EXTHOST="+string(conf), "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// Through the reaper (once enabled, a child it does not know is an
	// orphan to it, reaped before its Wait).
	childEnded, err := claudecli.StartChild(cmd, claudecli.EndOrphans)
	if err != nil {
		return fmt.Errorf("starting the extension host (%s %s): %w", node, version, err)
	}
	h.log.Info("extension host started", "node", node, "version", version, "pi", piDir)
	h.w = stdin
	go h.writeLines()
	var logged sync.WaitGroup
	logged.Add(1)
	go func() { // the host's stderr: the bridge's log
		defer logged.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			h.log.Info("extension host: " + sc.Text())
		}
		_, _ = io.Copy(io.Discard, stderr) // a line too long: the rest is drained, never left to block the host
	}()
	go func() {
		h.read(stdout)
		logged.Wait()
		err := cmd.Wait()
		childEnded()
		h.ended(fmt.Errorf("%w (it exited: %v)", ErrNotRunning, err))
		close(h.exited)
	}()
	return nil
}

// writeScript writes host.mjs into cache, named by its content (a file,
// not node -e: Windows bounds a command line to 32 KiB), and returns its
// path.
func writeScript(cache string) (string, error) {
	sum := sha256.Sum256(hostScript)
	dir := filepath.Join(cache, "exthost")
	path := filepath.Join(dir, "host-"+hex.EncodeToString(sum[:6])+".mjs")
	if b, err := os.ReadFile(path); err == nil && string(b) == string(hostScript) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("writing the extension host's script: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".host-*.mjs")
	if err != nil {
		return "", fmt.Errorf("writing the extension host's script: %w", err)
	}
	_, werr := tmp.Write(hostScript)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing the extension host's script: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing the extension host's script: %w", err)
	}
	return path, nil
}

// logWriter is an io.Writer onto the log, a line an entry.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

func (h *Host) notice(level, text string) {
	if level == "error" {
		h.log.Error(text)
	} else {
		h.log.Warn(text)
	}
	if h.cb.Notice != nil {
		h.cb.Notice(level, text)
	}
}

// read owns the host's stdout until it ends.
func (h *Host) read(r io.Reader) {
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
func (h *Host) handle(m gjson.Result) {
	switch m.Get("type").String() {
	case "loaded":
		for _, w := range m.Get("warnings").Array() {
			h.log.Warn("extensions: " + w.String())
		}
		// pi exits on these at startup; the bridge is serving already, so
		// the host is told and the session goes on.
		for _, p := range m.Get("problems").Array() {
			h.notice("error", "extensions: "+p.String())
		}
		for _, e := range m.Get("errors").Array() {
			h.notice("warning", fmt.Sprintf("the extension %s failed to load; going on without it: %s", e.Get("path").String(), e.Get("error").String()))
		}
		h.mu.Lock()
		for _, t := range m.Get("handlers").Array() {
			h.handlers[t.String()] = true
		}
		for _, f := range m.Get("flags").Array() {
			h.flags = append(h.flags, f.Get("name").String())
		}
		h.mu.Unlock()
		h.tools(m.Get("tools"))
		h.setCommands(m.Get("commands"))
		select {
		case <-h.loads:
		default:
			close(h.loads)
		}
	case "tools":
		h.tools(m.Get("tools"))
	case "commands":
		h.setCommands(m.Get("commands"))
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
	case "ui", "ui_cancel":
		if h.cb.UI != nil {
			id := m.Get("uiId")
			h.cb.UI(UI{Method: m.Get("method").String(), Fields: m, Dialog: id.Exists() && m.Get("type").String() == "ui",
				Withdrawn: m.Get("type").String() == "ui_cancel", ID: id.Int()})
		}
	case "error":
		e := Error{ExtensionPath: m.Get("extensionPath").String(), Event: m.Get("event").String(), Error: m.Get("error").String()}
		h.log.Warn("extension error", "extension", e.ExtensionPath, "event", e.Event, "err", e.Error)
		if h.cb.Error != nil {
			h.cb.Error(e)
		}
	case "action":
		a := Action{Name: m.Get("name").String(), Args: m.Get("args"), id: m.Get("id").Int(), h: h}
		if h.cb.Action == nil {
			a.Reply(nil, fmt.Errorf("%s is not supported by claude-rpc", a.Name))
			return
		}
		h.cb.Action(a)
	default:
		h.log.Warn("extension host: unknown message", "type", m.Get("type").String())
	}
}

// toolNameRe is what the Messages API accepts as a tool name (with the
// CLI's mcp__ext__ prefix, 64 in all).
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,54}$`)

// tools checks the tools the host reports and tells cb.Tools.
func (h *Host) tools(list gjson.Result) {
	var tools []Tool
	seen := map[string]bool{}
	for _, t := range list.Array() {
		tool := Tool{Name: t.Get("name").String(), Label: t.Get("label").String(), Description: t.Get("description").String(),
			Parameters: json.RawMessage(`{"type":"object"}`)}
		switch {
		case !toolNameRe.MatchString(tool.Name):
			h.log.Warn("extensions: tool left out: a name must be 1-54 letters, digits, _ or -", "tool", tool.Name)
			continue
		case seen[tool.Name]:
			h.log.Warn("extensions: tool registered twice; the first is kept", "tool", tool.Name)
			continue
		}
		if p := t.Get("parameters"); p.IsObject() {
			tool.Parameters = json.RawMessage(p.Raw)
		}
		seen[tool.Name] = true
		tools = append(tools, tool)
	}
	if h.cb.Tools != nil {
		h.cb.Tools(tools)
	}
}

func (h *Host) setCommands(list gjson.Result) {
	var cmds []Command
	for _, c := range list.Array() {
		cmds = append(cmds, Command{Name: c.Get("name").String(), Description: c.Get("description").String(),
			Source: "extension", SourceInfo: json.RawMessage(c.Get("sourceInfo").Raw)})
	}
	h.mu.Lock()
	h.commands = cmds
	h.mu.Unlock()
	if h.cb.Commands != nil {
		h.cb.Commands(cmds)
	}
}

// ended records that the host is gone and fails what waits for it.
func (h *Host) ended(why error) {
	h.mu.Lock()
	if h.gone != nil {
		h.mu.Unlock()
		return
	}
	h.gone = why
	stopping := h.stopping
	pend := h.pending
	h.pending = map[int64]*pending{}
	h.mu.Unlock()
	for _, p := range pend {
		close(p.result)
	}
	select {
	case <-h.loads:
		if !stopping {
			h.notice("warning", "the extension host ended: "+why.Error()+"; the extensions' tools and commands answer with an error from now on")
		}
	default:
		if !stopping {
			h.log.Warn("extensions: the extension host ended before it loaded the extensions (its messages are in the log above); going on without them", "err", why)
		}
		close(h.loads)
	}
	close(h.done)
}

// Loaded waits until the host said what it loaded (or could not), ctx, or
// wait; it reports whether the extensions are there.
func (h *Host) Loaded(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-h.loads:
	case <-ctx.Done():
		return false
	case <-t.C:
		h.log.Warn("extensions: the extensions did not load in time; going on without them for now", "waited", wait)
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gone == nil
}

// Ready reports, without waiting, whether the host has said what it
// loaded (or is gone): from then on [Host.Command] and [Host.Commands]
// are the whole answer.
func (h *Host) Ready() bool {
	select {
	case <-h.loads:
		return true
	default:
		return false
	}
}

// Handles reports whether an extension handles events of type typ.
func (h *Host) Handles(typ string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handlers[typ] && h.gone == nil
}

// HandledEvents is the event types the extensions handle.
func (h *Host) HandledEvents() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]bool, len(h.handlers))
	for k, v := range h.handlers {
		m[k] = v
	}
	return m
}

// Commands is the extensions' commands, as last reported.
func (h *Host) Commands() []Command {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Command(nil), h.commands...)
}

// Command reports whether an extension registered the command name.
func (h *Host) Command(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Flags is the names of the flags the extensions registered.
func (h *Host) Flags() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.flags...)
}

// call sends the host a request and waits for its result's value, ctx, or
// the host's end. When ctx ends first, the host is told (cancel).
func (h *Host) call(ctx context.Context, typ string, fields map[string]any, update func(gjson.Result)) (gjson.Result, error) {
	h.mu.Lock()
	if h.gone != nil {
		err := h.gone
		h.mu.Unlock()
		return gjson.Result{}, err
	}
	h.seq++
	id := h.seq
	p := &pending{result: make(chan gjson.Result, 1), update: update}
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

// send queues one message for the host, after those queued before it.
func (h *Host) send(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h.mu.Lock()
	gone := h.gone
	h.mu.Unlock()
	if gone != nil {
		return gone
	}
	h.queue(append(b, '\n'))
	return nil
}

// queue adds a line for the host; it never blocks. One goroutine
// (writeLines) writes them in order: no caller (the frame writer among
// them) waits on the host's reading.
func (h *Host) queue(b []byte) {
	h.qmu.Lock()
	h.lines = append(h.lines, b)
	h.qmu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// writeLines owns the host's stdin once it started: it writes the queued
// lines in order until the host is gone, or closes stdin once they are
// written after Stop asked for it.
func (h *Host) writeLines() {
	for {
		h.qmu.Lock()
		lines := h.lines
		h.lines = nil
		closing := h.closing
		h.qmu.Unlock()
		for _, b := range lines {
			if _, err := h.w.Write(b); err != nil {
				h.drain()
				return
			}
		}
		if closing && len(lines) == 0 {
			_ = h.w.Close()
			h.drain()
			return
		}
		select {
		case <-h.wake:
		case <-h.done:
			return
		}
	}
}

// drain drops what is queued from now on (the host is gone or going).
func (h *Host) drain() {
	for {
		h.qmu.Lock()
		h.lines = nil
		h.qmu.Unlock()
		select {
		case <-h.wake:
		case <-h.done:
			return
		}
	}
}

// why is why the host cannot be asked.
func (h *Host) why() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone != nil {
		return h.gone
	}
	return ErrNotRunning
}

// BeforeAgentStart runs the before_agent_start handlers for a prompt's
// run and returns the system prompt they leave, from systemPrompt, and the
// messages they add (pi's custom messages).
func (h *Host) BeforeAgentStart(ctx context.Context, prompt, systemPrompt string) (string, []gjson.Result, error) {
	v, err := h.call(ctx, "before_agent_start", map[string]any{"prompt": prompt, "systemPrompt": systemPrompt}, nil)
	if err != nil {
		return systemPrompt, nil, err
	}
	return v.Get("systemPrompt").String(), v.Get("messages").Array(), nil
}

// CallTool runs an extension's tool; update gets its onUpdate calls.
func (h *Host) CallTool(ctx context.Context, name, toolCallID string, params json.RawMessage, update func(gjson.Result)) (gjson.Result, error) {
	return h.call(ctx, "tool_call", map[string]any{"name": name, "toolCallId": toolCallID, "params": params}, update)
}

// RunCommand runs an extension's command handler with args and returns
// once it is done; handled is false when no extension has the command.
func (h *Host) RunCommand(ctx context.Context, name, args string) (handled bool, err error) {
	v, err := h.call(ctx, "command", map[string]any{"name": name, "args": args}, nil)
	if err != nil {
		return false, err
	}
	return v.Get("handled").Bool(), nil
}

// Emit gives the handlers an event and waits for their combined result
// (tool_call, tool_result, input, session_before_*, user_bash, ...).
func (h *Host) Emit(ctx context.Context, event any) (gjson.Result, error) {
	return h.call(ctx, "emit", map[string]any{"event": event}, nil)
}

// Event gives the handlers an event (raw: a frame as the host wrote it)
// without waiting: it is queued, and the handlers see events in the order
// given. It never blocks.
func (h *Host) Event(event json.RawMessage) {
	h.queue(append(append([]byte(`{"type":"event","event":`), event...), "}\n"...))
}

// SetState tells the host the session's state (fields of host.mjs's state:
// model, models, thinkingLevel, idle, sessionFile, sessionName, ...), in
// order with the events. It never blocks.
func (h *Host) SetState(fields map[string]any) {
	fields["type"] = "state"
	b, err := json.Marshal(fields)
	if err != nil {
		h.log.Warn("extensions: encoding the state", "err", err)
		return
	}
	h.queue(append(b, '\n'))
}

// AnswerUI answers the dialog id: value, confirmed, or cancelled.
func (h *Host) AnswerUI(id int64, answer map[string]any) {
	answer["type"], answer["uiId"] = "ui_response", id
	_ = h.send(answer) // a host that is gone has nobody to answer
}

// Stop ends the host: stdin's end fires session_shutdown and it exits;
// what does not end in time is killed, its process group with it.
func (h *Host) Stop() {
	h.mu.Lock()
	h.stopping = true
	h.mu.Unlock()
	h.qmu.Lock()
	h.closing = true
	h.qmu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	select {
	case <-h.exited:
	case <-time.After(2 * time.Second):
		h.log.Warn("the extension host did not exit in time; killing it")
	}
	h.cancel()
	<-h.exited
}

// DefaultCache is claude-rpc's cache folder:
// ${CLAUDE_RPC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claude-rpc}, read
// from env (nil: the process's).
func DefaultCache(env []string) string {
	get := claudecli.Local(env).Getenv
	if d := get("CLAUDE_RPC_CACHE"); d != "" {
		return d
	}
	if d := get("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "claude-rpc")
	}
	home := get(sessions.HomeVar())
	if home == "" {
		home, _ = os.UserHomeDir() // "" leaves a relative path, which finds nothing
	}
	return filepath.Join(home, ".cache", "claude-rpc")
}

// Discoverable reports whether pi, started in dir with env, would find
// extensions of its own (pi without --no-extensions): a file or folder in
// its global or the project's extensions folder, or an "extensions" or
// "packages" setting in either settings file. It reads a few folders and
// two small files, so that a bridge with nothing to load starts no Node.
func Discoverable(dir string, env []string) bool {
	for _, base := range []string{sessions.PiAgentDir(claudecli.Local(env).Env), filepath.Join(dir, ".pi")} {
		if entries, err := os.ReadDir(filepath.Join(base, "extensions")); err == nil && len(entries) > 0 {
			return true
		}
		if b, err := os.ReadFile(filepath.Join(base, "settings.json")); err == nil {
			s := gjson.ParseBytes(b)
			if len(s.Get("extensions").Array()) > 0 || len(s.Get("packages").Array()) > 0 {
				return true
			}
		}
	}
	return false
}
