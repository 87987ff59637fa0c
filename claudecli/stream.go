package claudecli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
)

// interruptDeadline is how long the stream transport waits for the CLI to
// end a turn after an interrupt request before it kills the process (the
// next turn then resumes the session in a new one).
const interruptDeadline = 5 * time.Second

// stream keeps one CLI process per session with stdin open: turns are user
// lines, and the control protocol (initialize, interrupt) runs over the same
// pipes. What it relies on (the CLI 2.1.328): the CLI answers each user line with one turn
// ending in a result line; an interrupt request is confirmed at once and the
// turn ends with result subtype error_during_execution. Turns are serial: a
// user line sent before the result belongs to the running turn (see
// [Steerer]), which is how steering reaches the model mid-turn.
type stream struct {
	cfg     Config
	maxLine int

	// mu guards proc, cfg, stale, live, servers, closed, swap and resting. It is held only
	// for short sections that wait for nothing: no process's exit, no
	// spawn, no control request. So SetConfig, LiveInfo, Rename, Control and Close
	// never wait for the CLI behind a turn's start; what waits, waits on
	// swap, with mu released.
	mu     sync.Mutex
	closed bool
	proc   *streamProc
	stale  bool // cfg changed since proc started
	// swap is closed when the change of process under way is done (a
	// turn's or a warm-up's: live requests to the process, the old
	// process's exit, the new one's start); nil when none is. One is made
	// at a time, by the goroutine that set swap, with mu released; a Turn
	// waits for it and then looks again, a Warm leaves it be.
	swap chan struct{}
	// resting is swap when the change under way is a release (Rest),
	// which starts no process.
	resting chan struct{}

	// tmu guards turn and onOwn; it is never held while waiting for the
	// CLI, since the process's reader takes it for each line (lineFrom).
	// It may be taken with mu held, never the other way round.
	tmu   sync.Mutex
	turn  *streamTurn // the current turn, the caller's or the CLI's own, until it is over
	onOwn func(OwnTurn)
	// live are control requests that bring the running process in step
	// with cfg (a new effort, permission mode or tool list) before the
	// next turn, instead of a new process.
	live []map[string]any
	// servers are the SDK MCP servers the process in use has: those it
	// was started with, and those added since (mcp_set_servers, in live
	// until sent). A server the config drops stays, listing no tools.
	servers []string
}

// SetConfig takes effect at the next turn. What the running process can
// be brought in step with is sent to it before that turn, as control
// requests (checked on 2.1.275, 2.1.328 and 2.1.332 with the fake API):
//   - a new effort level or fast mode: apply_flag_settings (the next API
//     request carries them, and nothing else changes);
//   - a new permission mode: set_permission_mode. The CLI reports the
//     change with a system status line (status null, permissionMode),
//     sometimes after its answer, on 2.1.275 after the next user line
//     even: that report is the transport's, not the turn's, and is not
//     passed on (streamProc.echoed). A mode the CLI refuses live
//     (bypassPermissions, unless launched with it) replaces the process;
//   - a new tool list of an SDK server the process has (SDKTools): an MCP
//     notifications/tools/list_changed from that server (an mcp_message
//     request), after which the CLI lists its tools again; the next API
//     request offers the new ones. One it no longer lists is refused by
//     the CLI if called ("No such tool available"), though 2.1.328 and
//     2.1.332 go on offering it to the model in the process's later
//     requests; a server dropped from SDKServers stays, listing none;
//   - a new SDK server: mcp_set_servers with every SDK server the
//     process has (it replaces the set), when AskPermissions is on: its
//     tools have no --allowedTools rule, and the CLI asks the host before
//     each call (else the process is replaced).
//
// Any other change, a new model among them, replaces the process,
// resuming the session. The CLI records a model changed on a running
// process (set_model, or apply_flag_settings with a model) as a local
// /model command: the next API request would carry its caveat, command
// and "Set model to …" output as user blocks, and the run an assistant
// message "Set model to …" (measured on 2.1.328). A new process started
// with --model tells the model nothing; the bridge prewarms it while idle.
func (s *stream) SetConfig(cfg Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cfg
	s.cfg = cfg
	if s.proc != nil {
		s.noteChange(old, cfg)
	}
}

