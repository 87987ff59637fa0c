package bridge

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// state is the session the bridge works on and the host's settings: a
// mutex and the fields it guards (lockedState), reached only by state's
// methods in this file, each of which takes the mutex (lock) for one
// short section: no I/O but a stat of the transcript (nextSession), no
// frames written, nothing that waits, and no other owner's method called.
// Handlers and the runner call those methods; what a handler needs of
// several fields at once comes from one method (stateData, sessionStats,
// conversation), and each read-modify-write is one method (learn,
// takePromptContext, useModel). The helpers they call with the mutex held
// are lockedState's (here and in entries.go, todos.go, bash.go,
// models.go): they have no mutex to take and no state to call back, so
// no section nests in another.
type state struct {
	mu sync.Mutex
	f  lockedState // guarded by mu: reached through lock
}

// lock takes the mutex and returns the fields it guards; the caller
// unlocks st.mu when its section ends.
func (st *state) lock() *lockedState {
	st.mu.Lock()
	return &st.f
}

// lockedState is state's fields; its methods are called with state's
// mutex held.
type lockedState struct {
	// at is where the session lives and what describes its models:
	// fixed for the bridge's life.
	at stateEnv
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
	limits   map[string]transform.Limits
	fastMode string // the CLI's fast mode state, once a turn reported it
	settings cliSettings
	// settingsRev counts changes of settings: of two configs made from
	// them, the one of the higher revision is the newer (passConfig).
	settingsRev uint64
	interrupt   string      // omp's interrupt mode: stored and reported
	todos       todoState   // the todo list (todoPhases)
	context     []string    // for the next prompt's context: bash executions, extensions' messages
	entries     []entryJSON // pi's session entries (entries.go)
	// pi is the session's pi file (pifiles.go), nil when none is kept;
	// unwritten are the entries made for pi files and not yet taken by
	// the goroutine that writes them.
	pi        *piLog
	unwritten []piPending
	// compacted: the context was compacted and no run since has told its
	// size.
	compacted bool
}

// stateEnv is what state needs of the bridge's setup, fixed for its life:
// where the CLI keeps sessions (configDir, for the working folder cwd),
// the API its models are reached at (get_state's model) and the model id
// the CLI's flags, environment and settings named at start (named: "" for
// none, or an alias; see namedModel).
type stateEnv struct {
	configDir, cwd, baseURL string
	named                   string
	// pi is where pi's session files are kept, nil when they are not
	// (Options.PiSessions); wake is sessionFiles', woken when an entry is
	// queued for a file.
	pi   *sessions.PiPlace
	wake chan struct{}
}

func newState(model string, at stateEnv) *state {
	st := &state{f: lockedState{at: at, sessionID: sessions.NewID(), model: model, interrupt: "immediate", limits: map[string]transform.Limits{}}}
	st.f.pi = st.f.newPiLog(st.f.sessionID, st.f.sessionID, "")
	st.f.startEntries()
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
	// permissionMode is set_permission_mode's, or the mode the CLI
	// reported last (permission.go); "" for --permission-mode.
	permissionMode string
	hostTools      []hostlink.Tool      // set_host_tools (host.go)
	hostURIs       []hostlink.URIScheme // set_host_uri_schemes (host.go)
	extTools       []hostlink.Tool      // the extensions' tools (extensions.go)
	extPrompt      string               // what before_agent_start appended to the system prompt
	// inactive are the tools an extension turned off (setActiveTools),
	// by the names hosts see: the CLI's own are disallowed, the
	// extensions' not listed.
	inactive []string
}

// offeredExtTools are the extensions' tools the model is offered: those
// not turned off.
func (set *cliSettings) offeredExtTools() []hostlink.Tool {
	if len(set.inactive) == 0 {
		return set.extTools
	}
	return slices.DeleteFunc(slices.Clone(set.extTools), func(t hostlink.Tool) bool { return slices.Contains(set.inactive, t.Name) })
}

