package bridge

import (
	"encoding/base64"
	"encoding/json"

	"errors"
	"fmt"
	"github.com/tidwall/gjson"
	"slices"
	"strings"
	"sync"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// state is the session the bridge works on and the host's settings. Its
// mutex guards short sections only: no I/O, no frames written, nothing
// that waits. The runner's mutex may be held while taking it.
type state struct {
	mu sync.Mutex
	// gen counts session switches: a run remembers the generation it
	// started in, and what it learned is kept only if it still matches
	// (a run ended by new_session does not write into the new session).
	gen uint64
	// sessionID is the CLI session the next prompt works on. The bridge
	// chooses it (as pi has a session id from the start) and passes it
	// with --session-id until the session exists, then --resume.
	sessionID   string
	sessionName string
	sessionFile string // the transcript, when the session came from a path
	fork        *fork  // the session is a copy the CLI makes at the next turn
	messages    []transform.Message
	model       string // the model the CLI reported, else the one asked for
	// limits are the models' context window and output cap as the CLI
	// reported them for a turn (this run's, or earlier runs' from the
	// info cache), by API model id.
	limits      map[string]transform.Limits
	fastMode    string // the CLI's fast mode state, once a turn reported it
	settings    cliSettings
	interrupt   string      // omp's interrupt mode: stored and reported
	todos       todoState   // the todo list (todoPhases)
	bashContext []string    // bash executions for the next prompt's context
	entries     []entryJSON // pi's session entries (entries.go)
	// compacted: the context was compacted and no run since has told its
	// size.
	compacted bool
}

func newState(model string) *state {
	st := &state{sessionID: sessions.NewID(), model: model, interrupt: "immediate", limits: map[string]transform.Limits{}}
	st.startEntries()
	return st
}

// cliSettings are what the host changed about how the CLI runs. Each
// setter updates them and hands the transport the resulting config, which
// takes effect from the next turn.
type cliSettings struct {
	model         string // --model / set_model: an alias or a model id; "" for the CLI's default
	thinkingLevel string // pi's level; "" for the CLI's default
	noRetry       bool   // set_auto_retry false: CLAUDE_CODE_MAX_RETRIES=0
	noAutoCompact bool   // set_auto_compaction false: DISABLE_AUTO_COMPACT=1
	fastMode      bool   // set_fast_mode: the CLI's fastMode setting
	hostTools     []hostTool
	hostURIs      []hostURIScheme // set_host_uri_schemes (hosturis.go)
}

// cliConfig is the CLI's config with the host's settings.
func (s *server) cliConfig() claudecli.Config {
	s.st.mu.Lock()
	set := s.st.settings
	s.st.mu.Unlock()
	cfg := s.opts.CLI
	if set.model != "" {
		cfg.Model = set.model
	}
	cfg.Effort = effortOf[set.thinkingLevel]
	cfg.FastMode = set.fastMode
	cfg.Host, cfg.AskPermissions = s.hostRequest, s.askOn()
	if len(set.hostTools) > 0 || len(set.hostURIs) > 0 {
		cfg.SDKServers = []string{hostServer}
	}
	base := cfg.Environ() // once: on Windows it looks for Git Bash
	var env []string
	if !slices.ContainsFunc(base, func(kv string) bool { return strings.HasPrefix(kv, todoToolsEnv+"=") }) {
		env = append(env, todoToolsEnv+"=1")
	}
	if set.noRetry {
		env = append(env, "CLAUDE_CODE_MAX_RETRIES=0")
	}
	if set.noAutoCompact {
		env = append(env, "DISABLE_AUTO_COMPACT=1")
	}
	if env != nil {
		cfg.Env = append(base, env...) // the last value of a key wins
	}
	return cfg
}

// applySettings changes the settings with f and passes the new config on.
// Calls that change settings write resConfig, so they run one at a time,
// in the order sent.
func (s *server) applySettings(f func(*cliSettings)) {
	s.st.mu.Lock()
	f(&s.st.settings)
	s.st.mu.Unlock()
	s.passConfig()
	s.prewarm() // a change that needs a new process gets it now
}

// cliSession is the CLI session the next turn works on: resumed when the
// CLI has written its transcript, else created with its id (also after a
// first turn killed before it wrote anything). The second result is the
// session's generation.
func (s *server) cliSession() (claudecli.Session, uint64) {
	if quiesce := s.capsNow().Quiesce; quiesce != nil {
		// A per-turn CLI writes its transcript as it exits, possibly
		// after its result: decide resume or create once it has. (No
		// transport yet: no CLI ever ran.)
		quiesce()
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	st := s.st
	ses := claudecli.Session{ID: st.sessionID, Exists: sessions.Exists(s.configDir, s.cwd, st.sessionID), Name: st.sessionName}
	switch {
	case ses.Exists:
		st.fork = nil // made: from now on it is resumed
	case st.fork != nil:
		ses.ForkFrom, ses.ResumeAt = st.fork.from, st.fork.at
	}
	return ses, st.gen
}

// use makes l the session in use: a new generation, so a run of the old
// one keeps what it learns to itself. Called with st.mu held.
func (st *state) use(l *loaded) {
	st.gen++
	st.sessionID, st.sessionFile, st.sessionName = l.id, l.path, l.name
	st.messages = l.messages
	st.fork, st.todos = nil, todoState{}
	st.bashContext = nil
	st.startEntries()
}

// learn keeps what a run's translator learned, if the run belongs to the
// session in use.
// current reports whether gen is the session generation in use.
func (st *state) current(gen uint64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return gen == st.gen
}

// It reports whether the run told limits not known before (worth keeping
// in the info cache).
func (st *state) learn(gen uint64, tr *transform.Translator, msgs bool) (newLimits bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if gen != st.gen {
		return false
	}
	if msgs {
		st.messages = append(st.messages, tr.Messages()...)
		st.addMessageEntries(tr.Messages())
		st.compacted = false
	}
	if sid := tr.SessionID(); sid != "" {
		st.sessionID = sid
	}
	if m := tr.Model(); m != "" {
		st.model = m
	}
	if l := tr.Limits(); l.ContextWindow > 0 && st.model != "" {
		newLimits = st.limits[st.model] != l
		st.limits[st.model] = l
	}
	if f := tr.FastMode(); f != "" {
		st.fastMode = f
	}
	return newLimits
}

// transcriptPath is where the session in use is (or will be) written.
// Called with st.mu held.
func (s *server) transcriptPath() string {
	if s.st.sessionFile != "" {
		return s.st.sessionFile
	}
	return sessions.TranscriptPath(s.configDir, s.cwd, s.st.sessionID)
}

func (s *server) getState(*call) (any, error) {
	rs := s.runs.status()
	s.bashJ.mu.Lock()
	bashing := s.bashJ.run != nil
	s.bashJ.mu.Unlock()
	info, known := s.knownInfo()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	st := s.st
	model := s.currentModel(info, known)
	var listed *modelInfo
	if known || st.model != "" { // else a name the list may not have
		listed = &model
	}
	return stateData{
		Model:                 listed,
		ThinkingLevel:         st.thinkingLevel(),
		IsStreaming:           rs.streaming,
		IsCompacting:          rs.compacting,
		SteeringMode:          rs.steering,
		FollowUpMode:          rs.followUp,
		InterruptMode:         st.interrupt,
		SessionFile:           s.transcriptPath(),
		SessionID:             st.sessionID,
		SessionName:           st.sessionName,
		AutoCompactionEnabled: !st.settings.noAutoCompact,
		MessageCount:          len(st.messages),
		PendingMessageCount:   rs.pending,
		QueuedMessageCount:    rs.pending,
		TodoPhases:            st.todos.list.Phases(),
		Transport:             s.transportName(),
		IsSettled:             !rs.streaming && !rs.compacting,
		ContextUsage:          s.contextUsage(model),
		HasPendingAsyncWork:   bashing,
		FastModeEnabled:       st.settings.fastMode,
		FastModeActive:        st.settings.fastMode && st.fastMode == "on",
	}, nil
}

// modelInfo describes the model the CLI runs: the one it reported, else the
// one asked for with --model, else "default" (the CLI's name for its default
// model). Context window and output cap are the CLI's figures once a turn
// reported them; until then, those of current Claude models. Called with
// st.mu held.
func (s *server) modelInfo() modelInfo {
	id := s.st.model
	if id == "" {
		id = "default"
	}
	return s.describeModel(id)
}

// describeModel is pi's Model for a model id, with the limits known so far.
// Called with st.mu held.
func (s *server) describeModel(id string) modelInfo {
	limits, ok := s.st.limits[id]
	if !ok {
		limits = defaultLimits
	}
	return modelInfo{
		ID: id, Name: id, API: transform.API, Provider: transform.Provider, BaseURL: s.baseURL,
		Reasoning: true, Input: []string{"text", "image"},
		ContextWindow: limits.ContextWindow, MaxTokens: limits.MaxTokens,
	}
}

func (s *server) getMessages(*call) (any, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return messagesData{Messages: append([]transform.Message{}, s.st.messages...)}, nil
}

// getLastAssistantText is pi's: the text of the last assistant message,
// not counting aborted ones without content, trimmed; {} when there is
// none.
func (s *server) getLastAssistantText(*call) (any, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	msgs := s.st.messages
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != transform.RoleAssistant || m.StopReason == transform.StopAborted && len(m.Content) == 0 {
			continue
		}
		if t := strings.TrimSpace(m.Text()); t != "" {
			return lastTextData{Text: t}, nil
		}
		break
	}
	return lastTextData{}, nil
}

// setSessionName handles set_session_name: the name get_state reports and
// the CLI's title for the session, written into its transcript at once
// (persistName) and given with --name to every process started on it.
func (s *server) setSessionName(c *call) (any, error) {
	name := strings.TrimSpace(c.str("name"))
	if name == "" {
		return nil, errors.New("Session name cannot be empty") // pi's words
	}
	s.st.mu.Lock()
	s.st.sessionName = name
	s.st.note(entryJSON{Type: "session_info", Name: name})
	id := s.st.sessionID
	s.st.mu.Unlock()
	s.out.send(sessionInfoChangedJSON{Type: "session_info_changed", Name: name})
	s.persistName(id, name)
	return nil, nil
}

func (s *server) setInterruptMode(c *call) (any, error) {
	mode := c.str("mode")
	if mode != "immediate" && mode != "wait" {
		return nil, fmt.Errorf("%s: mode must be \"immediate\" or \"wait\", got %q", c.typ, mode)
	}
	s.st.mu.Lock()
	s.st.interrupt = mode
	s.st.mu.Unlock()
	return nil, nil
}

// getSessionStats counts the session's messages and sums the CLI's usage
// and cost on them (the CLI reports cost per run; it sits on each run's
// last message).
func (s *server) getSessionStats(*call) (any, error) {
	info, known := s.knownInfo()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	msgs := s.st.messages
	st := sessionStats{SessionFile: s.transcriptPath(), SessionID: s.st.sessionID, TotalMessages: len(msgs)}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case transform.RoleUser:
			st.UserMessages++
		case transform.RoleToolResult:
			st.ToolResults++
		case transform.RoleAssistant:
			st.AssistantMessages++
			for _, c := range m.Content {
				if c.Type == "toolCall" {
					st.ToolCalls++
				}
			}
			u := m.Usage
			st.Tokens.Input += u.Input
			st.Tokens.Output += u.Output
			st.Tokens.CacheRead += u.CacheRead
			st.Tokens.CacheWrite += u.CacheWrite
			st.Cost += u.Cost.Total
		}
	}
	st.Tokens.Total = st.Tokens.Input + st.Tokens.Output + st.Tokens.CacheRead + st.Tokens.CacheWrite
	st.ContextUsage = s.contextUsage(s.currentModel(info, known))
	return st, nil
}

