package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/extensions"
	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// pi extensions (Options.Extensions, ExtensionsDiscover): the extension
// host (package extensions) runs them; this file is the bridge's glue to
// it, at these points of the dispatcher's and the runner's:
//   - startExtensions / stopExtensions: with the server;
//   - its tools, to the CLI as the MCP server extServer (stream
//     transport, as the host's own tools): callExtTool;
//   - before_agent_start, before a prompt's run: extBeforeStart;
//   - a prompt "/name args" naming an extension's command: extCommand;
//   - get_commands lists their commands (source "extension");
//   - the frames the extensions handle go to them (the writer's tap,
//     extensions.Pump), the session's state before them (extState);
//   - what they call back: ctx.ui (extUI), extension_error, and the API
//     calls carried out as the host's commands would be
//     (extensions.Actions, on the session extsession.go gives it:
//     internalCall and the owners' methods).

// extServer is the MCP server name of the extensions' tools: the model
// sees them as mcp__ext__<name> (transform's extensionTools); frames show the
// extension's own name (under --tool-names pi).
const extServer = "ext"

// startExtensions starts the extension host when there is anything to
// load; it returns at once (the host loads on its own).
func (s *server) startExtensions() {
	if len(s.opts.Extensions) == 0 && !s.opts.ExtensionsDiscover {
		// With no extension configured, nothing is started.
		return
	}
	sess := extSession{s}
	s.extActs = extensions.NewActions(sess, s.log) // before the host: its reader calls Do and Push
	s.presetExtPrompt()
	h := extensions.Start(extensions.Config{
		Paths: s.opts.Extensions, NoExtensions: !s.opts.ExtensionsDiscover, Dir: s.cwd, Env: s.opts.CLI.Env,
		Flags: s.opts.ExtensionFlags, Cache: s.opts.cacheDir(), Log: s.log,
	}, extensions.Callbacks{
		Tools: func(tools []extensions.Tool) {
			list := make([]hostlink.Tool, len(tools))
			for i, t := range tools {
				list[i] = hostlink.Tool(t)
			}
			s.applySettings(func(st *cliSettings) { st.extTools = list })
		},
		UI:     s.extUI,
		Error:  s.extError,
		Action: s.extActs.Do,
		Notice: func(level, text string) {
			s.out.Events([]transform.Event{transform.NotifyEvent(level, text)})
		},
	})
	s.extEvents = extensions.NewPump(h, sess, s.log)
	s.ext = h
	s.out.SetTap(s.extEvents.Tapped, s.extEvents.Tap)
}

// extLoaded waits for the extensions to load and their startup
// session_start handlers to return (what pi does before it reads a
// command: those handlers may register commands and tools); false when
// there are none.
func (s *server) extLoaded(ctx context.Context) bool {
	if s.ext == nil || !s.ext.Loaded(ctx, extensions.LoadWait) {
		return false
	}
	s.extEvents.Loaded(ctx)
	return true
}

// extBeforeStart calls the extensions' before_agent_start handlers before
// a prompt's run and appends the system prompt they leave to the CLI's
// (a change takes effect as other settings do: applySettings). It returns
// the messages they add, which pi puts into the run after the prompt's.
// Off the runner's loop.
func (s *server) extBeforeStart(prompt string) (added []message) {
	if !s.extLoaded(s.ctx) || !s.ext.Handles("before_agent_start") {
		return nil
	}
	s.extEvents.FlushState()
	ctx, cancel := context.WithTimeoutCause(s.ctx, extensions.CallWait, errors.New("before_agent_start took too long"))
	defer cancel()
	text, msgs, err := s.ext.BeforeAgentStart(ctx, prompt, "")
	if err != nil {
		s.log.Warn("--extension: before_agent_start failed; the system prompt stays as it was", "err", err)
		return nil
	}
	for _, m := range msgs {
		cm, err := customMessage(m)
		if err != nil {
			s.extError(extensions.Error{ExtensionPath: "<runtime>", Event: "before_agent_start", Error: err.Error()})
			continue
		}
		added = append(added, cm)
	}
	text = strings.TrimSpace(text)
	if set, _ := s.st.currentSettings(); set.extPrompt != text {
		s.applySettings(func(st *cliSettings) { st.extPrompt = text })
		s.rememberExtPrompt(text)
	}
	return added
}