// cliConfig is the CLI's config with the host's settings, and the
// settings' revision it was made from.
func (s *server) cliConfig() (claudecli.Config, uint64) {
	set, rev := s.st.currentSettings()
	cfg := s.opts.CLI
	if set.model != "" {
		cfg.Model = set.model
	}
	cfg.Effort = effortOf[set.thinkingLevel]
	if set.permissionMode != "" {
		cfg.PermissionMode = set.permissionMode
	}
	cfg.FastMode = set.fastMode
	cfg.Host, cfg.AskPermissions = s.hostRequest, s.askOn()
	if cfg.AskPermissions {
		cfg.DialogKinds = hostlink.DialogKinds()
	}
	cfg.HookEvents = s.plan.hookEvents()
	// The extensions' tool_call and tool_result for the CLI's own tools
	// (toolHook): registered whenever extensions run, so that their
	// loading does not restart the CLI.
	cfg.ToolHooks = s.ext != nil
	if len(set.hostTools) > 0 || len(set.hostURIs) > 0 {
		cfg.SDKServers = []string{hostlink.Server}
	}
	if len(set.extTools) > 0 {
		cfg.SDKServers = append(cfg.SDKServers, extServer)
	}
	var disallowed []string
	for _, name := range set.inactive {
		if cli := s.opts.ToolNames.CLIName(name); slices.Contains(transform.PiTools(), cli) {
			disallowed = append(disallowed, cli)
		}
	}
	if len(disallowed) > 0 {
		cfg.ExtraArgs = append(slices.Clip(cfg.ExtraArgs), "--disallowedTools", strings.Join(disallowed, ","))
	}
	// Both, also while not served: a running process that has a server
	// the host emptied is told to list its tools (none) again.
	cfg.SDKTools = map[string]string{hostlink.Server: hostlink.Fingerprint(hostlink.ToolList(set.hostTools, set.hostURIs)), extServer: hostlink.Fingerprint(hostlink.MCPTools(set.offeredExtTools()))}
	switch {
	case set.extPrompt == "":
	case cfg.AppendSystemPrompt == "":
		cfg.AppendSystemPrompt = set.extPrompt
	default:
		cfg.AppendSystemPrompt += "\n\n" + set.extPrompt
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
	return cfg, rev
}

// applySettings changes the settings with f and passes the new config on.
// Calls that change settings write resConfig, so they run one at a time,
// in the order sent.
func (s *server) applySettings(f func(*cliSettings)) {
	s.st.changeSettings(f)
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
	return s.st.nextSession()
}

// The methods below are state's: each takes its mutex for what it says
// and calls no other owner.

// currentSettings are the host's settings now, and their revision.
func (st *state) currentSettings() (cliSettings, uint64) {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.settings, ls.settingsRev
}

// changeSettings changes the settings with f (which only assigns), a new
// revision.
func (st *state) changeSettings(f func(*cliSettings)) {
	ls := st.lock()
	defer st.mu.Unlock()
	f(&ls.settings)
	ls.settingsRev++
}

// nextSession is the CLI session the next turn works on (cliSession) and
// its generation. Once the CLI has made a forked session, it is resumed
// from then on.
func (st *state) nextSession() (claudecli.Session, uint64) {
	ls := st.lock()
	defer st.mu.Unlock()
	ses := claudecli.Session{ID: ls.sessionID, Exists: sessions.Exists(ls.at.configDir, ls.at.cwd, ls.sessionID), Name: ls.sessionName}
	switch {
	case ses.Exists:
		ls.fork = nil // made: from now on it is resumed
	case ls.fork != nil:
		ses.ForkFrom, ses.ResumeAt = ls.fork.from, ls.fork.at
	}
	return ses, ls.gen
}

// useSession makes l the session in use, a copy the CLI makes of f's
// when f is not nil: a new generation, so a run of the old one keeps what
// it learns to itself.
func (st *state) useSession(l *loaded, f *fork) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.use(l)
	ls.fork = f
}

// startWith sets what the bridge starts with besides the session's
// contents (startOn): the session id when given (the CLI's, and the
// host's pi id, its pi file's, when it is another), the name (trimmed)
// when given, and the thinking level when it is one of pi's.
func (st *state) startWith(id, piID, name, level string) {
	ls := st.lock()
	defer st.mu.Unlock()
	if id != "" && id != ls.sessionID {
		ls.sessionID = id
		ls.dropUnwritten(ls.pi)
		ls.pi = ls.newPiLog(cmp.Or(piID, id), id, ls.pi.parent())
	}
	if name != "" {
		ls.sessionName = strings.TrimSpace(name)
	}
	if slices.Contains(thinkingLevels, level) {
		ls.settings.thinkingLevel = level
	}
	if !ls.pi.existing() { // a session loaded from its pi file has its entries
		ls.startEntries() // with what it starts with
	}
}

