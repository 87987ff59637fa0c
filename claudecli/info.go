package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
)

// Info is what the CLI tells about itself in its answer to the control
// protocol's initialize request: the models it offers and its slash
// commands and skills.
type Info struct {
	Version  string
	Models   []ModelInfo
	Commands []CommandInfo
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

// InfoSource is a transport whose running CLI process has told what it
// offers (the stream transport): asking it costs no process of its own.
type InfoSource interface {
	LiveInfo(ctx context.Context) (Info, bool)
}

// ParseInfo reads an initialize response (the "response" object of the
// control_response).
func ParseInfo(r gjson.Result) Info {
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
	for _, c := range r.Get("commands").Array() {
		if name := c.Get("name").String(); name != "" {
			info.Commands = append(info.Commands, CommandInfo{Name: name,
				Description: c.Get("description").String(), ArgumentHint: c.Get("argumentHint").String(), Builtin: c.Get("builtin").Bool()})
		}
	}
	return info
}

// Query starts the CLI with cfg, asks it to initialize and returns what it
// said, without running a turn (so without calling the API or writing a
// transcript). It takes about as long as the CLI's start-up.
func Query(cfg Config, timeout time.Duration) (Info, error) {
	args := cfg.TurnArgs(Session{})
	args = append(args, "--no-session-persistence")
	p, stdin, err := startPiped(cfg, args)
	if err != nil {
		return Info{}, err
	}
	defer func() {
		_ = stdin.Close() // the CLI exits when its input ends
		waitOrStop(p, 2*time.Second)
	}()
	req, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": "info",
		"request": map[string]any{"subtype": "initialize", "hooks": nil}})
	if _, err := stdin.Write(append(req, '\n')); err != nil {
		return Info{}, fmt.Errorf("asking claude to initialize: %w (%s)", err, p.Exit())
	}
	type answer struct {
		r   gjson.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		// Reads to the end, so the CLI never blocks on a full pipe while
		// it exits.
		answered := false
		lr := jsonl.NewReader(p.Stdout(), 64<<20)
		for {
			line, err := lr.Next()
			if errors.Is(err, jsonl.ErrLineTooLong) {
				continue
			}
			if err != nil {
				if !answered {
					ch <- answer{err: fmt.Errorf("claude exited before answering initialize")}
				}
				return
			}
			v := gjson.ParseBytes(line)
			if answered || v.Get("type").String() != "control_response" || v.Get("response.request_id").String() != "info" {
				continue
			}
			answered = true
			if v.Get("response.subtype").String() == "error" {
				ch <- answer{err: fmt.Errorf("claude refused initialize: %s", v.Get("response.error").String())}
			} else {
				ch <- answer{r: v.Get("response.response")}
			}
			_ = stdin.Close()
		}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			<-p.Done()
			return Info{}, fmt.Errorf("%w: %w", a.err, p.Exit())
		}
		return ParseInfo(a.r), nil
	case <-time.After(timeout):
		p.Stop()
		return Info{}, fmt.Errorf("claude did not answer initialize within %v", timeout)
	}
}
