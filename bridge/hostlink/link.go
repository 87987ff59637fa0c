// Package hostlink is the host in the loop: the requests the bridge sends
// the host (on stdout) and waits for the host's answers to (on stdin), for
// the Claude CLI's control requests (stream transport) and for the
// bridge's extensions.
//
// The CLI asks the bridge over its control protocol (as 2.1.328 does;
// cmd/claude-rpc's host_e2e_test.go checks it):
//   - can_use_tool {tool_name, display_name, input, permission_suggestions,
//     tool_use_id} before a tool it may not run on its own, when started
//     with --permission-prompt-tool stdio (--ask). Answered {behavior:
//     "allow", updatedInput[, updatedPermissions]} or {behavior:"deny",
//     message}. AskUserQuestion comes the same way; its answers go back in
//     updatedInput.answers, keyed by question text ([Link.CanUseTool]).
//   - mcp_message {server_name, message} for the MCP server the bridge
//     serves for the host's tools (set_host_tools), JSON-RPC inside
//     ([Link.MCPMessage], [ServeMCP]).
//   - elicitation {mcp_server_name, message, mode, requested_schema,
//     property_order, url, elicitation_id, title, display_name,
//     description} when an MCP server the CLI runs asks its user (MCP's
//     elicitation/create), by form or by URL; sent by 2.1.275 to 2.1.332
//     with nothing asked of the host (2.1.275 refuses URL mode itself: its
//     MCP client does not declare it). Answered with MCP's ElicitResult
//     {action: accept|decline|cancel, content}; an error answer counts as
//     cancel. dialogs.go puts it to the host as pi's dialogs
//     ([Link.Elicitation]).
//   - request_user_dialog {dialog_kind, payload, tool_use_id} for a
//     dialog of the CLI's own, only of the kinds declared in initialize
//     (supportedDialogKinds: [DialogKinds], when asking is on). Answered
//     {behavior:"completed", result} or {behavior:"cancelled"} (the CLI's
//     default for the kind; [Link.UserDialog]).
//
// The bridge routes the CLI's requests (its hostRequest) and refuses every
// other.
//
// The host sees pi's extension_ui_request (answered with
// extension_ui_response), xcsh's host_tool_call (answered with
// host_tool_result, optionally preceded by host_tool_update) and omp's
// host_uri_request (answered with host_uri_result); the bridge hands each
// answer to [Link.Answer]. A request nobody answers is withdrawn
// (extension_ui_request method cancel, host_tool_cancel,
// host_uri_cancel).
//
// What the package needs of the bridge comes in its [Config]: the writer's
// Send, the server's context, --ask and --ask-timeout, the wait for a tool
// call's tool_execution_start, the relay of a host tool's progress, and
// what the host serves now (its tools and URI schemes are the CLI's
// settings, kept by the bridge's state with the other settings the CLI's
// config is made from: one snapshot, one revision). It imports nothing of
// the bridge.
package hostlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Config is what a Link needs of the bridge.
type Config struct {
	// Send queues a frame for the host (the bridge's writer.Writer's
	// Send). Called only once the bridge serves: it may read a writer made
	// after the Link.
	Send func(frame any)
	// Ctx is the server's context: its end (the shutdown) withdraws every
	// request waiting for the host.
	Ctx context.Context
	Log *slog.Logger
	// AskTimeout is --ask-timeout: a dialog unanswered for that long is
	// withdrawn and counts as denied; 0 waits as long as the request
	// does.
	AskTimeout time.Duration
	// AskOn says whether tools that need permission (and MCP servers'
	// elicitations) are asked of the host (--ask, as the CLI's plan
	// says).
	AskOn func() bool
	// OwnServers are the MCP servers the bridge serves besides the host's
	// ([Server]): the extensions'. A call of one of their tools, as of the
	// host's, needs no permission: their definer made the call possible.
	OwnServers []string
	// ToolStarted waits (bounded) until the host was shown the tool
	// call's tool_execution_start, so host_tool_call and its progress
	// come after it.
	ToolStarted func(ctx context.Context, toolCallID string)
	// ToolUpdate relays a host_tool_update of the host's tool name (as
	// set_host_tools named it) as the bridge shows a tool's progress.
	ToolUpdate func(toolCallID, name string, args, partial json.RawMessage)
	// Served is what the host serves the model now: its tools and URI
	// schemes (set_host_tools, set_host_uri_schemes).
	Served func() ([]Tool, []URIScheme)
}

// waiter is a request to the host waiting for its answer.
type waiter struct {
	ch     chan gjson.Result // the host's answer frame
	cancel func()            // withdraws it (a host tool call: host_tool_cancel)
}

// Link keeps the requests to the host waiting for its answers, by id
// (ui_N: extension_ui_request, host_N: host_tool_call, uri_N:
// host_uri_request), and asks them. Its mutex is taken only by its
// methods in this file, each for one short section that calls nothing
// else but a waiter's cancel (CancelAll: a context's cancel func, which
// calls back into nothing of the link's or the bridge's); nothing blocks
// under it, and no other lock is taken while it is held.
type Link struct {
	cfg     Config
	mu      sync.Mutex
	waiting map[string]*waiter
	seq     map[string]int // per prefix: the last number given
}