// use makes l the session in use: a new generation, so a run of the old
// one keeps what it learns to itself. Called with st.mu held.
func (ls *lockedState) use(l *loaded) {
	ls.gen++
	ls.sessionID, ls.sessionFile, ls.sessionName = l.id, l.path, l.name
	ls.messages = l.messages
	ls.fork, ls.todos = nil, todoState{}
	ls.context = nil
	ls.pi = l.pi
	if ls.pi == nil {
		ls.pi = ls.newPiLog(l.id, l.id, l.parent)
	}
	if ls.pi.existing() {
		ls.entries = l.entries
		return
	}
	ls.startEntries()
}

// newPiLog is the pi file of a new session (newPiLog), nil when none are
// kept. Called with st.mu held.
func (ls *lockedState) newPiLog(piID, cliID, parent string) *piLog {
	if ls.at.pi == nil {
		return nil
	}
	return newPiLog(*ls.at.pi, piID, cliID, parent)
}

// queue queues e for the session's pi file, if it has one, and wakes the
// goroutine that writes it, which encodes it: nothing is encoded under
// st.mu. Called with st.mu held.
func (ls *lockedState) queue(e entryJSON) {
	if ls.pi == nil {
		return
	}
	ls.unwritten = append(ls.unwritten, piPending{log: ls.pi, entry: e})
	select {
	case ls.at.wake <- struct{}{}:
	default: // woken already
	}
}

// dropUnwritten forgets the entries queued for log. Called with st.mu
// held.
func (ls *lockedState) dropUnwritten(log *piLog) {
	ls.unwritten = slices.DeleteFunc(ls.unwritten, func(p piPending) bool { return p.log == log })
}

// takeUnwritten returns the entries queued for pi files, oldest first,
// and forgets them; and the pi file of the session in use.
func (st *state) takeUnwritten() ([]piPending, *piLog) {
	ls := st.lock()
	defer st.mu.Unlock()
	p := ls.unwritten
	ls.unwritten = nil
	return p, ls.pi
}

// generation is the session generation in use.
func (st *state) generation() uint64 {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.gen
}

// current reports whether gen is the session generation in use.
func (st *state) current(gen uint64) bool {
	ls := st.lock()
	defer st.mu.Unlock()
	return gen == ls.gen
}

// sawSessionID keeps the session id a run's CLI reported, if the run
// belongs to the session in use (gen).
func (st *state) sawSessionID(gen uint64, id string) {
	ls := st.lock()
	defer st.mu.Unlock()
	if gen == ls.gen {
		ls.sessionID = id
	}
}

// startOver starts the session over where a run (gen) of the session in
// use cleared the conversation (/clear), if it still is: as pi's /new, a
// session with no messages, todos or entries but the start's, in a pi
// file of its own, on the CLI session the run reported since the clear
// (sid), which the run's next turns resume. The run's messages after the
// clear come as entries (noteMessages), and into messages at its end
// (learn).
func (st *state) startOver(gen uint64, sid string) {
	ls := st.lock()
	defer st.mu.Unlock()
	if gen != ls.gen {
		return
	}
	if sid != "" {
		ls.sessionID = sid
	}
	ls.messages, ls.compacted, ls.todos = nil, false, todoState{}
	ls.pi = ls.newPiLog(ls.sessionID, ls.sessionID, "")
	ls.startEntries()
}

// learn keeps what a run's translator learned, if the run belongs to the
// session in use. It reports whether the run told limits not known
// before (worth keeping in the info cache).
func (st *state) learn(gen uint64, tr *transform.Translator, msgs bool) (newLimits bool) {
	ls := st.lock()
	defer st.mu.Unlock()
	if gen != ls.gen {
		return false
	}
	if at, reset := tr.Reset(); reset {
		// The CLI cleared the conversation (/clear): the session started
		// over (startOver) with the run's messages after the clear.
		ls.messages = append([]transform.Message(nil), tr.Messages()[at:]...)
		ls.compacted = false
	} else if msgs {
		// (Their entries were made as each ended: noteMessages.)
		ls.messages = append(ls.messages, tr.Messages()...)
		ls.compacted = false
	}
	if sid := tr.SessionID(); sid != "" {
		ls.sessionID = sid
	}
	if m := tr.Model(); m != "" {
		ls.model = m
	}
	if l := tr.Limits(); l.ContextWindow > 0 && ls.model != "" {
		newLimits = ls.limits[ls.model] != l
		ls.limits[ls.model] = l
	}
	if f := tr.FastMode(); f != "" {
		ls.fastMode = f
	}
	return newLimits
}