// The text the extensions' before_agent_start handlers add to the system
// prompt is known only at a prompt (pi asks them with it), and a CLI
// process has its system prompt from its start: the warm process
// (--prewarm), started before any prompt, would be replaced at the first
// one. So the bridge keeps the text they gave last, per folder and
// extensions, beside the info cache, and warms the process with it: when
// the first prompt's handlers give the same (hapi's title extension
// always does), the prompt runs in the warm process; when they give
// another, it is replaced, as without it. The text reaches the model only
// with a prompt whose handlers gave it.

// extPromptFile is where the text given last is kept; "" without an info
// cache (--cache-dir off, demo).
func (s *server) extPromptFile() string {
	if s.opts.InfoCache == nil || s.opts.InfoCache.Dir() == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%q\x00", s.cwd, s.opts.ExtensionsDiscover, s.opts.Extensions)
	return filepath.Join(s.opts.InfoCache.Dir(), "ext-prompt-"+hex.EncodeToString(h.Sum(nil)[:12])+".txt")
}

// rememberExtPrompt keeps text for the next bridge's warm process. Off
// the loop (a file write).
func (s *server) rememberExtPrompt(text string) {
	f := s.extPromptFile()
	if f == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(f), 0o700)
	if err == nil {
		err = os.WriteFile(f, []byte(text), 0o600)
	}
	if err != nil {
		s.log.Debug("extensions: keeping their system prompt text for the next start", "err", err)
	}
}

// presetExtPrompt gives the settings the text the extensions gave last,
// at the start, before any CLI process is started; keptExtPrompt drops it
// once they loaded if none of them handles before_agent_start.
func (s *server) presetExtPrompt() {
	f := s.extPromptFile()
	if f == "" {
		return
	}
	if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
		s.st.changeSettings(func(st *cliSettings) { st.extPrompt = string(b) })
	}
}

// keptExtPrompt drops the text presetExtPrompt gave when the extensions,
// loaded, do not handle before_agent_start (they changed since).
func (s *server) keptExtPrompt() {
	if set, _ := s.st.currentSettings(); set.extPrompt == "" || s.ext == nil || s.ext.Handles("before_agent_start") {
		return
	}
	s.applySettings(func(st *cliSettings) { st.extPrompt = "" })
}

// extSessionBefore asks the extensions' session_before_switch or
// session_before_fork handlers (event), as pi does before the session
// changes; true when one cancels. On the slow command's goroutine.
func (s *server) extSessionBefore(c *call, event map[string]any) (cancel bool) {
	typ, _ := event["type"].(string)
	if !s.extLoaded(c.Context()) || !s.ext.Handles(typ) {
		return false
	}
	v, err := s.extEvents.Ask(c.Context(), typ, event)
	if err != nil {
		s.log.Warn("--extension: "+typ+" failed; the session changes", "err", err)
		return false
	}
	return v.Get("cancel").Bool()
}

// extSessionChanged tells the extensions the session changed (reason:
// new, resume or fork), as pi does: session_shutdown to the old one's,
// then session_start to the new one's (the host makes them anew, as pi
// binds its extensions again). Never blocks; before the extensions
// loaded, there is no one to tell (their startup comes after).
func (s *server) extSessionChanged(reason, previous string) {
	if s.ext == nil || !s.extEvents.Started() {
		return
	}
	_, target := s.st.where()
	shutdown, _ := json.Marshal(map[string]any{"type": "session_shutdown", "reason": reason, "targetSessionFile": target})
	s.ext.Event(shutdown)
	s.extEvents.FlushState()
	start, _ := json.Marshal(map[string]any{"type": "session_start", "reason": reason, "previousSessionFile": previous})
	s.ext.Event(start)
}

// extEvent gives the extensions that handle it an event of the bridge's
// own (no frame carries it: model_select, thinking_level_select), after
// the state it follows. Never blocks.
func (s *server) extEvent(typ string, fields map[string]any) {
	if s.ext == nil || !s.extEvents.Wants(typ) {
		return
	}
	fields["type"] = typ
	b, err := json.Marshal(fields)
	if err != nil {
		s.log.Warn("extensions: encoding "+typ, "err", err)
		return
	}
	s.extEvents.FlushState()
	s.ext.Event(b)
}