// noteChange records what the running process, started with (or brought
// in step with) old, needs to run as cfg says: live requests, or a new
// process (stale). With mu held.
func (s *stream) noteChange(old, cfg Config) {
	if s.stale {
		return
	}
	base, next := old, cfg
	for _, c := range []*Config{&base, &next} {
		c.Effort, c.FastMode, c.PermissionMode, c.SDKServers, c.SDKTools = "", false, "", nil, nil
	}
	var added []string
	for _, n := range cfg.SDKServers {
		if !slices.Contains(s.servers, n) {
			added = append(added, n)
		}
	}
	if !sameConfig(base, next) || cfg.Effort == "" && old.Effort != "" || len(added) > 0 && !cfg.AskPermissions {
		s.stale, s.live = true, nil
		return
	}
	if cfg.Effort != old.Effort {
		s.live = append(s.live, map[string]any{"subtype": "apply_flag_settings", "settings": map[string]any{"effortLevel": cfg.Effort}})
	}
	if cfg.FastMode != old.FastMode {
		s.live = append(s.live, map[string]any{"subtype": "apply_flag_settings", "settings": map[string]any{"fastMode": cfg.FastMode}})
	}
	if cfg.PermissionMode != old.PermissionMode {
		mode := cfg.PermissionMode
		if mode == "" {
			mode = "default" // the CLI's own when none is given
		}
		s.queueLive(map[string]any{"subtype": "set_permission_mode", "mode": mode})
	}
	for _, n := range s.servers {
		if old.SDKTools[n] != cfg.SDKTools[n] {
			s.queueLive(map[string]any{"subtype": "mcp_message", "server_name": n,
				"message": map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}})
		}
	}
	if len(added) > 0 {
		s.servers = append(slices.Clone(s.servers), added...)
		slices.Sort(s.servers)
		servers := map[string]any{}
		for _, n := range s.servers {
			servers[n] = map[string]string{"type": "sdk", "name": n}
		}
		s.queueLive(map[string]any{"subtype": "mcp_set_servers", "servers": servers})
	}
}

// queueLive adds req to the live requests, in place of one queued with
// the same subtype (and server) that it supersedes. With mu held.
func (s *stream) queueLive(req map[string]any) {
	key := func(r map[string]any) [2]any { return [2]any{r["subtype"], r["server_name"]} }
	if i := slices.IndexFunc(s.live, func(r map[string]any) bool { return key(r) == key(req) }); i >= 0 {
		s.live[i] = req
		return
	}
	s.live = append(s.live, req)
}

// The callback ids of Config.ToolHooks' hooks, and initialize's hooks
// registering them for every tool.
const (
	HookPreTool  = "claude-rpc:pre-tool"
	HookPostTool = "claude-rpc:post-tool"
)

var toolHooks = map[string]any{
	"PreToolUse":  []map[string]any{{"hookCallbackIds": []string{HookPreTool}}},
	"PostToolUse": []map[string]any{{"hookCallbackIds": []string{HookPostTool}}},
}

// sameConfig reports whether two configs start the same process.
func sameConfig(a, b Config) bool {
	return a.ToolHooks == b.ToolHooks && a.Path == b.Path && a.Dir == b.Dir && a.Model == b.Model && a.Effort == b.Effort && a.FastMode == b.FastMode &&
		a.PermissionMode == b.PermissionMode && a.AskPermissions == b.AskPermissions && a.AppendSystemPrompt == b.AppendSystemPrompt &&
		slices.Equal(a.SDKServers, b.SDKServers) && slices.Equal(a.DialogKinds, b.DialogKinds) && slices.Equal(a.Env, b.Env) && slices.Equal(a.ExtraArgs, b.ExtraArgs) &&
		reflect.DeepEqual(a.Settings, b.Settings)
}

func newStream(cfg Config, maxLine int) *stream { return &stream{cfg: cfg, maxLine: maxLine} }

func (s *stream) Name() string { return TransportStream }

// Caps: the stream transport's process persists, and does everything of
// [Caps] but quiesce (a turn is over when the caller releases it).
func (s *stream) Caps() Caps {
	return Caps{Persistent: true, Steer: true, Control: true,
		LiveInfo: s.LiveInfo, Rename: s.Rename, Warm: s.Warm, OnOwnTurn: s.OnOwnTurn, ControlRequest: s.Control, Task: s.Task,
		Rest: s.Rest}
}

// streamProc is one persistent CLI process and the goroutine reading it.
type streamProc struct {
	p       *cliProcess
	session string
	name    string // the session's display name it was started with
	stdin   *inbox
	lines   chan procLine     // the CLI's output lines that are not control messages
	onLine  func(*streamProc) // told before each such line is queued
	retired atomic.Bool       // replaced or closed: its lines begin no turn
	free    chan []byte       // line buffers to read into again ([streamProc.recycle])
	dead    chan struct{}     // closed when stdout ended
	seq     atomic.Int64
	tasks   taskSet // the tasks it started, from its lines

	host Host // answers the CLI's control requests; nil refuses them

	// info is the process's answer to initialize, once infoDone is closed
	// (zero when it failed).
	info     Info
	infoOK   bool
	infoDone chan struct{}

	mu       sync.Mutex // guards pending, inflight and echo
	pending  map[string]chan gjson.Result
	inflight map[string]context.CancelFunc // CLI requests being answered
	// echo: a set_permission_mode request was sent, and the CLI's report
	// of it (a status line with a permissionMode) has not been read yet.
	echo bool
}

// awaitEcho says a set_permission_mode request is about to be sent: the
// next status line reporting a permission mode before the next turn's
// system init is the CLI's report of it ([streamProc.echoed]).
func (sp *streamProc) awaitEcho() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.echo = true
}