// noteMessages adds an entry for each message of the session's own that
// evs end (message_end; a sub-agent's are its own), if the run that made
// them (gen) belongs to the session in use.
func (st *state) noteMessages(gen uint64, evs []transform.Event) {
	ls := st.lock()
	defer st.mu.Unlock()
	if gen != ls.gen {
		return
	}
	for i := range evs {
		if e := &evs[i]; e.Type == transform.EventMessageEnd && e.Subagent == nil {
			ls.addMessageEntries([]transform.Message{e.Message.Stored()})
		}
	}
}

// currentSessionID is the id of the session in use.
func (st *state) currentSessionID() string {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.sessionID
}

// where is the session in use's id and its transcript's path.
func (st *state) where() (id, file string) {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.sessionID, ls.transcriptPath()
}

// source is what history reads the session in use from: its id, the fork
// it is a copy of (nil if none), and its transcript when it came from a
// path.
func (st *state) source() (id string, f *fork, file string) {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.sessionID, ls.fork, ls.sessionFile
}

// conversation is a copy of the session's messages, with its id and name.
func (st *state) conversation() (msgs []transform.Message, id, name string) {
	ls := st.lock()
	defer st.mu.Unlock()
	return slices.Clone(ls.messages), ls.sessionID, ls.sessionName
}

// messageCount is how many messages the session has.
func (st *state) messageCount() int {
	ls := st.lock()
	defer st.mu.Unlock()
	return len(ls.messages)
}

// rename names the session, noting it as an entry, and returns its id.
func (st *state) rename(name string) (id string) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.sessionName = name
	ls.note(entryJSON{Type: "session_info", Name: name})
	return ls.sessionID
}

// appendCustomMessage adds an extension's message to the session outside a
// run (pi's sendMessage without a turn): to its messages and entries; its
// text goes to the model with the next prompt.
func (st *state) appendCustomMessage(m transform.Message) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.messages = append(ls.messages, m)
	ls.addMessageEntries([]transform.Message{m})
	if t := m.Text(); t != "" {
		ls.context = append(ls.context, t)
	}
}

// appendCustom adds an extension's custom entry (pi's appendEntry) and
// returns it.
func (st *state) appendCustom(customType string, data json.RawMessage) entryJSON {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.note(entryJSON{Type: "custom", CustomType: customType, Data: data})
	return ls.entries[len(ls.entries)-1]
}

// label sets or clears (label "") the label of entry target (pi's
// setLabel), refusing, in pi's words, a target the session lacks.
func (st *state) label(target, label string) error {
	ls := st.lock()
	defer st.mu.Unlock()
	if !slices.ContainsFunc(ls.entries, func(e entryJSON) bool { return e.ID == target }) {
		return fmt.Errorf("Entry %s not found", target)
	}
	ls.note(entryJSON{Type: "label", TargetID: target, Label: label})
	return nil
}

// setInterrupt keeps omp's interrupt mode.
func (st *state) setInterrupt(mode string) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.interrupt = mode
}

// noteCompaction notes that the context was compacted: its size is unknown
// until the next run tells it.
func (st *state) noteCompaction(e entryJSON) entryJSON {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.compacted = true
	ls.note(e)
	return ls.entries[len(ls.entries)-1]
}

// allEntries are the session's entries. The slice is the state's, only
// appended to: the caller reads it and never writes it.
func (st *state) allEntries() []entryJSON {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.entries
}

// promptOfEntry is entryPromptOf under the lock.
func (st *state) promptOfEntry(id string) (entryPrompt, bool) {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.entryPromptOf(id)
}

