package transform

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The CLI's notices and status lines, shown as pi shows what an extension
// tells the user: extension_ui_request frames with method notify (a
// message that pops up and goes) or setStatus (an entry of the status
// bar, kept until it is set again or cleared), both fire-and-forget. What
// each line of the CLI becomes:
//
//   - hook_started, hook_progress: setStatus (one entry per hook run, key
//     claude.hook.<hook_id>), cleared by its hook_response; a hook that
//     failed (outcome error) is also a notify warning with what it printed
//     on stderr (else its output). The CLI prints these for every hook
//     only with --include-hook-events (the bridge passes it); without it,
//     for SessionStart and Setup hooks only.
//   - notification: notify, a warning when its priority is high or
//     immediate, else info.
//   - informational: notify, a warning at level warning, info at notice
//     and suggestion; level info is left out (the CLI shows it only in
//     its transcript view).
//   - local_command_output: notify info with the command's output.
//   - permission_denied: no frame of its own: why the tool was refused
//     goes to that tool call's result, as details.permissionDenied
//     (tool_execution_end and the toolResult message; the error text is
//     the refusal the model got).
//   - rate_limit_event: setStatus claude.rateLimit while a limit is near
//     (allowed_warning) or reached (rejected), with a notify (warning,
//     error) when the status is set, saying when the limit resets; cleared
//     when allowed again.
//   - auth_status: setStatus claude.auth while the CLI authenticates; its
//     error a notify error.
//   - status with a permissionMode: setStatus claude.permissionMode
//     (cleared for "default").
//   - model_refusal_fallback: notify warning; model_refusal_no_fallback:
//     notify error; each with the CLI's text.
//   - conversation_reset (/clear): notify info; the conversation starts
//     over from there ([Translator.Reset]: the bridge's session keeps only
//     what came after it).
//   - commands_changed: no frame; the bridge answers get_commands from it
//     ([Translator.TakeCommands]).
//   - task_updated: the sub-agent's subagent_progress (a new description,
//     or detached once it went to the background).
//   - background_tasks_changed: setStatus claude.backgroundTasks with the
//     background tasks running, cleared when none are.
//   - session_writes_lost: notify error.

// eventUIRequest is the type of the frames that ask the host's UI to show
// something (pi's extension_ui_request); the translator writes the CLI's
// notices as two of its methods.
const eventUIRequest = "extension_ui_request"

// Methods of a [Notice].
const (
	NoticeNotify    = "notify"
	NoticeSetStatus = "setStatus"
)

// Levels of a notify: its notifyType.
const (
	NotifyInfo    = "info"
	NotifyWarning = "warning"
	NotifyError   = "error"
)

// Notice is what an extension_ui_request of method notify or setStatus
// carries.
type Notice struct {
	// ID is the request's id: the bridge numbers them, with the other
	// extension_ui_requests it writes.
	ID string
	// Method is NoticeNotify or NoticeSetStatus.
	Method string
	// Message and NotifyType (info, warning, error) are a notify's.
	Message, NotifyType string
	// StatusKey and StatusText are a setStatus's (StatusText nil clears
	// the entry). On a notify, StatusKey names the setStatus just before
	// it that it goes with: the notify is worth writing only when that
	// status changed (the bridge drops it otherwise, as it drops a
	// setStatus that changes nothing).
	StatusKey  string
	StatusText *string
}

// NotifyEvent is a notify event.
func NotifyEvent(level, message string) Event {
	return Event{Type: eventUIRequest, Notice: &Notice{Method: NoticeNotify, NotifyType: level, Message: message}}
}

// StatusEvent is a setStatus event; text nil clears the entry.
func StatusEvent(key string, text *string) Event {
	return Event{Type: eventUIRequest, Notice: &Notice{Method: NoticeSetStatus, StatusKey: key, StatusText: text}}
}

// PermissionModeStatus is the setStatus entry of a permission mode: its
// name, cleared for the default one. The bridge shows a mode the host set
// with it too (the CLI's report of that is not passed on).
func PermissionModeStatus(mode string) Event {
	if mode == "default" || mode == "manual" || mode == "" {
		return StatusEvent(StatusPermissionMode, nil)
	}
	text := "permission mode: " + mode
	return StatusEvent(StatusPermissionMode, &text)
}

// Status keys of the entries the translator sets.
const (
	StatusHookPrefix      = "claude.hook."
	StatusRateLimit       = "claude.rateLimit"
	StatusAuth            = "claude.auth"
	StatusPermissionMode  = "claude.permissionMode"
	StatusBackgroundTasks = "claude.backgroundTasks"
)

// noticeText bounds the text of a notice taken from what a program
// printed (a hook's output).
const noticeText = 500