// extTools are the tools as pi's getAllTools and getActiveTools give them:
// the CLI's own that pi has, under the names hosts see, then the
// extensions'; active are those not turned off.
func (s *server) extTools() (all []map[string]any, active []string) {
	set, _ := s.st.currentSettings()
	add := func(name, description string, parameters json.RawMessage, source string) {
		t := map[string]any{"name": name, "description": description, "sourceInfo": map[string]string{"path": "<" + source + ">", "source": source}}
		if parameters != nil {
			t["parameters"] = parameters
		}
		all = append(all, t)
		if !slices.Contains(set.inactive, name) {
			active = append(active, name)
		}
	}
	for _, cli := range transform.PiTools() {
		add(s.opts.ToolNames.Name(cli), "The Claude CLI's "+cli+" tool", nil, "builtin")
	}
	for _, t := range set.extTools {
		add(t.Name, t.Description, t.Parameters, "extension")
	}
	return all, active
}

// setActiveTools turns off the tools not in active (pi's setActiveTools;
// names it does not know are ignored, as pi's): the CLI's own by
// disallowing them (its next process), the extensions' by not listing
// them.
func (s *server) setActiveTools(active []string) {
	all, _ := s.extTools()
	var inactive []string
	for _, t := range all {
		if name := t["name"].(string); !slices.Contains(active, name) {
			inactive = append(inactive, name)
		}
	}
	s.applySettings(func(st *cliSettings) { st.inactive = inactive })
}

// extHandlesNow reports, without waiting, whether the loaded extensions
// handle events of type typ.
func (s *server) extHandlesNow(typ string) bool {
	return s.ext != nil && s.ext.Ready() && s.ext.Handles(typ)
}

// extCompactCancelled asks the extensions' session_before_compact handlers
// about a manual compaction, as pi does: true when one cancels. A custom
// compaction they return is not taken (the CLI compacts its own context).
func (s *server) extCompactCancelled(c *call, instructions string) bool {
	msgs, _, _ := s.st.conversation()
	all := s.st.allEntries()
	preparation := map[string]any{"firstKeptEntryId": "", "messagesToSummarize": msgs, "turnPrefixMessages": []any{},
		"isSplitTurn": false, "tokensBefore": 0, "fileOps": map[string]any{"read": []string{}, "edited": []string{}}}
	event := map[string]any{"type": "session_before_compact", "preparation": preparation, "branchEntries": all,
		"reason": "manual", "willRetry": false}
	if instructions != "" {
		event["customInstructions"] = instructions
	}
	return s.extSessionBefore(c, event)
}

// extCommand runs the extension command a prompt names ("/name args"),
// and answers the prompt as pi does once the handler returned
// (disposition "handled"). ok is false when no extension has the command.
// It never blocks: the handler runs on a goroutine of its own.
func (s *server) extCommand(c *call) (data any, ok bool) {
	text := c.raw.Get("message").String()
	if s.ext == nil || !strings.HasPrefix(text, "/") {
		return nil, false
	}
	name, args, _ := strings.Cut(text[1:], " ")
	if !s.ext.Ready() {
		// Still loading: pi loads its extensions before it reads a
		// command, so the prompt waits for them, on a goroutine of its
		// own (nothing else waits), and then goes on as it would have.
		return nil, s.goes.start(func() {
			s.extLoaded(c.Context())
			if s.ext.Command(name) {
				s.runExtCommand(c, name, args)
				return
			}
			data, err := s.promptNow(c, c.str("streamingBehavior"))
			s.reply(c, data, err)
		})
	}
	if !s.ext.Command(name) {
		return nil, false
	}
	return nil, s.goes.start(func() { s.runExtCommand(c, name, args) })
}

// extInput gives a prompt to the extensions' input handlers first, as pi
// does: they let it through, change its text and images, or handle it
// (answered {disposition:"handled"}, no run). It reports whether it took
// c, which it then answers itself, from a goroutine of its own (nothing
// else waits); false when no extension handles input. While the
// extensions load, the prompt waits for them, as under pi.
func (s *server) extInput(c *call, behavior string) bool {
	if s.ext == nil || s.ext.Ready() && !s.ext.Handles("input") {
		return false
	}
	return s.goes.start(func() {
		if s.extLoaded(c.Context()) && s.ext.Handles("input") {
			if handled := s.runInput(c, behavior); handled {
				s.reply(c, dispositionData{Disposition: "handled"}, nil)
				return
			}
		}
		data, err := s.promptNow(c, behavior)
		s.reply(c, data, err)
	})
}