// piForkPoints are the user messages of every branch of the session's
// entries, with their entry ids, when the session was opened from a pi
// file (ok), as pi lists them for forking; else ok is false (the
// session's prompts are its CLI transcript's).
func (st *state) piForkPoints() (points []forkPoint, ok bool) {
	ls := st.lock()
	defer st.mu.Unlock()
	if !ls.pi.existing() {
		return nil, false
	}
	return ls.userEntries(), true
}

// thinkingLevel is the level get_state reports.
func (st *state) thinkingLevel() string {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.levelLocked()
}

// noteLevelChange notes a change of the thinking level as an entry.
func (st *state) noteLevelChange(level string) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.note(entryJSON{Type: "thinking_level_change", ThinkingLevel: level})
}

// cliModel is the model the CLI reported, else the one asked for ("" for
// the CLI's default).
func (st *state) cliModel() string {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.model
}

// modelName is the model the next turn runs, as the CLI names it: the one
// asked for, else the one the CLI reported, else its default.
func (st *state) modelName() string {
	ls := st.lock()
	defer st.mu.Unlock()
	switch {
	case ls.settings.model != "":
		return ls.settings.model
	case ls.model != "":
		return ls.model
	}
	return "default"
}

// fastModeActive reports whether the CLI's last turn said fast mode is on.
func (st *state) fastModeActive() bool {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.fastMode == "on"
}

// models lists the CLI's models (info) as pi's Models, with the limits
// known so far (modelsLocked).
func (st *state) models(info claudecli.Info) []modelInfo {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.modelsLocked(info)
}

// useModel makes id the model the CLI runs, noting it as an entry, and
// describes it as get_available_models lists it (modelByID).
func (st *state) useModel(info claudecli.Info, id string) (now modelInfo, previous *modelInfo) {
	ls := st.lock()
	defer st.mu.Unlock()
	if ls.model != "" {
		p := ls.modelByID(info, ls.model)
		previous = &p
	}
	ls.model = id
	ls.note(entryJSON{Type: "model_change", Provider: transform.Provider, ModelID: id})
	return ls.modelByID(info, id), previous
}

// addLimits keeps limits (the info cache's) for the models whose limits
// are not known yet.
func (st *state) addLimits(limits map[string]transform.Limits) {
	ls := st.lock()
	defer st.mu.Unlock()
	for id, l := range limits {
		if _, known := ls.limits[id]; !known && l.ContextWindow > 0 {
			ls.limits[id] = l
		}
	}
}

// knownLimits is a copy of the models' limits known now.
func (st *state) knownLimits() map[string]transform.Limits {
	ls := st.lock()
	defer st.mu.Unlock()
	return maps.Clone(ls.limits)
}

// hostServes is what the host serves the model: its tools and URI
// schemes.
func (st *state) hostServes() ([]hostlink.Tool, []hostlink.URIScheme) {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.settings.hostTools, ls.settings.hostURIs
}

// setTodos replaces the todo list, to be told to the model with the next
// prompt, and returns it as stored.
func (st *state) setTodos(phases []transform.TodoPhase) []transform.TodoPhase {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.todos.list.Set(phases)
	ls.todos.tell = true
	return ls.todos.list.Phases()
}

// observeTodos keeps the todo list in step with the CLI's todo tool calls
// among evs.
func (st *state) observeTodos(evs []transform.Event) {
	ls := st.lock()
	defer st.mu.Unlock()
	for j := range evs {
		ls.todos.list.Observe(&evs[j])
	}
}

// addContext keeps text for the next prompt's context: a bash execution,
// an extension's message.
func (st *state) addContext(text string) {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.context = append(ls.context, text)
}

// takePromptContext is a prompt's text as the CLI gets it: the context (bash
// executions, extensions' messages) since the last prompt before it, the todo list after it
// when the host set it; both are then forgotten.
func (st *state) takePromptContext(text string) string {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.takeContext() + text + ls.takeTodoContext()
}

// pendingContext is the context for the next message, kept until
// dropContext.
func (st *state) pendingContext() string {
	ls := st.lock()
	defer st.mu.Unlock()
	return ls.contextText()
}

// dropContext forgets the context: the message it went with is handed.
func (st *state) dropContext() {
	ls := st.lock()
	defer st.mu.Unlock()
	ls.takeContext()
}