// New makes a Link with nothing waiting. A Link of the zero Config only
// numbers ids ([Link.Next]).
func New(cfg Config) *Link {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Ctx == nil {
		cfg.Ctx = context.Background()
	}
	return &Link{cfg: cfg, waiting: map[string]*waiter{}, seq: map[string]int{}}
}

// add makes w the waiter for request id.
func (h *Link) add(id string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting[id] = w
}

// remove forgets request id's waiter.
func (h *Link) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting, id)
}

// waiter is request id's waiter; nil when nothing waits for it.
func (h *Link) waiter(id string) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[id]
}

// Next is the next request id with prefix ("ui_": the bridge numbers its
// other extension_ui_request frames, notices and an extension's ctx.ui
// calls, with the link's dialogs).
func (h *Link) Next(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq[prefix]++
	return prefix + strconv.Itoa(h.seq[prefix])
}

// CancelAll withdraws every request waiting for the host: the run they
// belong to is over.
func (h *Link) CancelAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.waiting {
		w.cancel()
	}
}

// outcome is how a dialog ended.
type outcome int

const (
	uiAnswered  outcome = iota // the host answered
	uiCancelled                // the host answered {cancelled: true}
	uiTimedOut                 // --ask-timeout passed first
	uiWithdrawn                // ctx ended first: the CLI withdrew its request, the run ended, or the bridge shuts down
)

// Ask sends an extension_ui_request and waits for its answer, the
// timeout (--ask-timeout), or ctx. It reports false when the host
// cancelled it or it was not answered; a request left unanswered is
// withdrawn (method cancel, as omp does), so the host closes its dialog.
func (h *Link) Ask(ctx context.Context, d Dialog) (gjson.Result, bool) {
	a, how := h.ask(ctx, d)
	return a, how == uiAnswered
}

// ask is Ask that says how the dialog ended.
func (h *Link) ask(ctx context.Context, d Dialog) (gjson.Result, outcome) {
	id, w, ctx, done := h.register(ctx, "ui_", 1)
	defer done()
	d.setID(id, h.cfg.AskTimeout.Milliseconds())
	h.cfg.Send(d)
	how := uiWithdrawn
	select {
	case a := <-w.ch:
		if a.Get("cancelled").Bool() {
			return a, uiCancelled
		}
		return a, uiAnswered
	case <-ctx.Done():
	case <-h.timeout():
		h.cfg.Log.Warn("no answer to a UI request in time; taking it as denied", "id", id, "timeout", h.cfg.AskTimeout)
		how = uiTimedOut
	}
	done() // an answer from now on finds nothing waiting
	h.cfg.Send(uiCancelJSON{Type: uiType, ID: h.Next("ui_cancel_"), Method: "cancel", TargetID: id})
	return gjson.Result{}, how
}

// timeout fires after --ask-timeout, or never when it is 0.
func (h *Link) timeout() <-chan time.Time {
	if h.cfg.AskTimeout <= 0 {
		return nil
	}
	return time.After(h.cfg.AskTimeout)
}

// register makes a waiter for the host's answer to request prefix+N. Its
// context ends when the request is withdrawn (by the CLI, the end of its
// run, or the shutdown: the server's context); done forgets it.
func (h *Link) register(ctx context.Context, prefix string, buf int) (string, *waiter, context.Context, func()) {
	id := h.Next(prefix)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.cfg.Ctx, cancel)
	w := &waiter{ch: make(chan gjson.Result, buf), cancel: cancel}
	h.add(id, w)
	return id, w, ctx, func() {
		h.remove(id)
		stop()
		cancel()
	}
}

// Answer hands the host's answer frame of type typ (extension_ui_response,
// host_tool_result, host_tool_update, host_uri_result) to the request it
// names, after checking the frame has what its type needs. A frame for
// nothing waiting is refused with a clear error. It never blocks: a
// second answer to the same request is dropped.
func (h *Link) Answer(typ string, v gjson.Result) error {
	var prefix string
	switch typ {
	case "extension_ui_response":
		if !v.Get("value").Exists() && !v.Get("confirmed").IsBool() && !v.Get("cancelled").Exists() {
			return errors.New(typ + ": give \"value\", \"confirmed\" or \"cancelled\"")
		}
		prefix = "ui_"
	case "host_tool_result", "host_tool_update":
		switch {
		case typ == "host_tool_result" && !v.Get("result.content").IsArray():
			return errors.New(`host_tool_result: "result.content" must be an array of content blocks`)
		case typ == "host_tool_update" && !v.Get("partialResult").IsObject():
			return errors.New(`host_tool_update: "partialResult" must be an object`)
		}
		prefix = "host_"
	case "host_uri_result":
		if v.Get("content").Exists() && v.Get("content").Type != gjson.String {
			return errors.New(`host_uri_result: "content" must be a string`)
		}
		prefix = "uri_"
	default:
		return fmt.Errorf("%s answers no request to the host", typ)
	}
	id := v.Get("id").String()
	w := h.waiter(id)
	if w == nil || !strings.HasPrefix(id, prefix) {
		return fmt.Errorf("%s: no request %q is waiting for an answer", typ, id)
	}
	deliver(w, v)
	return nil
}

// deliver passes an answer on; a second answer to the same request is
// dropped.
func deliver(w *waiter, v gjson.Result) {
	select {
	case w.ch <- v:
	default:
	}
}