// denial is why the CLI refused a tool call (permission_denied), for the
// call's result.
type denial struct {
	Reason     string `json:"reason,omitempty"`
	ReasonType string `json:"reasonType,omitempty"`
}

// notice maps one of the CLI's notice and status lines (typ, or a system
// line's subtype) to its events; other lines give none.
func (t *Translator) notice(out []Event, typ string, v *object) []Event {
	if t.parent != "" {
		return out // a sub-agent's: the parent's translator shows the session's notices
	}
	switch typ {
	case "hook_started", "hook_progress":
		text := "hook " + v.Get("hook_name").String() + " running"
		if last := lastLine(v.Get("output").String()); typ == "hook_progress" && last != "" {
			text = "hook " + v.Get("hook_name").String() + ": " + last
		}
		return append(out, StatusEvent(StatusHookPrefix+v.Get("hook_id").String(), &text))
	case "hook_response":
		out = append(out, StatusEvent(StatusHookPrefix+v.Get("hook_id").String(), nil))
		if v.Get("outcome").String() != "error" {
			return out
		}
		msg := "hook " + v.Get("hook_name").String() + " failed"
		if c := v.Get("exit_code"); c.Exists() {
			msg += fmt.Sprintf(" (exit %d)", c.Int())
		}
		said := strings.TrimSpace(v.Get("stderr").String())
		if said == "" {
			said = strings.TrimSpace(v.Get("output").String())
		}
		if said != "" {
			msg += ": " + clip(said)
		}
		return append(out, NotifyEvent(NotifyWarning, msg))
	case "notification":
		level := NotifyInfo
		if p := v.Get("priority").String(); p == "high" || p == "immediate" {
			level = NotifyWarning
		}
		return appendNotify(out, level, v.Get("text").String())
	case "informational":
		switch v.Get("level").String() {
		case "warning":
			return appendNotify(out, NotifyWarning, v.Get("content").String())
		case "notice", "suggestion":
			return appendNotify(out, NotifyInfo, v.Get("content").String())
		}
	case "local_command_output":
		return appendNotify(out, NotifyInfo, v.Get("content").String())
	case "permission_denied":
		if id := v.Get("tool_use_id").String(); id != "" {
			if t.denied == nil {
				t.denied = map[string]denial{}
			}
			t.denied[id] = denial{Reason: v.Get("decision_reason").String(), ReasonType: v.Get("decision_reason_type").String()}
		}
	case "rate_limit_event":
		return rateLimit(out, v.Get("rate_limit_info"))
	case "auth_status":
		if e := v.Get("error").String(); e != "" {
			out = append(out, StatusEvent(StatusAuth, nil))
			return append(out, NotifyEvent(NotifyError, "Claude authentication failed: "+e))
		}
		if !v.Get("isAuthenticating").Bool() {
			return append(out, StatusEvent(StatusAuth, nil))
		}
		text := "authenticating"
		if lines := v.Get("output").Array(); len(lines) > 0 {
			text += ": " + clip(lastLine(lines[len(lines)-1].String()))
		}
		return append(out, StatusEvent(StatusAuth, &text))
	case "status":
		m := v.Get("permissionMode")
		if !m.Exists() {
			return out
		}
		return append(out, PermissionModeStatus(m.String()))
	case "model_refusal_fallback":
		msg := v.Get("content").String()
		if msg == "" {
			msg = "The model refused; " + v.Get("fallback_model").String() + " answered instead of " + v.Get("original_model").String()
		}
		return appendNotify(out, NotifyWarning, msg)
	case "model_refusal_no_fallback":
		msg := v.Get("content").String()
		if msg == "" {
			msg = "The model " + v.Get("original_model").String() + " refused, and no fallback model could answer"
		}
		return appendNotify(out, NotifyError, msg)
	case "conversation_reset":
		t.reset()
		return append(out, NotifyEvent(NotifyInfo, "The conversation was cleared: it starts over"))
	case "commands_changed":
		if c := v.Get("commands"); c.IsArray() {
			t.commands = json.RawMessage(c.Raw)
		}
	case "task_updated":
		return t.taskUpdated(out, v)
	case "background_tasks_changed":
		var names []string
		for _, task := range v.Get("tasks").Array() {
			if !task.Get("ambient").Bool() {
				names = append(names, cmp.Or(task.Get("description").String(), task.Get("task_type").String()))
			}
		}
		if len(names) == 0 {
			return append(out, StatusEvent(StatusBackgroundTasks, nil))
		}
		text := fmt.Sprintf("%d background tasks: %s", len(names), strings.Join(names, ", "))
		if len(names) == 1 {
			text = "1 background task: " + names[0]
		}
		return append(out, StatusEvent(StatusBackgroundTasks, &text))
	case "session_writes_lost":
		var lost []string
		for _, l := range v.Get("lost").Array() {
			lost = append(lost, l.String())
		}
		what := strings.Join(lost, " and ")
		if what == "" {
			what = "transcript"
		}
		return append(out, NotifyEvent(NotifyError, "Claude could not save its "+what+" ("+v.Get("error_code").String()+
			"): resuming this session in Claude may miss part of it"))
	}
	return out
}