// stateData is get_state's answer as far as the state tells it: all but
// the runner's status, the bash command's and the transport's. info is
// what the CLI said about itself, if known. When the model is not known
// (unknown: only the CLI can say it), Model is nil and choice is what
// withModel needs to fill it in once the CLI has said.
func (st *state) stateData(info claudecli.Info, known bool) (d stateData, choice modelChoice, unknown bool) {
	ls := st.lock()
	defer st.mu.Unlock()
	choice = ls.choice()
	model := ls.currentModel(info, known, choice)
	var listed *modelInfo
	if known || modelID(model.ID) != "" { // else an alias or "default": a name the list does not have
		listed = &model
	}
	return stateData{
		Model:                 listed,
		ThinkingLevel:         ls.levelLocked(),
		InterruptMode:         ls.interrupt,
		SessionFile:           ls.transcriptPath(),
		SessionID:             ls.sessionID,
		SessionName:           ls.sessionName,
		AutoCompactionEnabled: !ls.settings.noAutoCompact,
		MessageCount:          len(ls.messages),
		TodoPhases:            ls.todos.list.Phases(),
		ContextUsage:          ls.contextUsage(model),
		FastModeEnabled:       ls.settings.fastMode,
		FastModeActive:        ls.settings.fastMode && ls.fastMode == "on",
	}, choice, listed == nil
}

// withModel fills in d's model (and its context window) from what the CLI
// said (info), as it was chosen when d was made (choice): get_state's
// answer is the state as of the call, whatever came after it.
func (st *state) withModel(d stateData, info claudecli.Info, choice modelChoice) stateData {
	ls := st.lock()
	defer st.mu.Unlock()
	model := ls.currentModel(info, true, choice)
	d.Model = &model
	d.ContextUsage = d.ContextUsage.in(model.ContextWindow)
	return d
}

// in is cu in a context window of window tokens.
func (cu contextUsage) in(window int64) contextUsage {
	cu.ContextWindow = window
	if cu.Tokens != nil {
		pct := float64(*cu.Tokens) * 100 / float64(window)
		cu.Percent = &pct
	}
	return cu
}

// transcriptPath is where the session in use is (or will be) written:
// its pi file when it has one, else the CLI's transcript. Called with
// st.mu held.
func (ls *lockedState) transcriptPath() string {
	if ls.pi != nil {
		return ls.pi.path
	}
	if ls.sessionFile != "" {
		return ls.sessionFile
	}
	return sessions.TranscriptPath(ls.at.configDir, ls.at.cwd, ls.sessionID)
}

// getState answers from state, on the dispatcher, except for the model
// before the CLI has said it (startmodel.go): when what the CLI was
// started with names no model id, a get_state sent within firstModelWait
// of the start is answered by a goroutine of its own once the CLI has
// said, or at that bound without the model. It does not hold later
// commands back: the dispatcher counts it done when this returns, and its
// answer is the state as of now.
func (s *server) getState(c *call) (any, error) {
	rs := s.runs.status()
	bashing := s.bashJ.running()
	info, known := s.knownInfo()
	d, choice, unknown := s.st.stateData(info, known)
	d.IsStreaming, d.IsCompacting = rs.streaming, rs.compacting
	d.SteeringMode, d.FollowUpMode = rs.steering, rs.followUp
	d.PendingMessageCount, d.QueuedMessageCount = rs.pending, rs.pending
	d.Transport = s.transportName()
	d.PermissionMode = s.permissionMode()
	d.IsSettled = !rs.streaming && !rs.compacting
	d.HasPendingAsyncWork = bashing
	deadline := s.startedAt.Add(s.opts.modelWait())
	if !unknown || !time.Now().Before(deadline) {
		return d, nil
	}
	if !s.goes.start(func() {
		ctx, cancel := context.WithDeadline(c.Context(), deadline)
		defer cancel()
		if info, ok := s.awaitInfo(ctx); ok {
			d = s.st.withModel(d, info, choice)
		}
		s.respond(c, okResponse(c.id, c.typ, d))
	}) {
		return d, nil // shutting down: as it is
	}
	return nil, errAnswered
}

// modelChoice is what says which model the CLI runs, short of what the
// CLI said about itself: the model it reported (or --model), the one the
// host set, and the one its start-up named (stateEnv.named).
type modelChoice struct {
	reported, set, named string
}