// runInput emits pi's input event for c's message and applies what the
// handlers decided: true when they handled it; a transform rewrites c's
// message and images. A failure lets the prompt through as it was.
func (s *server) runInput(c *call, behavior string) (handled bool) {
	ev := map[string]any{"type": "input", "text": c.str("message"), "source": "rpc"}
	if im := c.raw.Get("images"); im.IsArray() {
		ev["images"] = json.RawMessage(im.Raw)
	}
	if behavior != "" && s.runs.status().streaming {
		ev["streamingBehavior"] = behavior
	}
	v, err := s.extEvents.Ask(c.Context(), "input", ev)
	if err != nil {
		s.log.Warn("--extension: input failed; the prompt goes on as it was", "err", err)
		return false
	}
	s.extActs.Settle(c.Context()) // what the handlers asked (a sendMessage) comes before the prompt's run
	switch v.Get("action").String() {
	case "handled":
		return true
	case "transform":
		var cmd map[string]any
		if json.Unmarshal([]byte(c.raw.Raw), &cmd) == nil {
			cmd["message"] = v.Get("text").String()
			if im := v.Get("images"); im.IsArray() {
				cmd["images"] = json.RawMessage(im.Raw)
			}
			if b, err := json.Marshal(cmd); err == nil {
				c.raw = gjson.ParseBytes(b)
			}
		}
	}
	return false
}

// extUserBash fires pi's user_bash for the host's bash command; given is
// true when a handler gave the result, which then stands for running it
// (pi's {result}). Its operations (pi's way to run it elsewhere) are not
// taken: the command runs here.
func (s *server) extUserBash(ctx context.Context, cmdline string, exclude bool) (res bashResult, given bool) {
	if s.ext == nil || !s.extLoaded(ctx) || !s.ext.Handles("user_bash") {
		return res, false
	}
	v, err := s.extEvents.Ask(ctx, "user_bash", map[string]any{"type": "user_bash", "command": cmdline, "excludeFromContext": exclude, "cwd": s.cwd})
	if err != nil {
		s.log.Warn("--extension: user_bash failed; the command runs", "err", err)
		return res, false
	}
	r := v.Get("result")
	if !r.IsObject() || json.Unmarshal([]byte(r.Raw), &res) != nil {
		return bashResult{}, false
	}
	return res, true
}

// toolHook answers the CLI's PreToolUse and PostToolUse hooks
// (claudecli.Config.ToolHooks) with what the extensions' tool_call and
// tool_result handlers decide for one of the CLI's own tools, as pi fires
// them for its own: tool_call may block the call (its reason goes to the
// model) or change its input; tool_result may change the text the model
// gets. The extensions' tools are left to pi's wrapper, which fires both
// itself; other MCP servers' tools are none of pi's. {} changes nothing.
func (s *server) toolHook(ctx context.Context, r gjson.Result) any {
	in := r.Get("input")
	cli := in.Get("tool_name").String()
	if s.ext == nil || strings.HasPrefix(cli, "mcp__") {
		return map[string]any{}
	}
	name, id := s.opts.ToolNames.Name(cli), in.Get("tool_use_id").String()
	args := s.opts.ToolNames.Args(cli, json.RawMessage(in.Get("tool_input").Raw))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	switch r.Get("callback_id").String() {
	case claudecli.HookPreTool:
		if !s.extLoaded(ctx) || !s.ext.Handles("tool_call") {
			return map[string]any{}
		}
		s.extEvents.FlushState()
		v, err := s.ext.Emit(ctx, map[string]any{"type": "tool_call", "toolCallId": id, "toolName": name, "input": args})
		if err != nil {
			s.log.Warn("--extension: tool_call failed; the tool runs", "tool", name, "err", err)
			return map[string]any{}
		}
		out := map[string]any{"hookEventName": "PreToolUse"}
		switch {
		case v.Get("block").Bool():
			reason := v.Get("reason").String()
			if reason == "" {
				reason = "Blocked by an extension"
			}
			out["permissionDecision"], out["permissionDecisionReason"] = "deny", reason
		case v.Get("input").IsObject() && !extensions.JSONEqual(v.Get("input").Raw, string(args)):
			changed, ok := s.opts.ToolNames.CLIArgs(cli, json.RawMessage(v.Get("input").Raw))
			if !ok {
				s.log.Warn("--extension: tool_call changed the input in a way the CLI's tool cannot take; it runs as it was", "tool", name)
				return map[string]any{}
			}
			out["updatedInput"] = changed
		default:
			return map[string]any{}
		}
		return map[string]any{"hookSpecificOutput": out}
	case claudecli.HookPostTool:
		if !s.extLoaded(ctx) || !s.ext.Handles("tool_result") {
			return map[string]any{}
		}
		resp := in.Get("tool_response")
		text, update := extensions.ToolOutputText(resp)
		s.extEvents.FlushState()
		v, err := s.ext.Emit(ctx, map[string]any{"type": "tool_result", "toolCallId": id, "toolName": name, "input": args,
			"content": []map[string]string{{"type": "text", "text": text}}, "isError": false})
		if err != nil || !v.Get("content").Exists() {
			return map[string]any{}
		}
		if update == nil {
			s.log.Warn("--extension: tool_result changed the result of a tool whose output claude-rpc cannot rewrite; the model gets it as it was", "tool", name)
			return map[string]any{}
		}
		return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PostToolUse",
			"updatedToolOutput": update(transform.ContentText(v.Get("content")))}}
	}
	return map[string]any{}
}