// echoed reports whether line is the CLI's report of the transport's own
// set_permission_mode request, which is not the turn's to read: the
// caller asked for that mode, and a turn of the CLI's own would begin
// with it when it came while none is open. A turn's system init ends the
// wait (a request for the mode the CLI is in may have none).
func (sp *streamProc) echoed(line []byte) bool {
	if !bytes.HasPrefix(line, []byte(`{"type":"system"`)) {
		return false
	}
	v := gjson.GetManyBytes(line, "subtype", "status", "permissionMode")
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case !sp.echo:
		return false
	case v[0].String() == "init":
		sp.echo = false
	case v[0].String() == "status" && v[1].Type == gjson.Null && v[2].Exists():
		sp.echo = false
		return true
	}
	return false
}

// Warm is [Caps.Warm]. It leaves a change of process under way be: the
// turn that made it starts the process it needs.
func (s *stream) Warm(session Session) {
	s.mu.Lock()
	for w := s.swap; w != nil && w == s.resting; w = s.swap {
		// A release ([stream.Rest]) starts nothing: wait for its exit.
		s.mu.Unlock()
		<-w
		s.mu.Lock()
	}
	if s.closed || s.swap != nil || s.turnOpen() {
		s.mu.Unlock()
		return
	}
	sp := s.proc
	if sp != nil && !sp.isDead() && sp.session == session.ID && sp.name == session.Name && !s.stale {
		s.mu.Unlock()
		return // warm already
	}
	s.beginSwap(true)
	s.mu.Unlock()
	_, _ = s.change(sp, true, nil, session, true)
}

// turnOpen reports whether a turn is open on the process. With mu held.
func (s *stream) turnOpen() bool {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	return s.turn != nil && !s.turn.isOver()
}

func (s *stream) Turn(session Session, input []byte) (Turn, error) {
	s.tmu.Lock()
	s.waitTurnOver()
	s.tmu.Unlock()

	var started *streamProc // the process this call started, if any
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("the bridge is shutting down")
		}
		if w := s.swap; w != nil {
			s.mu.Unlock()
			<-w
			continue
		}
		sp := s.proc
		// Dead (the next turn resumes the session in a new process), on
		// another session (new_session, switch) or run differently now
		// (SetConfig, a new name): replace it. One this call just started
		// is used as it is: if it died, the turn ends through Next, with
		// how it died.
		replace := sp != nil && (sp.isDead() && sp != started || sp.session != session.ID || sp.name != session.Name || s.stale)
		if sp != nil && !replace && len(s.live) == 0 {
			t, prev := s.openTurn(sp)
			s.mu.Unlock()
			if t == nil {
				prev.waitEnded()
				continue
			}
			// A process that dies before reading the line ends the turn
			// through Next, with how it died.
			sp.stdin.send(input)
			return t, nil
		}
		live := s.live
		s.beginSwap(replace || sp == nil)
		s.mu.Unlock()
		var err error
		if started, err = s.change(sp, replace, live, session, false); err != nil {
			return nil, err
		}
	}
}

// openTurn makes a turn on sp the open one, unless a turn is open still
// (a turn of the CLI's own claimed by the caller): then it returns that
// one to wait for. With mu held: no change of process comes between.
func (s *stream) openTurn(sp *streamProc) (t, prev *streamTurn) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	// From here on the process's lines are this turn's: a turn the CLI
	// began by itself meanwhile and nobody claimed is taken over (its
	// lines come first, before the CLI reports this input started).
	if prev := s.turn; prev != nil && !prev.isOver() && !(prev.own && prev.take()) {
		return nil, prev
	}
	t = &streamTurn{sp: sp, ended: make(chan struct{})}
	s.turn = t
	return t, nil
}

// beginSwap marks a change of process under way, made by the caller with
// mu released ([stream.change]); replace: the process in use (if any)
// is replaced, so none is in use meanwhile. With mu held.
func (s *stream) beginSwap(replace bool) {
	s.swap = make(chan struct{})
	s.live = nil
	if replace {
		s.proc, s.stale = nil, false
	}
}

// endSwap ends the mark [stream.beginSwap] made: the change of process
// is done.
func (s *stream) endSwap() {
	s.mu.Lock()
	close(s.swap)
	s.swap = nil
	s.mu.Unlock()
}

// Rest is [Caps.Rest]. The decision is taken with mu held, so a Turn or
// Warm comes either before it (the process is busy, or in use again) or
// after (it waits for the exit the release marked as a change of
// process); the process is retired with tmu held, so its reader offers no
// turn of the CLI's own from then on ([stream.lineFrom]).
func (s *stream) Rest() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.proc
	switch {
	case s.closed || sp == nil || sp.isDead():
		return false, nil
	case s.swap != nil:
		return false, errors.New("a change of process is under way")
	}
	if err := s.retireResting(sp); err != nil {
		return false, err
	}
	s.beginSwap(true)
	s.resting = s.swap
	go func() {
		defer s.endSwap()
		sp.shutdown(flushWait)
	}()
	return true, nil
}