// choice is the model choice now. Called with st.mu held.
func (ls *lockedState) choice() modelChoice {
	return modelChoice{reported: ls.model, set: ls.settings.model, named: ls.at.named}
}

// modelInfo describes the model the CLI runs: the one it reported, else the
// one asked for with --model, else the model id its start-up named, else
// "default" (the CLI's name for its default model). Context window and
// output cap are the CLI's figures once a turn reported them; until then,
// those of current Claude models. Called with st.mu held.
func (ls *lockedState) modelInfo(ch modelChoice) modelInfo {
	id := ch.reported
	if id == "" {
		id = ch.named
	}
	if id == "" {
		id = "default"
	}
	return ls.describeModel(id)
}

// describeModel is pi's Model for a model id, with the limits known so far.
// Called with st.mu held.
func (ls *lockedState) describeModel(id string) modelInfo {
	limits, ok := ls.limits[id]
	if !ok {
		limits = defaultLimits
	}
	return modelInfo{
		ID: id, Name: id, API: transform.API, Provider: transform.Provider, BaseURL: ls.at.baseURL,
		Reasoning: true, Input: []string{"text", "image"},
		ContextWindow: limits.ContextWindow, MaxTokens: limits.MaxTokens,
	}
}

// messagesCopy is a copy of the session's messages.
func (st *state) messagesCopy() []transform.Message {
	ls := st.lock()
	defer st.mu.Unlock()
	return append([]transform.Message{}, ls.messages...)
}

func (s *server) getMessages(*call) (any, error) {
	return messagesData{Messages: s.st.messagesCopy()}, nil
}

// lastAssistantText is pi's get_last_assistant_text: the text of the last
// assistant reply, trimmed; "" when there is none.
func (st *state) lastAssistantText() string {
	ls := st.lock()
	defer st.mu.Unlock()
	return lastAssistantText(ls.messages)
}

// lastAssistantText is the trimmed text of the last assistant message of
// msgs that is a reply, by pi 1.6.0's rule: a message without text (but
// blanks) counts only when it ended normally (stopReason stop), so the
// messages of an aborted or failed turn that have no text, and those that
// only call tools, are skipped and the reply before them answers. pi 1.5.2
// skipped only aborted messages without content, and answered {} for the
// others; as those are the only cases where the two differ, and 1.6.0's
// answer is the one a host asking for "the last reply" wants, it is the
// rule for every generation.
func lastAssistantText(msgs []transform.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != transform.RoleAssistant {
			continue
		}
		text := strings.TrimSpace(m.Text())
		if text == "" && m.StopReason != transform.StopStop {
			continue
		}
		return text
	}
	return ""
}

// getLastAssistantText answers {} when there is no text.
func (s *server) getLastAssistantText(*call) (any, error) {
	if t := s.st.lastAssistantText(); t != "" {
		return lastTextData{Text: t}, nil
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
	id := s.st.rename(name)
	s.out.Send(sessionInfoChangedJSON{Type: "session_info_changed", Name: name})
	s.persistName(id, name)
	// As pi's: the answer comes once the pi file has the name (hosts read
	// it from there), unless its folder takes more than a moment.
	ctx, cancel := context.WithTimeout(c.Context(), time.Second)
	defer cancel()
	s.files.sync(ctx)
	return nil, nil
}

func (s *server) setInterruptMode(c *call) (any, error) {
	mode := c.str("mode")
	if mode != "immediate" && mode != "wait" {
		return nil, fmt.Errorf("%s: mode must be \"immediate\" or \"wait\", got %q", c.typ, mode)
	}
	s.st.setInterrupt(mode)
	return nil, nil
}

// sessionStats counts the session's messages and sums the CLI's usage
// and cost on them (the CLI reports cost per run; it sits on each run's
// last message). info is what the CLI said about itself, if known.
func (st *state) sessionStats(info claudecli.Info, known bool) sessionStats {
	ls := st.lock()
	defer st.mu.Unlock()
	msgs := ls.messages
	ss := sessionStats{SessionFile: ls.transcriptPath(), SessionID: ls.sessionID, TotalMessages: len(msgs)}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case transform.RoleUser:
			ss.UserMessages++
		case transform.RoleToolResult:
			ss.ToolResults++
		case transform.RoleAssistant:
			ss.AssistantMessages++
			for _, c := range m.Content {
				if c.Type == "toolCall" {
					ss.ToolCalls++
				}
			}
			u := m.Usage
			ss.Tokens.Input += u.Input
			ss.Tokens.Output += u.Output
			ss.Tokens.CacheRead += u.CacheRead
			ss.Tokens.CacheWrite += u.CacheWrite
			ss.Cost += u.Cost.Total
		}
	}
	ss.Tokens.Total = ss.Tokens.Input + ss.Tokens.Output + ss.Tokens.CacheRead + ss.Tokens.CacheWrite
	ss.ContextUsage = ls.contextUsage(ls.currentModel(info, known, ls.choice()))
	return ss
}