// runExtCommand runs extension command name and answers c as pi does once
// its handler returned. The shutdown an extension asks for waits for it
// (extensions.Actions.Command), so that the command that asked is
// answered first.
func (s *server) runExtCommand(c *call, name, args string) {
	// An extension's command starts no run of its own: an abort sent
	// after it does not wait for it (what it asks to run, it asks as the
	// extension's calls, after the abort's).
	c.begin()
	s.extActs.Command(func() {
		s.extEvents.FlushState()
		_, err := s.ext.RunCommand(c.Context(), name, args)
		s.extActs.Settle(c.Context()) // what the handler asked comes before its answer, as under pi
		if err != nil {
			s.respond(c, errResponse(c.id, c.typ, "/"+name+": "+err.Error()))
			return
		}
		s.respond(c, okResponse(c.id, c.typ, dispositionData{Disposition: "handled"}))
	})
}

// extCommands is the extensions' commands for get_commands.
func (s *server) extCommands() []slashCommand {
	if s.ext == nil {
		return nil
	}
	var out []slashCommand
	for _, c := range s.ext.Commands() {
		var si sourceInfo
		_ = json.Unmarshal(c.SourceInfo, &si)
		out = append(out, slashCommand{Name: c.Name, Description: c.Description, Source: "extension", SourceInfo: si})
	}
	return out
}

// extError sends pi's extension_error.
func (s *server) extError(e extensions.Error) {
	s.out.Send(extensionErrorJSON{Type: "extension_error", ExtensionPath: e.ExtensionPath, Event: e.Event, Error: e.Error})
}

// extUI turns an extension's ctx.ui call into an extension_ui_request,
// in order with the API calls the extension does not wait for (a notify
// after pi.setThinkingLevel comes after thinking_level_changed, as under
// pi): fire-and-forget ones are sent as they come; a dialog is asked
// through the link's Ask, on a goroutine of its own, and its answer handed back.
// A withdrawn dialog is withdrawn at once. On the host's reader
// goroutine: never blocks.
func (s *server) extUI(u extensions.UI) {
	if u.Withdrawn {
		s.extDialogs.Cancel(u.ID)
		return
	}
	s.extActs.Push(func() { s.showUI(u) })
}