// retireResting retires sp when it rests: no turn is open on it, it has
// answered initialize, and it has no task running and no control request
// under way either way. With mu held.
func (s *stream) retireResting(sp *streamProc) error {
	select {
	case <-sp.infoDone:
	default:
		return errors.New("the CLI is still starting")
	}
	if why := sp.busy(); why != "" {
		return errors.New(why)
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if s.turn != nil && !s.turn.isOver() {
		if s.turn.own {
			return errors.New("a turn the CLI began by itself is open")
		}
		return errors.New("a turn is open")
	}
	sp.retired.Store(true)
	return nil
}

// busy says what the process is doing besides a turn, "" when nothing: a
// task of its own not ended, a control request of the CLI's being
// answered, one of the transport's waiting for the CLI's answer.
func (sp *streamProc) busy() string {
	if id, ok := sp.tasks.running(); ok {
		return "its task " + id + " has not ended"
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case len(sp.inflight) > 0:
		return "a request of the CLI's (a dialog, a host tool call) is being answered"
	case len(sp.pending) > 0:
		return "a control request waits for the CLI's answer"
	}
	return ""
}

// change makes the change of process [stream.beginSwap] marked, with mu
// released, and ends the mark: live requests to sp, unless replace (or one
// fails: then sp is replaced too); sp's exit when replaced (it writes its
// transcript before the next process reads it); a new process on session
// when sp is replaced or none ran, with the config as it is then. It
// returns the process it started, or why it could not.
func (s *stream) change(sp *streamProc, replace bool, live []map[string]any, session Session, warm bool) (*streamProc, error) {
	defer s.endSwap()
	for _, req := range live {
		if replace || sp == nil {
			break
		}
		// Not applied: a new process gets it on its command line.
		if req["subtype"] == "set_permission_mode" {
			sp.awaitEcho()
		}
		_, err := sp.request(req, 10*time.Second)
		replace = err != nil
	}
	if sp != nil && !replace {
		return nil, nil
	}
	if sp != nil {
		s.mu.Lock()
		if s.proc == sp { // a live request failed
			s.proc, s.stale, s.live = nil, false, nil
		}
		s.mu.Unlock()
		sp.retired.Store(true)
		go sp.shutdown(flushWait)
		<-sp.p.Done()
	}
	s.mu.Lock()
	closed, cfg := s.closed, s.cfg
	s.mu.Unlock()
	if closed {
		return nil, errors.New("the bridge is shutting down")
	}
	np, err := s.startProc(cfg, session, warm)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		np.retired.Store(true)
		np.shutdown(flushWait) // Close waits for the change under way
		return nil, errors.New("the bridge is shutting down")
	}
	s.proc, s.servers = np, cfg.SDKServers
	// A config set while it started, it is brought in step with before
	// the next turn (or replaced).
	s.noteChange(cfg, s.cfg)
	s.mu.Unlock()
	return np, nil
}

// waitTurnOver waits, with tmu held (released while it waits), until no
// turn is open: the current one is over, or it is a turn of the CLI's own
// that was offered and not claimed, which it takes.
func (s *stream) waitTurnOver() {
	for {
		prev := s.turn
		if prev == nil || prev.isOver() || prev.own && prev.take() {
			return
		}
		s.tmu.Unlock()
		prev.waitEnded()
		s.tmu.Lock()
	}
}

// OwnTurn is a turn the CLI began by itself, while none of the caller's
// was open (a background sub-agent or command ended, a scheduled
// wake-up): [Caps.OnOwnTurn] offers it.
type OwnTurn interface {
	Turn
	// Claim makes the turn the caller's to read and release. It reports
	// false when a turn the caller started since took its lines over:
	// they come first in that turn, before the CLI reports its input
	// started ([Lifecycle]).
	Claim() bool
}

// OpensTurn reports whether a line the CLI printed while idle begins a
// turn of its own: a line of the session's conversation (system init or
// status, stream_event, assistant, user, result), not a sub-agent's
// (parent_tool_use_id), nor a report on its background tasks (system
// task_*, background_tasks_changed) or on a user line it was given
// (command_lifecycle, which may follow the result of the turn it ended),
// which come while it runs no turn. Checked on 2.1.328
// (testdata/cli/subagent-background-idle): the turn it runs by itself
// begins with system init.
func OpensTurn(line []byte) bool {
	v := gjson.GetManyBytes(line, "type", "subtype", "parent_tool_use_id", "status")
	if v[2].String() != "" {
		return false
	}
	switch v[0].String() {
	case "system":
		// A status line without a status reports a state (a permission
		// mode), and begins no work.
		return v[1].String() == "init" || v[1].String() == "status" && v[3].Type != gjson.Null
	case "stream_event", "assistant", "user", "result":
		return true
	}
	return false
}

// OnOwnTurn is [Caps.OnOwnTurn].
func (s *stream) OnOwnTurn(f func(OwnTurn)) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	s.onOwn = f
}

