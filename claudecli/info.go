package claudecli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Info is what the CLI tells about itself in its answer to the control
// protocol's initialize request: the models it offers and its slash
// commands and skills.
type Info struct {
	Version  string
	Models   []ModelInfo
	Commands []CommandInfo
	// Model is the API model id the next turn runs (get_settings'
	// applied.model: after --model, the settings files and the
	// environment; the "default" entry of Models does not follow the
	// settings), and ContextWindow its context window (get_context_usage's
	// rawMaxTokens). Empty or 0 when the CLI did not say (an older CLI).
	Model         string
	ContextWindow int64
}

// modelRequests ask a CLI that has initialized which model it will run
// and that model's context window (checked on 2.1.328 against the fake
// API: neither calls the API nor writes a transcript; "summary" makes no
// token-count requests). See [Info.AddModel].
var modelRequests = []map[string]any{
	{"subtype": "get_settings"},
	{"subtype": "get_context_usage", "detail": "summary"},
}

// AddModel reads the answers to modelRequests (the "response" objects of
// their control_responses; an error answer is an empty result).
func (i *Info) AddModel(settings, usage gjson.Result) {
	i.Model = settings.Get("applied.model").String()
	if n := usage.Get("rawMaxTokens").Int(); n > 0 {
		i.ContextWindow = n
	} else {
		i.ContextWindow = usage.Get("maxTokens").Int()
	}
}

// ModelInfo is one model the CLI offers. Value is the name --model and
// set_model take (an alias such as "opus", or "default"); ResolvedModel is
// the API model id it stands for.
type ModelInfo struct {
	Value               string
	ResolvedModel       string
	DisplayName         string
	Description         string
	SupportsEffort      bool
	EffortLevels        []string
	SupportsThinkingOff bool
	SupportsFastMode    bool
}

// CommandInfo is one slash command or skill.
type CommandInfo struct {
	Name         string
	Description  string
	ArgumentHint string
	Builtin      bool // one of the CLI's own, not a user's or a plugin's
}

// parseInfo reads an initialize response (the "response" object of the
// control_response).
func parseInfo(r gjson.Result) Info {
	var info Info
	info.Version = r.Get("claude_code_version").String()
	for _, m := range r.Get("models").Array() {
		mi := ModelInfo{
			Value: m.Get("value").String(), ResolvedModel: m.Get("resolvedModel").String(),
			DisplayName: m.Get("displayName").String(), Description: m.Get("description").String(),
			SupportsEffort: m.Get("supportsEffort").Bool(), SupportsThinkingOff: m.Get("supportsThinkingOff").Bool(),
			SupportsFastMode: m.Get("supportsFastMode").Bool(),
		}
		for _, l := range m.Get("supportedEffortLevels").Array() {
			mi.EffortLevels = append(mi.EffortLevels, l.String())
		}
		if mi.Value != "" {
			info.Models = append(info.Models, mi)
		}
	}
	info.Commands = ParseCommands(r.Get("commands"))
	return info
}

// ParseCommands reads a list of the CLI's commands (the SDK's
// SlashCommand[]: an initialize response's commands, a commands_changed
// line's).
func ParseCommands(list gjson.Result) []CommandInfo {
	var cmds []CommandInfo
	for _, c := range list.Array() {
		if name := c.Get("name").String(); name != "" {
			cmds = append(cmds, CommandInfo{Name: name,
				Description: c.Get("description").String(), ArgumentHint: c.Get("argumentHint").String(), Builtin: c.Get("builtin").Bool()})
		}
	}
	return cmds
}

// Query starts the CLI with cfg, asks it to initialize and returns what it
// said, without running a turn (so without calling the API or writing a
// transcript). It takes about as long as the CLI's start-up, timeout at
// most; when ctx ends first, the CLI's process group is stopped and the
// error wraps ctx's cause.
func Query(ctx context.Context, cfg Config, timeout time.Duration) (Info, error) {
	c, err := startControl(ctx, cfg, append(cfg.TurnArgs(Session{}), "--no-session-persistence"))
	if err != nil {
		return Info{}, err
	}
	defer c.close()
	if err := c.send("info", map[string]any{"subtype": "initialize", "hooks": nil}); err != nil {
		return Info{}, err
	}
	// After initialize, modelRequests; their answers may be errors (an
	// older CLI), which leave Info's model empty.
	var info Info
	got := map[string]gjson.Result{}
	deadline := time.After(timeout)
	for len(got) < len(modelRequests) {
		a, ok, err := c.next(deadline, "initialize", timeout)
		switch id := a.Get("request_id").String(); {
		case err != nil:
			return Info{}, err
		case !ok:
			return Info{}, c.failed(errors.New("claude exited before answering initialize"))
		case id == "info" && a.Get("subtype").String() == "error":
			return Info{}, c.failed(fmt.Errorf("claude refused initialize: %s", a.Get("error").String()))
		case id == "info":
			info = parseInfo(a.Get("response"))
			for i, req := range modelRequests {
				if c.send(fmt.Sprint("model", i), req) != nil {
					got[fmt.Sprint("model", i)] = gjson.Result{}
				}
			}
		case strings.HasPrefix(id, "model"):
			got[id] = a.Get("response")
		}
	}
	info.AddModel(got["model0"], got["model1"])
	return info, nil
}
