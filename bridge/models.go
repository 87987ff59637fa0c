package bridge

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// cliSettings are what the host changed about how the CLI runs. Each
// setter updates them and hands the transport the resulting config, which
// takes effect from the next turn.
type cliSettings struct {
	model         string // --model / set_model: an alias or a model id; "" for the CLI's default
	thinkingLevel string // pi's level; "" for the CLI's default
	noRetry       bool   // set_auto_retry false: CLAUDE_CODE_MAX_RETRIES=0
	noAutoCompact bool   // set_auto_compaction false: DISABLE_AUTO_COMPACT=1
	hostTools     []hostTool
}

// cliConfig is the CLI's config with the host's settings. Called with s.mu
// held.
func (s *server) cliConfig() claudecli.Config {
	cfg := s.opts.CLI
	if s.settings.model != "" {
		cfg.Model = s.settings.model
	}
	cfg.Effort = effortOf[s.settings.thinkingLevel]
	cfg.Host, cfg.AskPermissions = s.hostRequest, s.opts.Ask
	if len(s.settings.hostTools) > 0 {
		cfg.SDKServers = []string{hostServer}
	}
	base := cfg.Environ() // once: on Windows it looks for Git Bash
	var env []string
	if !slices.ContainsFunc(base, func(kv string) bool { return strings.HasPrefix(kv, todoToolsEnv+"=") }) {
		env = append(env, todoToolsEnv+"=1")
	}
	if s.settings.noRetry {
		env = append(env, "CLAUDE_CODE_MAX_RETRIES=0")
	}
	if s.settings.noAutoCompact {
		env = append(env, "DISABLE_AUTO_COMPACT=1")
	}
	if env != nil {
		cfg.Env = append(base, env...) // the last value of a key wins
	}
	return cfg
}

// applySettings changes the settings with f and passes the new config on.
func (s *server) applySettings(f func(*cliSettings)) {
	s.mu.Lock()
	f(&s.settings)
	cfg := s.cliConfig()
	s.mu.Unlock()
	s.transport.SetConfig(cfg)
}