// lineFrom is called by sp's reader before it hands on a line that is not
// a control message: when no turn is open on the process in use, the line
// begins a turn of the CLI's own, offered to the caller.
func (s *stream) lineFrom(sp *streamProc) {
	if sp.retired.Load() {
		return
	}
	s.tmu.Lock()
	// Again with tmu held: Rest retires a process with it held.
	if sp.retired.Load() || s.onOwn == nil || s.turn != nil && !s.turn.isOver() {
		s.tmu.Unlock()
		return
	}
	t := &streamTurn{sp: sp, ended: make(chan struct{}), own: true}
	s.turn = t
	f := s.onOwn
	s.tmu.Unlock()
	go f(t)
}

// warmups are the control requests a warmed process is sent after
// initialize, for its first turn's sake: the CLI builds the system prompt,
// its context and the tool list the first time something asks for them, and
// these ask without calling the API or writing a transcript (checked on
// 2.1.328: TestPrewarm; get_context_usage's "summary" makes no token-count
// requests, "full" would). What they save, and what they cannot (the CLI's
// first query in its process): docs/performance.md, "Figures behind the
// code".
// A CLI that does not know one answers an error, which is ignored.
// (get_context_usage, which builds the context, is asked before them, for
// the live info: modelRequests.)
var warmups = []map[string]any{
	{"subtype": "get_status"},
}

// streamSpool is how much of a persistent process's output is read ahead
// of its reader (spool.limitTo): a few of the reader's pieces of a long
// line, and many times a delta's line.
const streamSpool = 512 << 10

// startProc starts a persistent process on session and sends initialize,
// then, when warm (no turn is waiting for it), the [warmups].
func (s *stream) startProc(cfg Config, session Session, warm bool) (*streamProc, error) {
	p, stdin, err := startPiped(cfg, cfg.TurnArgs(session))
	if err != nil {
		return nil, err
	}
	p.spool.limitTo(streamSpool)
	sp := &streamProc{
		p: p, session: session.ID, name: session.Name, stdin: newInbox(stdin),
		lines: make(chan procLine, 64), free: make(chan []byte, 128), dead: make(chan struct{}),
		pending: map[string]chan gjson.Result{}, inflight: map[string]context.CancelFunc{},
		host: cfg.Host, infoDone: make(chan struct{}), onLine: s.lineFrom,
	}
	go sp.read(s.maxLine)
	init := map[string]any{"subtype": "initialize", "hooks": nil}
	if cfg.ToolHooks {
		init["hooks"] = toolHooks
	}
	if len(s.cfg.DialogKinds) > 0 {
		init["supportedDialogKinds"] = s.cfg.DialogKinds
	}
	// The SDKs open with initialize; the answer (commands, models) is not
	// needed to run a turn, so the first user line follows at once. It is
	// kept: get_available_models and get_commands read it (LiveInfo).
	go func() {
		defer close(sp.infoDone)
		r, err := sp.request(init, 30*time.Second)
		if err != nil {
			return
		}
		info := parseInfo(r.Get("response"))
		var answers [2]gjson.Result
		for i, req := range modelRequests {
			if r, err := sp.request(req, 10*time.Second); err == nil {
				answers[i] = r.Get("response")
			}
		}
		info.AddModel(answers[0], answers[1])
		sp.info, sp.infoOK = info, true
	}()
	if warm {
		go func() {
			<-sp.infoDone
			for _, req := range warmups {
				if _, err := sp.request(req, 10*time.Second); err != nil && sp.isDead() {
					return
				}
			}
		}()
	}
	return sp, nil
}

