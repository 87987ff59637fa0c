package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// thinkingLevels are pi's levels, in cycle order.
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// effortOf maps pi's thinking levels to the CLI's effort levels (low,
// medium, high, xhigh, max on 2.1.328). Current Claude models think
// adaptively and cannot turn thinking off (the CLI reports
// supportsThinkingOff false for each), so "off" and "minimal" ask for the
// least effort.
var effortOf = map[string]string{"off": "low", "minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"}

// defaultThinkingLevel is what the CLI runs with when no level was set: its
// default effort, medium.
const defaultThinkingLevel = "medium"

// levelLocked is the level get_state reports. Called with st.mu held.
func (ls *lockedState) levelLocked() string {
	if ls.settings.thinkingLevel == "" {
		return defaultThinkingLevel
	}
	return ls.settings.thinkingLevel
}

func (s *server) setThinkingLevel(c *call) (any, error) {
	level := c.str("level")
	if !slices.Contains(thinkingLevels, level) {
		return nil, fmt.Errorf("%s: level must be one of %s, got %q", c.typ, strings.Join(thinkingLevels, ", "), level)
	}
	s.setLevel(level)
	return nil, nil
}

// setLevel makes level the thinking level and, when it changed, says so
// (thinking_level_changed, before the command's answer).
func (s *server) setLevel(level string) {
	before := s.st.thinkingLevel()
	s.applySettings(func(st *cliSettings) { st.thinkingLevel = level })
	if level != before {
		s.st.noteLevelChange(level)
		s.out.Send(thinkingLevelChangedJSON{Type: "thinking_level_changed", Level: level})
		s.extEvent("thinking_level_select", map[string]any{"level": level, "previousLevel": before})
	}
}

// getThinkingLevels answers pi's levels that the current model has: those
// whose effort level the CLI lists for it (all, when it lists none).
func (s *server) getThinkingLevels(c *call) (any, error) {
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	m, ok := findModel(info, s.st.modelName())
	levels := []string{}
	for _, l := range thinkingLevels {
		if !ok || len(m.EffortLevels) == 0 || slices.Contains(m.EffortLevels, effortOf[l]) {
			levels = append(levels, l)
		}
	}
	return thinkingLevelsData{Levels: levels}, nil
}

func (s *server) cycleThinkingLevel(*call) (any, error) {
	i := slices.Index(thinkingLevels, s.st.thinkingLevel())
	next := thinkingLevels[(i+1)%len(thinkingLevels)]
	s.setLevel(next)
	return levelData{Level: next}, nil
}

// infoKeeper is what the CLI says about itself (models, commands): the
// running CLI's initialize answer when the transport has one; else one
// query process, shared by the calls that ask while it runs, and kept once
// it answered (a failure is asked again next time); until either, what
// the CLI said last time (the info cache). Its mutex is taken only by its
// methods below, which call nothing else.
type infoKeeper struct {
	mu       sync.Mutex
	got      *claudecli.Info
	cached   *claudecli.Info // from the info cache, read at start
	savedAt  time.Time       // when the CLI told cached
	inflight chan struct{}   // closed when the running query ends
	err      error           // the last query's failure
	// sentCommands is the JSON of the commands available_commands_update
	// last sent.
	sentCommands string
	// listed are the commands the running CLI listed last when they
	// changed (commands_changed: a skill or command file added or removed
	// mid-session), nil until it did: they replace any answer's.
	listed []claudecli.CommandInfo
}

// list keeps the commands the CLI listed in commands_changed.
func (k *infoKeeper) list(cmds []claudecli.CommandInfo) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.listed = append([]claudecli.CommandInfo{}, cmds...)
}

// withListed is info with the commands the CLI listed last, if it listed
// any since.
func (k *infoKeeper) withListed(info claudecli.Info) claudecli.Info {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.listed != nil {
		info.Commands = k.listed
	}
	return info
}

// infoTimeout bounds one query of the CLI's models and commands.
const infoTimeout = 30 * time.Second