// thinkingLevels are pi's levels, in cycle order.
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// effortOf maps pi's thinking levels to the CLI's effort levels (low,
// medium, high, xhigh, max on 2.1.328). Current Claude models think
// adaptively and cannot turn thinking off (the CLI reports
// supportsThinkingOff false for each), so "off" and "minimal" ask for the
// least effort.
var effortOf = map[string]string{"off": "low", "minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}

// defaultThinkingLevel is what the CLI runs with when no level was set: its
// default effort, medium.
const defaultThinkingLevel = "medium"

// thinkingLevel is the level get_state reports. Called with s.mu held.
func (s *server) thinkingLevel() string {
	if s.settings.thinkingLevel == "" {
		return defaultThinkingLevel
	}
	return s.settings.thinkingLevel
}

func (s *server) setThinkingLevel(c command) {
	level, err := c.str("level")
	if err == nil && !slices.Contains(thinkingLevels, level) {
		err = fmt.Errorf("%s: level must be one of %s, got %q", c.typ, strings.Join(thinkingLevels, ", "), level)
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.applySettings(func(st *cliSettings) { st.thinkingLevel = level })
	s.w.send(okResponse(c.id, c.typ, nil))
}

func (s *server) cycleThinkingLevel(c command) {
	s.mu.Lock()
	i := slices.Index(thinkingLevels, s.thinkingLevel())
	s.mu.Unlock()
	next := thinkingLevels[(i+1)%len(thinkingLevels)]
	s.applySettings(func(st *cliSettings) { st.thinkingLevel = next })
	s.w.send(okResponse(c.id, c.typ, map[string]string{"level": next}))
}

// cliInfo returns what the CLI says about itself, asked once (a CLI process
// that only initializes) and kept; a failure is asked again next time.
func (s *server) cliInfo() (claudecli.Info, error) {
	s.mu.Lock()
	info := s.info
	s.mu.Unlock()
	if info != nil {
		return *info, nil
	}
	got, err := claudecli.Query(s.opts.CLI, 30*time.Second)
	if err != nil {
		return claudecli.Info{}, fmt.Errorf("asking claude for its models and commands: %w", err)
	}
	s.mu.Lock()
	s.info = &got
	s.mu.Unlock()
	return got, nil
}

// models lists the CLI's models as pi's Models, one per model id: the
// CLI's "default" entry names the same model as one of its aliases, whose
// display name ("Opus") reads better than "Default (recommended)".
func (s *server) models(info claudecli.Info) []modelInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []modelInfo
	at := map[string]int{}           // model id → index in out
	fromDefault := map[string]bool{} // the entry came from "default"
	for _, m := range info.Models {
		id := m.ResolvedModel
		if id == "" {
			id = m.Value
		}
		mi := s.describeModel(id)
		mi.Name, mi.Cost = m.DisplayName, priceOf(m.Description)
		i, ok := at[id]
		switch {
		case !ok:
			at[id] = len(out)
			fromDefault[id] = m.Value == "default"
			out = append(out, mi)
		case fromDefault[id]:
			out[i], fromDefault[id] = mi, false
		}
	}
	return out
}

// priceRe finds the price in a CLI model description: "$4/$20 per Mtok".
var priceRe = regexp.MustCompile(`\$([0-9.]+)/\$([0-9.]+) per Mtok`)

// priceOf reads a model's input and output price from its description;
// the CLI does not tell cache prices.
func priceOf(desc string) modelCost {
	m := priceRe.FindStringSubmatch(desc)
	if m == nil {
		return modelCost{}
	}
	in, _ := strconv.ParseFloat(m[1], 64)
	out, _ := strconv.ParseFloat(m[2], 64)
	return modelCost{Input: in, Output: out}
}

// findModel finds the CLI model the host named, by alias or model id.
func findModel(info claudecli.Info, name string) (claudecli.ModelInfo, bool) {
	for _, m := range info.Models {
		if m.Value == name || m.ResolvedModel == name {
			return m, true
		}
	}
	return claudecli.ModelInfo{}, false
}

func (s *server) getAvailableModels(c command) {
	info, err := s.cliInfo()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.w.send(okResponse(c.id, c.typ, map[string]any{"models": s.models(info)}))
}

func (s *server) setModel(c command) {
	provider, err := c.str("provider")
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	id, err := c.str("modelId")
	if err == nil && provider != transform.Provider {
		err = fmt.Errorf("%s: claude-rpc runs Claude models only: provider must be %q, got %q", c.typ, transform.Provider, provider)
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	info, err := s.cliInfo()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	m, ok := findModel(info, id)
	if !ok {
		var known []string
		for _, mi := range s.models(info) {
			known = append(known, mi.ID)
		}
		s.w.send(errResponse(c.id, c.typ, fmt.Sprintf("Model not found: %s/%s (known: %s)", provider, id, strings.Join(known, ", "))))
		return
	}
	s.w.send(okResponse(c.id, c.typ, s.switchModel(info, m)))
}

// switchModel makes m the model of the next turns and describes it.
func (s *server) switchModel(info claudecli.Info, m claudecli.ModelInfo) modelInfo {
	id := m.ResolvedModel
	if id == "" {
		id = m.Value
	}
	s.applySettings(func(st *cliSettings) { st.model = m.Value })
	s.mu.Lock()
	s.model = id
	s.mu.Unlock()
	for _, mi := range s.models(info) {
		if mi.ID == id {
			return mi
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.describeModel(id)
}

func (s *server) cycleModel(c command) {
	info, err := s.cliInfo()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	models := s.models(info)
	if len(models) < 2 {
		s.w.send(okResponse(c.id, c.typ, nil))
		return
	}
	s.mu.Lock()
	cur := s.model
	s.mu.Unlock()
	i := slices.IndexFunc(models, func(m modelInfo) bool { return m.ID == cur })
	next, _ := findModel(info, models[(i+1)%len(models)].ID)
	mi := s.switchModel(info, next)
	s.mu.Lock()
	level := s.thinkingLevel()
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"model": mi, "thinkingLevel": level, "isScoped": false}))
}

// slashCommand is pi's RpcSlashCommand; argumentHint is the CLI's.
type slashCommand struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	Source       string `json:"source"`
	ArgumentHint string `json:"argumentHint,omitempty"`
}

// getCommands lists the CLI's slash commands and skills. A prompt
// "/name args" runs one. pi's sources are extension, prompt and skill; the
// CLI does not say which of its commands are skills, so all are "prompt".
func (s *server) getCommands(c command) {
	info, err := s.cliInfo()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	cmds := make([]slashCommand, 0, len(info.Commands))
	for _, ci := range info.Commands {
		cmds = append(cmds, slashCommand{Name: ci.Name, Description: ci.Description, Source: "prompt", ArgumentHint: ci.ArgumentHint})
	}
	s.w.send(okResponse(c.id, c.typ, map[string]any{"commands": cmds}))
}

// setFlag handles set_auto_retry and set_auto_compaction: a boolean
// "enabled" that changes the CLI's environment from the next turn on.
func (s *server) setFlag(c command, set func(*cliSettings, bool)) {
	v := c.raw.Get("enabled")
	if !v.IsBool() {
		s.w.send(errResponse(c.id, c.typ, fmt.Sprintf("%s: field \"enabled\" must be a boolean, got %s", c.typ, jsonKind(v))))
		return
	}
	s.applySettings(func(st *cliSettings) { set(st, v.Bool()) })
	s.w.send(okResponse(c.id, c.typ, nil))
}