// appendNotify appends a notify of text, if there is any.
func appendNotify(out []Event, level, text string) []Event {
	if strings.TrimSpace(text) == "" {
		return out
	}
	return append(out, NotifyEvent(level, text))
}

// rateLimit maps a rate_limit_event's rate_limit_info.
func rateLimit(out []Event, info gjson.Result) []Event {
	kind := strings.ReplaceAll(cmp.Or(info.Get("rateLimitType").String(), "usage"), "_", "-")
	resets := ""
	if at := info.Get("resetsAt").Int(); at > 0 {
		resets = "; resets " + time.Unix(at, 0).UTC().Format("2006-01-02 15:04 UTC")
	}
	var level, status, msg string
	switch info.Get("status").String() {
	case "allowed_warning":
		used := ""
		if u := info.Get("utilization"); u.Exists() {
			used = fmt.Sprintf("%.0f%% of ", u.Float()*100)
		}
		level, status = NotifyWarning, used+"the "+kind+" limit used"+resets
		msg = "Claude usage: " + status
	case "rejected":
		level, status = NotifyError, kind+" limit reached"+resets
		msg = "Claude usage: the " + status
	default: // allowed
		return append(out, StatusEvent(StatusRateLimit, nil))
	}
	n := NotifyEvent(level, msg)
	n.Notice.StatusKey = StatusRateLimit
	return append(out, StatusEvent(StatusRateLimit, &status), n)
}

// taskUpdated shows a task_updated patch of a sub-agent: a new
// description, or its move to the background. Its end comes with
// task_notification.
func (t *Translator) taskUpdated(out []Event, v *object) []Event {
	id := v.Get("task_id").String()
	for _, s := range t.subagents {
		if s.life.ID != id {
			continue
		}
		p := v.Get("patch")
		changed := false
		if d := p.Get("description").String(); d != "" && d != s.life.Description {
			s.life.Description, s.progress.Description = strings.Clone(d), strings.Clone(d)
			changed = true
		}
		if p.Get("is_backgrounded").Bool() && !s.life.Detached {
			s.life.Detached = true
			changed = true
		}
		if changed {
			out = append(out, s.progressEvent())
		}
		return out
	}
	return out
}

// reset notes that the CLI cleared the conversation (conversation_reset):
// the turn under way (the /clear and what the CLI answered) is the old
// conversation's last; the new one starts with the next turn.
func (t *Translator) reset() {
	t.resets++
	t.resetOpen = true
}

// Reset reports whether the CLI cleared the conversation during the run
// (/clear), and where, the last time: the run's messages from at on
// ([Translator.Messages]) are the new conversation's, from the turn after
// the clear's; the session's earlier ones are gone from the CLI's
// context. The run's events show them all, as the run made them.
func (t *Translator) Reset() (at int, ok bool) {
	if t.resetOpen {
		return len(t.messages), true
	}
	return t.resetAt, t.resets > 0
}

// Resets is how often the CLI cleared the conversation during the run.
// The new conversation of each starts at the next top-level turn_start
// the run shows (none: the run ended in the clear's turn).
func (t *Translator) Resets() int { return t.resets }

// TakeCommands returns the CLI's command list from the last
// commands_changed line (JSON: an array of the SDK's SlashCommand) since
// the last call, nil when none came.
func (t *Translator) TakeCommands() json.RawMessage {
	c := t.commands
	t.commands = nil
	return c
}

// lastLine is the last line of s that is not blank, trimmed.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return clip(s)
}

// clip bounds a text taken from a program's output to noticeText bytes,
// at a character's start.
func clip(s string) string {
	if len(s) <= noticeText {
		return s
	}
	i := noticeText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// deniedDetails are the details of a refused tool call's result.
func deniedDetails(d denial) json.RawMessage {
	b, err := marshalNoEscape(struct {
		PermissionDenied denial `json:"permissionDenied"`
	}{d})
	if err != nil {
		return nil // strings only: never
	}
	return b
}

// marshal writes the notice as its extension_ui_request.
func (n *Notice) marshal() ([]byte, error) {
	if n.Method == NoticeSetStatus {
		return marshalNoEscape(uiSetStatusJSON{eventUIRequest, n.ID, n.Method, n.StatusKey, n.StatusText})
	}
	return marshalNoEscape(uiNotifyJSON{eventUIRequest, n.ID, n.Method, n.Message, n.NotifyType})
}