// knownInfo is what the CLI said about itself, if it has already said it
// (in this run, else last time): it never waits.
func (s *server) knownInfo() (claudecli.Info, bool) {
	if live := s.capsNow().LiveInfo; live != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if info, ok := live(ctx); ok {
			return s.info.withListed(info), true
		}
	}
	info, ok := s.info.known()
	return s.info.withListed(info), ok
}

// commandsListed follows the CLI's commands_changed: get_commands and
// get_available_commands answer cmds from now on, and the host is told
// (available_commands_update).
func (s *server) commandsListed(cmds []claudecli.CommandInfo) {
	s.info.list(cmds)
	if info, ok := s.knownInfo(); ok {
		s.sendCommands(info)
	}
}

// known is what the CLI answered, else what the info cache says, if
// either.
func (k *infoKeeper) known() (claudecli.Info, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.got != nil:
		return *k.got, true
	case k.cached != nil:
		return *k.cached, true
	}
	return claudecli.Info{}, false
}

// answered is what a query process answered, if one did.
func (k *infoKeeper) answered() (claudecli.Info, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.got == nil {
		return claudecli.Info{}, false
	}
	return *k.got, true
}

// setCached keeps what the info cache says the CLI said at savedAt.
func (k *infoKeeper) setCached(info *claudecli.Info, savedAt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cached, k.savedAt = info, savedAt
}

// cachedAt reports whether the answers so far come from the info cache,
// and when the CLI told them.
func (k *infoKeeper) cachedAt() (bool, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cached != nil, k.savedAt
}

// commandsChanged keeps cmds (JSON) as the commands last sent, and
// reports whether they differ from those sent before.
func (k *infoKeeper) commandsChanged(cmds string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	same := cmds == k.sentCommands
	k.sentCommands = cmds
	return !same
}

// joinQuery is the running query's end (closed when it ends), a new one
// when none runs: then first is true and the caller runs it, and calls
// queried with its answer before closing wait.
func (k *infoKeeper) joinQuery() (wait chan struct{}, first bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inflight == nil {
		k.inflight, first = make(chan struct{}), true
	}
	return k.inflight, first
}

// queried keeps a query's answer (kept) or failure (asked again next
// time).
func (k *infoKeeper) queried(got claudecli.Info, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.inflight, k.err = nil, err
	if err == nil {
		k.got = &got
	}
}

// queryResult is the last query's answer, else its failure.
func (k *infoKeeper) queryResult() (claudecli.Info, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.got != nil && k.err == nil {
		return *k.got, nil
	}
	return claudecli.Info{}, fmt.Errorf("asking claude for its models and commands: %w", k.err)
}

// cliInfo returns what the CLI says about itself: what it said already
// (knownInfo), else its answer, which waits for the CLI's plan and start,
// or until ctx ends (then ctx's cause, wrapped).
func (s *server) cliInfo(ctx context.Context) (claudecli.Info, error) {
	if info, ok := s.knownInfo(); ok {
		return info, nil
	}
	t, err := s.transportCtx(ctx)
	if err != nil {
		return claudecli.Info{}, fmt.Errorf("asking claude for its models and commands: %w", err)
	}
	if live := t.Caps().LiveInfo; live != nil {
		ctx, cancel := context.WithTimeout(ctx, infoTimeout)
		info, ok := live(ctx)
		cancel()
		if ok {
			return s.info.withListed(info), nil
		}
	}
	if got, ok := s.info.answered(); ok {
		return s.info.withListed(got), nil
	}
	info, err := s.queryInfo(ctx)
	return s.info.withListed(info), err
}

// queryInfo asks a query process (one at a time: concurrent calls share
// it) and keeps its answer, in infoKeeper and the info cache. The caller
// waits until it answers or ctx ends; the process lives on the server's
// context (ended at shutdown, which waits for it).
func (s *server) queryInfo(ctx context.Context) (claudecli.Info, error) {
	wait, first := s.info.joinQuery()
	if first {
		started := s.goes.start(func() {
			got, err := s.opts.query(s.ctx, s.opts.CLI, infoTimeout)
			s.info.queried(got, err)
			if err == nil {
				s.saveCache(&got)
			}
			close(wait)
		})
		if !started { // shutting down: the callers sharing it are answered so
			s.info.queried(claudecli.Info{}, errShutdown)
			close(wait)
		}
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return claudecli.Info{}, fmt.Errorf("asking claude for its models and commands: %w", context.Cause(ctx))
	}
	return s.info.queryResult()
}