// read owns the process's stdout: control responses go to their requests,
// every other line to the current turn.
func (sp *streamProc) read(maxLine int) {
	defer sp.cancel("") // nobody is left to answer
	defer close(sp.dead)
	defer close(sp.lines)
	lr := jsonl.NewReader(sp.p.Stdout(), maxLine)
	lr.SetPieces(PiecesOver, InPieces)
	for {
		var buf []byte
		select {
		case buf = <-sp.free:
		default:
		}
		line, err := lr.NextOwned(buf)
		if errors.Is(err, jsonl.ErrPiece) {
			if !sp.pieces(lr, line) {
				return
			}
			continue
		}
		if errors.Is(err, jsonl.ErrLineTooLong) {
			// Skipped; the turn is told (its Next returns err), and the
			// CLI goes on.
			sp.onLine(sp)
			sp.lines <- procLine{err: err}
			continue
		}
		if err != nil {
			return
		}
		// Control lines are read here and copied from (gjson's
		// ParseBytes and GetBytes copy).
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"control_response"`)):
			sp.answer(line)
		case bytes.HasPrefix(line, []byte(`{"type":"control_request"`)):
			sp.serve(line)
		case bytes.HasPrefix(line, []byte(`{"type":"control_cancel_request"`)):
			sp.cancel(gjson.GetBytes(line, "request_id").String())
		case sp.echoed(line):
		default:
			sp.tasks.line(line)
			sp.onLine(sp)
			sp.lines <- procLine{b: line}
			continue
		}
		sp.recycle(line)
	}
}

// pieces hands the turn a long line in pieces as they are read, head
// first: it reports false when the CLI's output ended. The pieces are
// copied into a few buffers the turn gives back ([streamTurn.Next]), or
// new ones when it has not yet.
func (sp *streamProc) pieces(lr *jsonl.Reader, head []byte) bool {
	sp.onLine(sp)
	back := make(chan []byte, 4)
	sp.lines <- procLine{b: head, err: jsonl.ErrPiece}
	for {
		var buf []byte
		select {
		case buf = <-back:
		default:
		}
		b, err := lr.NextOwned(buf)
		switch {
		case errors.Is(err, jsonl.ErrPiece):
			sp.lines <- procLine{b: b, err: err, back: back}
		case err == nil:
			sp.lines <- procLine{b: b, back: back}
			return true
		case errors.Is(err, jsonl.ErrLineTooLong):
			sp.lines <- procLine{err: err}
			return true
		default:
			return false
		}
	}
}

// procLine is a line of the CLI's for the turn: b, or err (wrapping
// jsonl.ErrLineTooLong) for a line too long to keep, which was skipped; a
// piece of a long line comes with jsonl.ErrPiece but its last, and back
// is where its buffer goes once read.
type procLine struct {
	b    []byte
	err  error
	back chan []byte
}

// maxRecycled is the capacity of the largest line buffer kept for reading
// into again: the CLI's stream_event lines, the bulk of its output, are a
// few hundred bytes each.
const maxRecycled = 8 << 10

// recycle keeps a line's buffer for the reader to read into again, when it
// is small and fewer than cap(free) are kept. A turn's lines are valid
// until its next Next ([Turn]): without this, each one was a new
// allocation, the most of any in the bridge while a reply streams (the
// CLI prints a line per API delta): 56 MB of garbage for a 2 MB reply in
// 10-byte deltas, and the collections it made.
func (sp *streamProc) recycle(line []byte) {
	if line == nil || cap(line) > maxRecycled {
		return
	}
	select {
	case sp.free <- line[:0]:
	default:
	}
}

// answer hands a control response to the request waiting for it.
func (sp *streamProc) answer(line []byte) {
	r := gjson.ParseBytes(line).Get("response")
	id := r.Get("request_id").String()
	sp.mu.Lock()
	ch := sp.pending[id]
	delete(sp.pending, id)
	sp.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// serve answers a control request from the CLI on a goroutine of its own:
// the host may wait for a person. Without a host it is refused at once, so
// the CLI never waits for an answer that will not come.
func (sp *streamProc) serve(line []byte) {
	v := gjson.ParseBytes(line)
	req := ControlRequest{ID: v.Get("request_id").String(), Subtype: v.Get("request.subtype").String(), Request: v.Get("request")}
	if sp.host == nil {
		sp.respond(req.ID, nil, fmt.Errorf("claude-rpc does not handle %s requests here", req.Subtype))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp.mu.Lock()
	sp.inflight[req.ID] = cancel
	sp.mu.Unlock()
	go func() {
		defer cancel()
		resp, err := sp.host(ctx, req)
		sp.mu.Lock()
		_, live := sp.inflight[req.ID]
		delete(sp.inflight, req.ID)
		sp.mu.Unlock()
		if live && ctx.Err() == nil { // a withdrawn request gets no answer
			sp.respond(req.ID, resp, err)
		}
	}()
}

// cancel withdraws a request being answered (id "" withdraws them all).
func (sp *streamProc) cancel(id string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for rid, cancel := range sp.inflight {
		if id == "" || rid == id {
			cancel()
			delete(sp.inflight, rid)
		}
	}
}

// respond writes the answer to the CLI's request id.
func (sp *streamProc) respond(id string, resp any, err error) {
	if resp == nil {
		resp = map[string]any{}
	}
	r := map[string]any{"subtype": "success", "request_id": id, "response": resp}
	if err != nil {
		r = map[string]any{"subtype": "error", "request_id": id, "error": err.Error()}
	}
	b, merr := json.Marshal(map[string]any{"type": "control_response", "response": r})
	if merr != nil {
		b, _ = json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": id, "error": "claude-rpc could not encode its answer: " + merr.Error()}})
	}
	sp.stdin.send(append(b, '\n')) // a dead process needs no answer
}

// request sends a control request and waits up to timeout for its response.
func (sp *streamProc) request(req map[string]any, timeout time.Duration) (gjson.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := sp.requestCtx(ctx, req)
	if errors.Is(err, context.DeadlineExceeded) {
		return r, fmt.Errorf("no answer to %v within %v", req["subtype"], timeout)
	}
	return r, err
}

// requestCtx sends a control request and waits for its response until ctx
// is done (then its error wraps ctx's).
func (sp *streamProc) requestCtx(ctx context.Context, req map[string]any) (gjson.Result, error) {
	id := "req_" + strconv.FormatInt(sp.seq.Add(1), 10)
	ch := make(chan gjson.Result, 1)
	// Register before writing: the response can come before Write returns.
	sp.mu.Lock()
	sp.pending[id] = ch
	sp.mu.Unlock()
	defer func() {
		sp.mu.Lock()
		delete(sp.pending, id)
		sp.mu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"type": "control_request", "request_id": id, "request": req})
	if err != nil {
		return gjson.Result{}, err
	}
	if !sp.stdin.send(append(b, '\n')) {
		return gjson.Result{}, fmt.Errorf("sending %v: the CLI's input is closed", req["subtype"])
	}
	select {
	case r := <-ch:
		if r.Get("subtype").String() == "error" {
			return r, fmt.Errorf("claude refused %v: %s", req["subtype"], r.Get("error").String())
		}
		return r, nil
	case <-sp.dead:
		return gjson.Result{}, fmt.Errorf("claude exited before answering %v", req["subtype"])
	case <-ctx.Done():
		return gjson.Result{}, fmt.Errorf("waiting for claude's answer to %v: %w", req["subtype"], ctx.Err())
	}
}

func (sp *streamProc) isDead() bool {
	select {
	case <-sp.dead:
		return true
	default:
		return false
	}
}

// shutdown ends the process with the ladder: close stdin (the CLI then
// writes its transcript and exits), wait up to flush, then stop it.
func (sp *streamProc) shutdown(flush time.Duration) {
	sp.stdin.close()
	go func() { // keep draining, so the CLI never blocks on a full pipe
		for range sp.lines {
		}
	}()
	waitOrStop(sp.p, flush)
}

// LiveInfo is [Caps.LiveInfo]: the running process's initialize answer,
// what the CLI that runs the turns offers. It waits for the answer of a process still
// starting (or ctx); false when no process runs or it did not answer.
func (s *stream) LiveInfo(ctx context.Context) (Info, bool) {
	sp, ok := s.procAfterSwap(ctx)
	if !ok {
		return Info{}, false
	}
	select {
	case <-sp.infoDone: // answered: whatever ctx says
		return sp.info, sp.infoOK
	default:
	}
	select {
	case <-sp.infoDone:
		return sp.info, sp.infoOK
	case <-ctx.Done():
		return Info{}, false
	}
}

// Control is [Caps.Control]: req goes to the process in use (once a change
// of process under way is done), with no lock held, and its answer's
// payload comes back.
func (s *stream) Control(ctx context.Context, req map[string]any) (gjson.Result, error) {
	sp, ok := s.procAfterSwap(ctx)
	if !ok || sp.isDead() {
		return gjson.Result{}, ErrNotRunning
	}
	r, err := sp.requestCtx(ctx, req)
	if err != nil {
		return gjson.Result{}, err
	}
	return r.Get("response"), nil
}

// procAfterSwap is the process in use once the change of process under
// way, if any, is done, or false when none is or ctx ends first.
func (s *stream) procAfterSwap(ctx context.Context) (*streamProc, bool) {
	for {
		s.mu.Lock()
		sp, w := s.proc, s.swap
		s.mu.Unlock()
		if sp != nil || w == nil {
			return sp, sp != nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// Close ends the process in use, and the one a change under way started
// or ends: it returns when they have exited.
func (s *stream) Close(flush time.Duration) {
	s.mu.Lock()
	sp, w := s.proc, s.swap
	s.proc, s.closed = nil, true
	s.mu.Unlock()
	if sp != nil {
		sp.retired.Store(true)
		sp.shutdown(flush)
	}
	if w != nil {
		<-w
	}
}

// streamTurn is one turn on a persistent process: its lines until the
// caller releases it (or the process dies).
type streamTurn struct {
	sp          *streamProc
	last        []byte        // the line Next returned last, recycled by the next call
	lastBack    chan []byte   // where last goes back when it was a piece of a long line
	ended       chan struct{} // closed when the turn is over
	endOnce     sync.Once
	dead        bool // the process died during the turn
	interrupted atomic.Bool
	mu          sync.Mutex // orders Steer against Interrupt and Release; guards claim
	// own: a turn the CLI began by itself ([OwnTurn]); claim is where its
	// offer stands: 0 offered, 1 claimed by the caller, 2 taken over by a
	// turn of the caller's.
	own   bool
	claim int
}

// Claim implements [OwnTurn].
func (t *streamTurn) Claim() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claim == 0 {
		t.claim = 1
	}
	return t.claim == 1
}

// take takes an own turn nobody claimed over for a turn of the caller's:
// it is over, its lines the new turn's.
func (t *streamTurn) take() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claim != 0 {
		return false
	}
	t.claim = 2
	t.markEnded()
	return true
}

func (t *streamTurn) markEnded() { t.endOnce.Do(func() { close(t.ended) }) }

// isOver reports whether the turn ended (released, or its process died).
func (t *streamTurn) isOver() bool {
	select {
	case <-t.ended:
		return true
	case <-t.sp.dead:
		return true
	default:
		return false
	}
}

// waitEnded waits for the turn to end, or its process to die. (A turn that
// will not end is cut off by Interrupt's deadline, which kills the process.)
func (t *streamTurn) waitEnded() {
	select {
	case <-t.ended:
		return
	case <-t.sp.dead:
	}
	t.markEnded()
}

func (t *streamTurn) Next() ([]byte, error) {
	if t.lastBack != nil {
		select {
		case t.lastBack <- t.last[:0]:
		default:
		}
	} else {
		t.sp.recycle(t.last)
	}
	t.last, t.lastBack = nil, nil
	select {
	case <-t.ended:
		return nil, io.EOF
	default:
	}
	select {
	case l, ok := <-t.sp.lines:
		if !ok {
			<-t.sp.p.Done()
			t.dead = true
			t.markEnded()
			return nil, io.EOF
		}
		t.last, t.lastBack = l.b, l.back
		return l.b, l.err
	case <-t.ended:
		return nil, io.EOF
	}
}

func (t *streamTurn) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markEnded()
}

// Steerer is a [Turn] that takes user messages while it runs (the stream
// transport). What it relies on (the CLI 2.1.328; the steering tests check
// it): a user line sent during a turn is queued by the CLI; at the next tool boundary it is folded into the same
// model call as the tool results, else the CLI runs it as its next command
// right after the turn's result. Either way its lines belong to this turn:
// the caller releases it at the first result after which no line it handed
// is still waiting ([Lifecycle] tells), not before.
type Steerer interface {
	// Steer sends input, a user line made by [UserLineID] with uuid. It
	// reports false, sending nothing, when the turn is over or being
	// interrupted. The CLI's command_lifecycle line with state "started"
	// for uuid tells when the model gets it.
	Steer(uuid string, input []byte) bool
	// Cancel takes back a user line sent with uuid that the CLI has not
	// started (its cancel_async_message request, answered at once). It
	// reports whether the CLI dropped it: true, and it never reaches the
	// model (the CLI reports it cancelled); false, and it was started
	// already, or is about to be (the CLI had taken it off its queue), or
	// the CLI did not answer. The caller may not hold anything another
	// path needs: it waits for the CLI's answer.
	Cancel(uuid string) bool
}

func (t *streamTurn) Steer(uuid string, input []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.ended:
		return false
	default:
	}
	return !t.interrupted.Load() && t.sp.stdin.send(input)
}

// cancelDeadline is how long Cancel waits for the CLI's answer: it
// answers at once, from its queue.
const cancelDeadline = 5 * time.Second

func (t *streamTurn) Cancel(uuid string) bool {
	r, err := t.sp.request(map[string]any{"subtype": "cancel_async_message", "message_uuid": uuid}, cancelDeadline)
	return err == nil && r.Get("response.cancelled").Bool()
}

// Lifecycle reads a command_lifecycle line: the CLI's report on a user line
// it was given with a uuid ([UserLineID]): "queued", "started" (the model
// gets it), then one terminal state: "completed"; "cancelled" (by
// cancel_async_message, or an interrupt with cancel_queued); "discarded"
// (the session ended with it queued); "refused" (never queued). See
// [LifecycleHeld].
func Lifecycle(line []byte) (uuid, state string, ok bool) {
	if !bytes.HasPrefix(line, []byte(`{"type":"command_lifecycle"`)) {
		return "", "", false
	}
	v := gjson.GetManyBytes(line, "command_uuid", "state")
	return v[0].String(), v[1].String(), true
}

// LifecycleHeld reports whether a command_lifecycle state says the CLI
// still holds the line (queued: it may still start it) rather than having
// started it or let it go; any state it does not know lets it go, so a
// line never stays outstanding on a state a newer CLI adds.
func LifecycleHeld(state string) bool { return state == "queued" }

// Interrupt sends the interrupt control request; if the turn has not ended
// within [interruptDeadline], the process is killed. Steering lines the
// CLI has not started are cancelled with it (cancel_queued, advertised as
// interrupt_cancel_queued_v1): without that the CLI would run them as its
// next command after the interrupted one.
func (t *streamTurn) Interrupt() {
	t.mu.Lock() // no Steer between the decision and the request
	defer t.mu.Unlock()
	if t.interrupted.Swap(true) {
		return
	}
	go func() {
		if _, err := t.sp.request(map[string]any{"subtype": "interrupt", "cancel_queued": true}, interruptDeadline); err != nil && !t.sp.isDead() {
			t.sp.p.Stop()
			return
		}
		select {
		case <-t.ended:
		case <-t.sp.dead:
		case <-time.After(interruptDeadline):
			t.sp.p.Stop()
		}
	}()
}

func (t *streamTurn) Err() error {
	if !t.dead {
		return nil
	}
	return t.sp.p.Exit()
}

func (t *streamTurn) Pid() int { return t.sp.p.Pid() }

// IsResult reports whether a CLI line is a result line: the end of the
// CLI's answer to one user line.
func IsResult(line []byte) bool {
	return bytes.Contains(line, []byte(`"type":"result"`)) && gjson.GetBytes(line, "type").String() == "result"
}