func (s *server) getSessionStats(*call) (any, error) {
	info, known := s.knownInfo()
	return s.st.sessionStats(info, known), nil
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
	return s.st.messagesPage(c.typ, c.str("cursor"), limit)
}

// messagesPage is the page of at most limit messages that cursor (raw;
// "" for the first page) asks for, in one state of the session. typ is
// the command's, for errors.
func (st *state) messagesPage(typ, raw string, limit int) (any, error) {
	ls := st.lock()
	defer st.mu.Unlock()
	cur := pageCursor{Version: 1, Session: ls.sessionID, Gen: ls.gen, Count: len(ls.messages)}
	if raw != "" {
		var got pageCursor
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || json.Unmarshal(b, &got) != nil || got.Version != 1 || got.Offset < 0 {
			return nil, fmt.Errorf("%s: cursor %q is not one of get_messages_page's", typ, raw)
		}
		if got.Session != cur.Session || got.Gen != cur.Gen || got.Count != cur.Count || got.Offset > cur.Count {
			return nil, &codedError{code: "stale_cursor", msg: "RPC message cursor is stale"}
		}
		cur.Offset = got.Offset
	}
	page := messagesPageData{Messages: []transform.Message{}, TotalMessages: len(ls.messages)}
	size := 0
	for i := cur.Offset; i < len(ls.messages) && len(page.Messages) < limit; i++ {
		b, _ := json.Marshal(ls.messages[i])
		if size += len(b); size > pageBytes && len(page.Messages) > 0 {
			break
		}
		page.Messages = append(page.Messages, ls.messages[i])
	}
	if next := cur.Offset + len(page.Messages); next < len(ls.messages) {
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
func (ls *lockedState) contextUsage(model modelInfo) contextUsage {
	cu := contextUsage{ContextWindow: model.ContextWindow}
	if ls.compacted {
		return cu
	}
	var n int64
	msgs := ls.messages
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
func (ls *lockedState) noteLimits(info claudecli.Info) {
	if info.Model == "" || info.ContextWindow <= 0 {
		return
	}
	if _, ok := ls.limits[info.Model]; !ok {
		ls.limits[info.Model] = transform.Limits{ContextWindow: info.ContextWindow, MaxTokens: defaultLimits.MaxTokens}
	}
}

// currentModel is the model the next turn runs, as get_available_models
// lists it once the CLI's models are known (now, or from the info cache);
// get_state, get_session_stats and the list agree on its limits. Called
// with st.mu held.
func (ls *lockedState) currentModel(info claudecli.Info, known bool, ch modelChoice) modelInfo {
	m := ls.modelInfo(ch)
	if known {
		m = ls.knownModel(info, m, ch)
	}
	return m
}

// knownModel is the model get_state reports, as get_available_models
// describes it (display name, price), once the CLI has listed its models:
// before the first turn, the model the CLI said it will run, else the one
// its alias ("default", "opus") stands for. Called with st.mu held.
func (ls *lockedState) knownModel(info claudecli.Info, m modelInfo, ch modelChoice) modelInfo {
	name := m.ID
	switch {
	case ch.reported == "" && ch.set != "":
		name = ch.set
	case ch.reported == "" && info.Model != "":
		name = info.Model // the model the CLI's settings choose
	}

	if cm, ok := findModel(info, name); ok && cm.ResolvedModel != "" {
		name = cm.ResolvedModel
	}
	for _, mi := range ls.modelsLocked(info) {
		if mi.ID == name {
			return mi
		}
	}
	return m
}
