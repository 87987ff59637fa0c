package hostlink

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Permission answers offered to the host.
const (
	allowOnce   = "Allow once"
	allowAlways = "Allow always"
	deny        = "Deny"
)

// CanUseTool answers the CLI's can_use_tool request r: AskUserQuestion's
// questions put to the host, a tool of the host's (or of a server of
// Config.OwnServers) allowed, any other tool asked of the host (Allow
// once, Allow always when the CLI suggests a rule, Deny), or refused with
// --ask=false.
func (h *Link) CanUseTool(ctx context.Context, r gjson.Result) (any, error) {
	name := r.Get("tool_name").String()
	input := json.RawMessage(r.Get("input").Raw)
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	switch {
	case name == "AskUserQuestion":
		return h.askQuestions(ctx, r.Get("input"))
	case h.defined(name):
		return allowInput(input), nil // the host (or its extension) defined the tool: its call is its consent
	case !h.cfg.AskOn():
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
	answer, ok := h.Ask(ctx, Select("Allow "+title+"?", describeToolUse(name, r), options))
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

// defined is whether the CLI's tool name is one of a server the bridge
// serves: the host's, or one of Config.OwnServers.
func (h *Link) defined(name string) bool {
	if strings.HasPrefix(name, "mcp__"+Server+"__") {
		return true
	}
	return slices.ContainsFunc(h.cfg.OwnServers, func(server string) bool { return strings.HasPrefix(name, "mcp__"+server+"__") })
}

func allowInput(input json.RawMessage) map[string]any {
	return map[string]any{"behavior": "allow", "updatedInput": input}
}

func denial(msg string) map[string]any { return map[string]any{"behavior": "deny", "message": msg} }

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
func (h *Link) askQuestions(ctx context.Context, in gjson.Result) (any, error) {
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
		req := Select(title, text, labels)
		if q.Get("multiSelect").Bool() || len(labels) == 0 {
			req = Input(title, text, strings.Join(labels, ", "))
		}
		answer, ok := h.Ask(ctx, req)
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