// modelsLocked lists the CLI's models as pi's Models, one per model id:
// the CLI's "default" entry names the same model as one of its aliases,
// whose display name ("Opus") reads better than "Default (recommended)".
// Called with st.mu held.
func (ls *lockedState) modelsLocked(info claudecli.Info) []modelInfo {
	ls.noteLimits(info)
	var out []modelInfo
	at := map[string]int{}           // model id → index in out
	fromDefault := map[string]bool{} // the entry came from "default"
	for _, m := range info.Models {
		id := m.ResolvedModel
		if id == "" {
			id = m.Value
		}
		mi := ls.describeModel(id)
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

// priceOf reads a model's input and output price from its description
// ("… $4/$20 per Mtok"); the CLI does not tell cache prices. A scan, not a
// regexp: get_state describes every model each time it is asked, and hosts
// poll it.
func priceOf(desc string) modelCost {
	for rest := desc; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			return modelCost{}
		}
		rest = rest[i+1:]
		in, tail := leadingNumber(rest)
		if in == "" || !strings.HasPrefix(tail, "/$") {
			continue
		}
		out, tail := leadingNumber(tail[2:])
		if out == "" || !strings.HasPrefix(tail, " per Mtok") {
			continue
		}
		inPrice, _ := strconv.ParseFloat(in, 64)
		outPrice, _ := strconv.ParseFloat(out, 64)
		return modelCost{Input: inPrice, Output: outPrice}
	}
}

// leadingNumber splits s after its leading digits and dots.
func leadingNumber(s string) (num, rest string) {
	n := 0
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
		n++
	}
	return s[:n], s[n:]
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

func (s *server) getAvailableModels(c *call) (any, error) {
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	return modelsData{Models: s.st.models(info)}, nil
}

func (s *server) setModel(c *call) (any, error) {
	provider, id := c.str("provider"), c.str("modelId")
	if provider != transform.Provider {
		return nil, fmt.Errorf("%s: claude-rpc runs Claude models only: provider must be %q, got %q", c.typ, transform.Provider, provider)
	}
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	m, ok := findModel(info, id)
	if !ok {
		var known []string
		for _, mi := range s.st.models(info) {
			known = append(known, mi.ID)
		}
		return nil, fmt.Errorf("Model not found: %s/%s (known: %s)", provider, id, strings.Join(known, ", "))
	}
	return s.switchModel(info, m, "set"), nil
}

// switchModel makes m the model of the next turns and describes it; the
// extensions hear it (model_select, source: pi's set or cycle).
func (s *server) switchModel(info claudecli.Info, m claudecli.ModelInfo, source string) modelInfo {
	id := m.ResolvedModel
	if id == "" {
		id = m.Value
	}
	s.applySettings(func(st *cliSettings) { st.model = m.Value })
	now, previous := s.st.useModel(info, id)
	if previous == nil || previous.ID != now.ID {
		s.extEvent("model_select", map[string]any{"model": now, "previousModel": previous, "source": source})
	}
	return now
}

// modelByID is model id as get_available_models lists it (display name,
// price), or as far as the bridge knows it when the CLI does not list it.
// Called with st.mu held.
func (ls *lockedState) modelByID(info claudecli.Info, id string) modelInfo {
	for _, mi := range ls.modelsLocked(info) {
		if mi.ID == id {
			return mi
		}
	}
	return ls.describeModel(id)
}