// pageCursor is what a get_messages_page cursor says: where the next page
// starts, in which state of the session.
type pageCursor struct {
	Version int    `json:"version"`
	Session string `json:"sessionId"`
	Gen     uint64 `json:"gen"`
	Count   int    `json:"messageCount"`
	Offset  int    `json:"offset"`
}

// pageBytes caps a page's messages (omp's), so a page fits a frame.
const pageBytes = 768 << 10

// getMessagesPage handles get_messages_page (omp's client pages
// getMessages with it under protocol v2).
func (s *server) getMessagesPage(c *call) (any, error) {
	limit := 100
	if v := c.raw.Get("limit"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || v.Num != float64(int(v.Num)) || v.Num < 1 || v.Num > 256 {
			return nil, fmt.Errorf("%s: limit must be an integer from 1 to 256, got %s", c.typ, v.Raw)
		}
		limit = int(v.Num)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	st := s.st
	cur := pageCursor{Version: 1, Session: st.sessionID, Gen: st.gen, Count: len(st.messages)}
	if raw := c.str("cursor"); raw != "" {
		var got pageCursor
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || json.Unmarshal(b, &got) != nil || got.Version != 1 || got.Offset < 0 {
			return nil, fmt.Errorf("%s: cursor %q is not one of get_messages_page's", c.typ, raw)
		}
		if got.Session != cur.Session || got.Gen != cur.Gen || got.Count != cur.Count || got.Offset > cur.Count {
			return nil, &codedError{code: "stale_cursor", msg: "RPC message cursor is stale"}
		}
		cur.Offset = got.Offset
	}
	page := messagesPageData{Messages: []transform.Message{}, TotalMessages: len(st.messages)}
	size := 0
	for i := cur.Offset; i < len(st.messages) && len(page.Messages) < limit; i++ {
		b, _ := json.Marshal(st.messages[i])
		if size += len(b); size > pageBytes && len(page.Messages) > 0 {
			break
		}
		page.Messages = append(page.Messages, st.messages[i])
	}
	if next := cur.Offset + len(page.Messages); next < len(st.messages) {
		cur.Offset = next
		b, _ := json.Marshal(cur)
		page.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	return page, nil
}

// contextUsage is how full the context is: the last assistant message's
// tokens (input, cache, output: what the next call starts from), of the
// model's context window. Unknown (null) after a compaction until the
// next run. Called with st.mu held.
func (s *server) contextUsage(model modelInfo) contextUsage {
	cu := contextUsage{ContextWindow: model.ContextWindow}
	if s.st.compacted {
		return cu
	}
	var n int64
	msgs := s.st.messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := &msgs[i]; m.Role == transform.RoleAssistant && m.Usage.Input+m.Usage.CacheRead > 0 {
			u := m.Usage
			n = u.Input + u.Output + u.CacheRead + u.CacheWrite
			break
		}
	}
	pct := float64(n) * 100 / float64(cu.ContextWindow)
	cu.Tokens, cu.Percent = &n, &pct
	return cu
}

// defaultLimits are a model's limits until the CLI reported its own for a
// turn on it: those of current Claude models without the 1M context
// window. The CLI tells no model's limits before it ran a turn on it.
var defaultLimits = transform.Limits{ContextWindow: 200_000, MaxTokens: 32_000}

// noteLimits keeps the context window the CLI told for the model it will
// run, unless a turn told that model's limits: the CLI's figure before
// any turn (its output cap comes with the first turn's result). Called
// with st.mu held, wherever a model is described from info.
func (s *server) noteLimits(info claudecli.Info) {
	if info.Model == "" || info.ContextWindow <= 0 {
		return
	}
	if _, ok := s.st.limits[info.Model]; !ok {
		s.st.limits[info.Model] = transform.Limits{ContextWindow: info.ContextWindow, MaxTokens: defaultLimits.MaxTokens}
	}
}

// currentModel is the model the next turn runs, as get_available_models
// lists it once the CLI's models are known (now, or from the info cache);
// get_state, get_session_stats and the list agree on its limits. Called
// with st.mu held.
func (s *server) currentModel(info claudecli.Info, known bool) modelInfo {
	m := s.modelInfo()
	if known {
		m = s.knownModel(info, m)
	}
	return m
}

// knownModel is the model get_state reports, as get_available_models
// describes it (display name, price), once the CLI has listed its models:
// before the first turn, the model the CLI said it will run, else the one
// its alias ("default", "opus") stands for. Called with st.mu held.
func (s *server) knownModel(info claudecli.Info, m modelInfo) modelInfo {
	name := m.ID
	switch {
	case s.st.model == "" && s.st.settings.model != "":
		name = s.st.settings.model
	case s.st.model == "" && info.Model != "":
		name = info.Model // the model the CLI's settings choose
	}

	if cm, ok := findModel(info, name); ok && cm.ResolvedModel != "" {
		name = cm.ResolvedModel
	}
	for _, mi := range s.modelsLocked(info) {
		if mi.ID == name {
			return mi
		}
	}
	return m
}