// showUI sends u's request; on the extensions' action queue.
func (s *server) showUI(u extensions.UI) {
	m := u.Fields
	id := s.link.Next("ui_")
	const typ = "extension_ui_request"
	var req hostlink.Dialog
	switch u.Method {
	case "setTitle":
		s.out.Send(uiSetTitleJSON{Type: typ, ID: id, Method: u.Method, Title: m.Get("title").String()})
	case "notify":
		ev := transform.NotifyEvent(m.Get("notifyType").String(), m.Get("message").String())
		ev.Notice.ID = id
		s.out.Events([]transform.Event{ev})
	case "setStatus":
		var text *string
		if t := m.Get("statusText"); t.Exists() && t.Type != gjson.Null {
			text = new(string)
			*text = t.String()
		}
		ev := transform.StatusEvent(m.Get("statusKey").String(), text)
		ev.Notice.ID = id
		s.out.Events([]transform.Event{ev})
	case "setWidget":
		f := uiSetWidgetJSON{Type: typ, ID: id, Method: u.Method, WidgetKey: m.Get("widgetKey").String(), WidgetPlacement: m.Get("widgetPlacement").String()}
		for _, l := range m.Get("widgetLines").Array() {
			f.WidgetLines = append(f.WidgetLines, l.String())
		}
		s.out.Send(f)
	case "set_editor_text":
		s.out.Send(uiSetEditorTextJSON{Type: typ, ID: id, Method: u.Method, Text: m.Get("text").String()})
	case "select":
		var options []string
		for _, o := range m.Get("options").Array() {
			options = append(options, o.String())
		}
		req = hostlink.Select(m.Get("title").String(), "", options)
	case "confirm":
		req = hostlink.Confirm(m.Get("title").String(), m.Get("message").String())
	case "input":
		req = hostlink.Input(m.Get("title").String(), "", m.Get("placeholder").String())
	case "editor":
		req = hostlink.Editor(m.Get("title").String(), m.Get("prefill").String())
	default:
		s.log.Warn("extension host: unknown ctx.ui method", "method", u.Method)
	}
	if req == nil || !u.Dialog {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.extDialogs.Add(u.ID, cancel)
	// Refused at shutdown: the extension host is ended with the bridge.
	s.goes.start(func() {
		defer s.extDialogs.Cancel(u.ID)
		answer := map[string]any{}
		if a, ok := s.link.Ask(ctx, req); ok {
			if v := a.Get("value"); v.Exists() {
				answer["value"] = v.Value()
			}
			if c := a.Get("confirmed"); c.Exists() {
				answer["confirmed"] = c.Bool()
			}
		} else {
			answer["cancelled"] = true
		}
		s.ext.AnswerUI(u.ID, answer)
	})
}

// callExtTool runs an extension's tool in the host for the CLI's
// tools/call and returns MCP's CallToolResult; its onUpdate calls become
// tool_execution_update frames.
func (s *server) callExtTool(ctx context.Context, p gjson.Result) map[string]any {
	if s.ext == nil {
		return hostlink.TextResult("claude-rpc runs no extensions", true)
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
		s.out.Send(toolExecutionUpdateJSON{Type: "tool_execution_update", ToolCallID: toolCallID,
			ToolName: s.opts.ToolNames.Name("mcp__" + extServer + "__" + name), Args: args, PartialResult: raw})
	}
	s.toolStarts.wait(ctx, toolCallID) // its progress after its start
	s.extEvents.FlushState()
	v, err := s.ext.CallTool(ctx, name, toolCallID, args, update)
	switch {
	case ctx.Err() != nil:
		return hostlink.TextResult("The tool call was cancelled.", true)
	case err != nil:
		return hostlink.TextResult("The extension's tool "+name+" could not run: "+err.Error(), true)
	}
	content := json.RawMessage(v.Get("content").Raw)
	if !v.Get("content").IsArray() {
		content = json.RawMessage(`[]`)
	}
	// The CLI passes an MCP result's content only: the run's translator
	// gets the details and usage before the CLI's result line, which comes
	// after this answer.
	var x transform.ToolExtras
	if d := v.Get("details"); d.Exists() && d.Type != gjson.Null {
		x.Details = json.RawMessage(d.Raw)
	}
	if u := v.Get("usage"); u.IsObject() {
		x.Usage = json.RawMessage(u.Raw)
	}
	if toolCallID != "" && (x.Details != nil || x.Usage != nil) {
		s.runs.do(func() {
			if r := s.runs.cur; r != nil && r.tr != nil {
				r.tr.ToolExtras(toolCallID, x)
			}
		})
	}
	return map[string]any{"content": content, "isError": v.Get("isError").Bool()}
}

// stopExtensions ends the extension host, if any.
func (s *server) stopExtensions() {
	if s.ext != nil {
		s.ext.Stop()
		s.extEvents.Stop()
	}
}

// extAgentEnd gives the extensions' agent_end handlers the run's
// agent_end and waits for them, and for what they asked without waiting,
// before the host sees it: pi runs an agent event's extension handlers
// first (pi-prompt-template-model restores the model and thinking level
// in its agent_end handler, and hosts see thinking_level_changed and the
// notice before agent_end). Bounded by extensions.CallWait. Off the loop:
// the runner's finish waits for it on a goroutine.
func (s *server) extAgentEnd(end *transform.Event) {
	var b bytes.Buffer
	enc := transform.NewEncoder(&b)
	if enc.Event(end) != nil || enc.Flush() != nil {
		return
	}
	if _, err := s.extEvents.Ask(s.ctx, "agent_end", json.RawMessage(bytes.TrimSpace(b.Bytes()))); err != nil {
		s.log.Warn("extensions: agent_end", "err", err)
	}
	s.extActs.Settle(s.ctx)
}