// cycleModel answers no data (null) when there is nothing to cycle.
func (s *server) cycleModel(c *call) (any, error) {
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	models := s.st.models(info)
	if len(models) < 2 {
		return json.RawMessage("null"), nil // pi 1.5 answers data: null
	}
	cur := s.st.cliModel()
	i := slices.IndexFunc(models, func(m modelInfo) bool { return m.ID == cur })
	next, _ := findModel(info, models[(i+1)%len(models)].ID)
	mi := s.switchModel(info, next, "cycle")
	level := s.st.thinkingLevel()
	return cycleModelData{Model: mi, ThinkingLevel: level, IsScoped: false}, nil
}

// getCommands lists the CLI's slash commands and skills. A prompt
// "/name args" runs one. pi's sources are extension, prompt and skill; the
// CLI does not say which of its commands are skills, so all are "prompt".
func (s *server) getCommands(c *call) (any, error) {
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	where := s.commandFiles() // sources.go
	// The extensions' first, as pi lists them: once loaded (pi loads them
	// before it reads a command).
	s.extLoaded(c.Context())
	cmds := append(make([]slashCommand, 0, len(info.Commands)), s.extCommands()...)
	for _, ci := range info.Commands {
		si, source := where.of(ci)
		cmds = append(cmds, slashCommand{Name: ci.Name, Description: ci.Description, Source: source,
			SourceInfo: si, ArgumentHint: ci.ArgumentHint})
	}
	return commandsData{Commands: cmds}, nil
}

// setAutoRetry and setAutoCompaction change the CLI's environment from the
// next turn on.
func (s *server) setAutoRetry(c *call) (any, error) {
	on := c.raw.Get("enabled").Bool()
	s.applySettings(func(st *cliSettings) { st.noRetry = !on })
	return nil, nil
}

func (s *server) setAutoCompaction(c *call) (any, error) {
	on := c.raw.Get("enabled").Bool()
	s.applySettings(func(st *cliSettings) { st.noAutoCompact = !on })
	return nil, nil
}

// getAvailableCommands lists the CLI's commands in omp's shape.
func (s *server) getAvailableCommands(c *call) (any, error) {
	info, err := s.cliInfo(c.Context())
	if err != nil {
		return nil, err
	}
	return availableCommandsData{Commands: availableCommands(info)}, nil
}

// availableCommands are the CLI's commands in omp's shape.
func availableCommands(info claudecli.Info) []availableCommand {
	out := []availableCommand{}
	for _, ci := range info.Commands {
		ac := availableCommand{Name: ci.Name, Description: ci.Description, Source: "custom"}
		if ci.Builtin {
			ac.Source = "builtin"
		}
		if ci.ArgumentHint != "" {
			ac.Input = &commandInput{Hint: ci.ArgumentHint}
		}
		out = append(out, ac)
	}
	return out
}

// getLoginProviders answers the CLI's one way of logging in, and whether
// it looks logged in: an API key in its environment, or stored
// credentials.
func (s *server) getLoginProviders(*call) (any, error) {
	authed := false
	for _, kv := range s.opts.CLI.Environ() {
		if k, v, _ := strings.Cut(kv, "="); (k == "ANTHROPIC_API_KEY" || k == "ANTHROPIC_AUTH_TOKEN" || k == "CLAUDE_CODE_OAUTH_TOKEN") && v != "" {
			authed = true
		}
	}
	if _, err := os.Stat(filepath.Join(s.configDir, ".credentials.json")); err == nil {
		authed = true
	}
	return loginProvidersData{Providers: []loginProvider{{ID: transform.Provider, Name: "Claude (the Claude CLI's own login)", Available: true, Authenticated: authed}}}, nil
}

// setFastMode turns the CLI's fast mode on or off. Turning it on needs a
// model the CLI says has it (its models' supportsFastMode).
func (s *server) setFastMode(c *call) (any, error) {
	on := c.raw.Get("enabled").Bool()
	if on {
		info, err := s.cliInfo(c.Context())
		if err != nil {
			return nil, err
		}
		if m, ok := findModel(info, s.st.modelName()); ok && !m.SupportsFastMode {
			return nil, errors.New("Fast mode is unavailable for the current model.")
		}
	}
	s.applySettings(func(st *cliSettings) { st.fastMode = on })
	return fastModeData{Enabled: on, Active: on && s.st.fastModeActive()}, nil
}
