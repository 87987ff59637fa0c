package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/extensions"
	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/bridge/rpcframe"
	"github.com/claude-rpc/claude-rpc/bridge/writer"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/infocache"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// Serve reads commands from in and writes responses and events to out until
// in ends or ctx is cancelled. Then it ends the running prompt (as an abort),
// cancels the commands still at work (each is answered as failed), waits
// for every CLI process it started to exit, and returns nil. Serve is the
// only writer of out.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	s, err := newServer(ctx, opts, out)
	if err != nil {
		return err
	}
	defer s.shutdown()
	if s.st.messageCount() > 0 {
		s.idleNow() // a session's history loaded at start (--session, --continue)
	}

	rd := readHost(in, opts.MaxLine)
	defer rd.stop()
	for {
		select {
		case <-ctx.Done():
			s.log.Debug("context done; shutting down")
			return nil
		case <-s.ctx.Done():
			s.log.Debug("the bridge is asked to end (an extension's shutdown); shutting down")
			return nil
		case l, ok := <-rd.lines:
			if !ok {
				s.log.Debug("stdin closed; shutting down")
				return nil
			}
			s.dispatch(l)
		case l := <-s.internal:
			s.dispatch(l)
		}
	}
}

// server is one Serve call: the parts that own the bridge's state (see
// the package doc), and the dispatcher's bookkeeping.
type server struct {
	// ctx is the server's context, the parent of every call's
	// ([call.Context]): it ends when Serve shuts down, with errShutdown as
	// its cause. stop ends it.
	ctx  context.Context
	stop context.CancelCauseFunc

	opts      Options
	log       *slog.Logger
	out       *writer.Writer    // the protocol layer: the only writer of stdout
	plan      *plannedTransport // the transport, once the CLI's version said which
	cache     *infocache.Store  // what the CLI said last time (Options.InfoCache)
	cacheKey  string            // this CLI's and its settings' entry in cache
	cwd       string
	configDir string
	baseURL   string // the API the CLI talks to, for get_state's model
	// startedAt is when the bridge started (get_state's wait for the
	// model is counted from it); started is closed once the start
	// goroutine has made the plan and started the pre-warmed process, if
	// any (its answer may still be to come).
	startedAt time.Time
	started   chan struct{}

	st   *state
	runs *runner
	link *hostlink.Link   // the host in the loop: requests waiting for its answers
	ext  *extensions.Host // the extension host (Options.Extensions); nil for none
	// extEvents hands the frames the extensions handle to the host, the
	// session's state before them; extActs carries out their API calls
	// (those they do not wait for in order, with their ctx.ui notices);
	// extDialogs are their dialogs asked. extEvents and extActs are nil
	// without extensions.
	extEvents  *extensions.Pump
	extActs    *extensions.Actions
	toolStarts toolStarts // the tool calls whose start the host was shown
	extDialogs extensions.Dialogs
	// internal carries the bridge's own calls (internalCall) to the
	// dispatcher, as the host's lines come.
	internal chan inLine
	info     *infoKeeper
	bashJ    bashJob
	subs     subagentRegistry
	files    *sessionFiles     // writes pi session files; nil when none are kept
	piAt     *sessions.PiPlace // where they are kept; fixed

	order  order                // the dispatcher's: which calls wait for which
	chunks rpcframe.Reassembler // the dispatcher's: rpc_chunk frames from the host
	goes   goroutines           // goroutines Serve waits for at shutdown
}

// errShutdown is the cause of the server's context's end: what a command
// cancelled by the shutdown answers.
var errShutdown = errors.New("the bridge is shutting down")

func newServer(ctx context.Context, opts Options, out io.Writer) (*server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.flushWait <= 0 {
		opts.flushWait = 10 * time.Second
	}
	if opts.Transport == "" {
		opts.Transport = claudecli.TransportStream
	}
	transport := opts.UseTransport
	if transport == nil && opts.Plan == nil {
		var err error
		if transport, err = claudecli.New(opts.Transport, opts.CLI, opts.MaxLine); err != nil {
			return nil, err
		}
	}
	if opts.query == nil {
		opts.query = claudecli.Query
	}
	s := &server{opts: opts, log: opts.Log, cache: opts.InfoCache, startedAt: time.Now(), started: make(chan struct{}),
		internal: make(chan inLine)}
	s.ctx, s.stop = context.WithCancelCause(ctx)
	s.plan = &plannedTransport{done: make(chan struct{}), name: opts.Transport, ask: opts.Ask}
	s.cwd = opts.CLI.Dir
	if s.cwd == "" {
		s.cwd, _ = os.Getwd() // "" only leaves sessionFile empty
	}
	if abs, err := filepath.Abs(s.cwd); err == nil {
		s.cwd = abs
	}
	// What the CLI's environment says is fixed for the bridge's life.
	env := opts.CLI.Environ()
	s.configDir = sessions.ConfigDir(env)
	s.subs.reset()
	s.subs.subscribe("off")
	s.baseURL = "https://api.anthropic.com"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok && v != "" {
			s.baseURL = v
		}
	}
	named := namedModel(opts.CLI.Model, env, s.cwd, s.configDir)
	at := stateEnv{configDir: s.configDir, cwd: s.cwd, baseURL: s.baseURL, named: named}
	if opts.PiSessions && !opts.CLI.NoPersistence {
		place := sessions.PiSessionPlace(env, s.cwd, opts.SessionDir)
		at.pi, at.wake = &place, make(chan struct{}, 1)
	}
	s.piAt = at.pi
	s.st = newState(opts.CLI.Model, at)
	s.link = s.newLink()
	s.runs = newRunner(s)
	s.info = &infoKeeper{}
	if err := s.startOn(opts); err != nil {
		s.stop(err)
		return nil, err
	}
	if at.pi != nil {
		s.files = newSessionFiles(s.st, s.log, at.wake)
	}
	version := s.loadCache(env)
	if transport != nil {
		s.setTransport(transport, opts.Ask, opts.CLI.HookEvents) // with the host's side of the control protocol
	}
	// Last: nothing above may fail and leave the writer's goroutine behind.
	s.out = writer.New(out, writer.Config{Delta: opts.MessageUpdates == UpdatesDelta, Coalesce: opts.Coalesce, Log: opts.Log, Trace: opts.trace})
	s.startExtensions() // its ctx.ui calls are frames: after the writer
	// Before Serve: neither start is refused.
	s.goes.start(func() {
		s.runs.loop()
	})
	s.out.Send(readyJSON{Type: "ready", ProtocolVersion: 1, SupportedProtocolVersions: []int{1, 2},
		MaxFrameBytes: rpcframe.MaxFrameBytes, MaxReassembledFrameBytes: rpcframe.MaxReassembledBytes})
	s.goes.start(func() {
		if transport == nil {
			s.makePlan(version) // may run the CLI for its version: after ready
		}
		s.extLoaded(s.ctx) // the pre-warmed process gets their tools
		s.keptExtPrompt()  // and the system prompt text they gave last, if still theirs
		<-s.prewarm()
		close(s.started)
		s.refreshInfo()
	})
	return s, nil
}

// inLine is one line read from the host, or why none could be.
type inLine struct {
	b   []byte
	err error
	// reply: the line is the bridge's own (internalCall), answered to it.
	reply func(response)
}

// hostReader owns the host's stdin: one goroutine (read) reads its lines
// and hands each to the dispatcher (lines), so the dispatcher never blocks
// on stdin; a line too long to keep is reported, not fatal. Serve owns it
// and ends it (stop).
type hostReader struct {
	in    io.Reader
	lines chan inLine   // closed at stdin's end
	quit  chan struct{} // closed by stop: hand on nothing more
	done  chan struct{} // closed when read returned
}

func readHost(in io.Reader, max int) *hostReader {
	h := &hostReader{in: in, lines: make(chan inLine, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go h.read(max)
	return h
}

func (h *hostReader) read(max int) {
	defer close(h.done)
	defer close(h.lines)
	lr := jsonl.NewReader(h.in, max)
	for {
		b, err := lr.Next()
		var l inLine
		switch {
		case err == nil:
			l = inLine{b: append([]byte(nil), b...)}
		case errors.Is(err, jsonl.ErrLineTooLong):
			l = inLine{err: err}
		default:
			return // EOF, or a read error that ends the stream the same way
		}
		select {
		case h.lines <- l:
		case <-h.quit:
			return
		}
	}
}

// stop ends the reader (Serve returns: stdin ended, or its context): it
// hands on nothing more. A read under way is ended where stdin allows it
// (a read deadline: a pollable os.File, a net.Conn; an io.PipeReader is
// closed), and stop waits for the reader to return. Where it does not
// (os.Stdin on a pipe or a terminal, which the process's exit ends; any
// other reader), the reader returns once that one read does, and reads
// no more.
func (h *hostReader) stop() {
	close(h.quit)
	select {
	case <-h.done:
		return
	default:
	}
	if interruptRead(h.in) {
		<-h.done
	}
}

// interruptRead ends a read under way on in, if in allows it.
func interruptRead(in io.Reader) bool {
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
		return true
	}
	if p, ok := in.(*io.PipeReader); ok {
		_ = p.CloseWithError(errShutdown)
		return true
	}
	return false
}

// dispatch parses one line and runs its command under the ordering rules
// (package doc). It never blocks on a command's work.
func (s *server) dispatch(l inLine) {
	if l.err != nil {
		s.out.Respond(errResponse(nil, "parse", "Failed to parse command: "+l.err.Error()))
		return
	}
	line := l.b
	if s.chunks.Pending() || isChunk(line) {
		frame, err := s.chunks.Push(line)
		if errors.Is(err, rpcframe.ErrInterrupted) {
			// The sequence is lost, not the frame that cut it short.
			s.out.Respond(errResponse(nil, "parse", "Failed to parse command: "+err.Error()))
			frame, err = s.chunks.Push(line)
		}
		if err != nil {
			s.out.Respond(errResponse(nil, "parse", "Failed to parse command: "+err.Error()))
			return
		}
		if frame == nil {
			return // more chunks to come
		}
		line = frame
	}
	c, err := parseCall(line)
	c.reply = l.reply
	if err != nil {
		// pi answers a line that is no JSON object without an id, and an
		// object without a string type with its id (c.id; nil for the
		// former), so a host waiting for that id is answered.
		s.respond(c, errResponse(c.id, "parse", "Failed to parse command: "+err.Error()))
		return
	}
	c.def = commandsByName[c.typ]
	if c.def == nil {
		// With its id: pi 1.5's and omp's clients wait for it (pi 0.73.1
		// answered without; its client ignores the id either way).
		s.respond(c, errResponse(c.id, c.typ, "Unknown command: "+c.typ))
		return
	}
	if err := c.check(); err != nil {
		s.respond(c, errResponse(c.id, c.typ, err.Error()))
		return
	}
	c.ctx = s.ctx
	if returnSignals[c.typ] {
		s.wake()
	}
	if c.def.kind == preempt {
		if c.def.overtakes {
			c.before = s.order.notBegun()
		}
		s.handle(c)
		return
	}
	c.done, c.early = make(chan struct{}), make(chan struct{})
	if c.def.starts {
		c.begun = make(chan struct{})
		s.order.starting(c)
	}
	deps := s.order.enter(c)
	if c.def.kind == instant && len(deps) == 0 {
		s.handle(c)
		c.finished()
		return
	}
	s.goes.start(func() { // on the dispatcher, before shutdown: never refused
		defer c.finished()
		for _, d := range deps {
			<-d
		}
		s.handle(c)
	})
}

// handle runs c's handler and writes its answer.
func (s *server) handle(c *call) {
	data, err := c.def.handle(s, c)
	s.reply(c, data, err)
}

// reply writes c's answer from what its handler returned: none for
// errAnswered (the handler answered, or will).
func (s *server) reply(c *call, data any, err error) {
	switch {
	case errors.Is(err, errAnswered):
	case err != nil:
		r := errResponse(c.id, c.typ, err.Error())
		var ce *codedError
		if errors.As(err, &ce) {
			r.Code = ce.code
		}
		s.respond(c, r)
	default:
		s.respond(c, okResponse(c.id, c.typ, data))
	}
}

// respond writes c's response: to the host, or to the bridge itself for a
// call it made (internalCall). A starting call has begun once answered.
func (s *server) respond(c *call, r response) {
	c.begin()
	if c.reply != nil {
		c.reply(r)
		return
	}
	s.out.Respond(r)
}

// codedError is a failure whose response carries a code.
type codedError struct {
	code, msg string
}

func (e *codedError) Error() string { return e.msg }

// order is the dispatcher's record of which calls touch what, so a call
// waits only for the earlier ones it must (rule 3 of the package doc).
// Owned by the dispatcher goroutine.
type order struct {
	writer  [3]chan struct{}   // per resource: the last call that writes it
	readers [3][]chan struct{} // per resource: calls that read it since
	begins  []*call            // calls that may start a run, not yet begun when last looked
}

// starting records c, a call that may start a run (def.starts).
func (o *order) starting(c *call) {
	o.prune()
	o.begins = append(o.begins, c)
}

// notBegun is the starting calls sent so far that have not begun.
func (o *order) notBegun() []*call {
	o.prune()
	return slices.Clone(o.begins)
}

// prune drops the starting calls that have begun.
func (o *order) prune() {
	live := o.begins[:0]
	for _, c := range o.begins {
		select {
		case <-c.begun:
		default:
			live = append(live, c)
		}
	}
	clear(o.begins[len(live):])
	o.begins = live
}

// enter records c and returns what it must wait for.
func (o *order) enter(c *call) []<-chan struct{} {
	var deps []<-chan struct{}
	wait := func(ch chan struct{}) {
		if ch == nil {
			return
		}
		select {
		case <-ch: // done: nothing to wait for
		default:
			deps = append(deps, ch)
		}
	}
	for i := range o.writer {
		bit := res(1) << i
		if (c.def.reads|c.def.writes)&bit != 0 {
			wait(o.writer[i])
		}
		if c.def.writes&bit != 0 {
			for _, r := range o.readers[i] {
				wait(r)
			}
		}
	}
	for i := range o.writer {
		bit := res(1) << i
		switch {
		case c.def.writes&bit != 0:
			o.writer[i], o.readers[i] = c.doneFor(bit), o.readers[i][:0]
		case c.def.reads&bit != 0:
			o.readers[i] = appendLive(o.readers[i], c.doneFor(bit))
		}
	}
	return deps
}

// appendLive appends ch to the calls not yet done among rs.
func appendLive(rs []chan struct{}, ch chan struct{}) []chan struct{} {
	live := rs[:0]
	for _, r := range rs {
		select {
		case <-r:
		default:
			live = append(live, r)
		}
	}
	return append(live, ch)
}

// prewarm starts the CLI process the next prompt will run in, when the
// transport keeps one (Options.Prewarm); its goroutine is the bridge's.
// The channel it returns is closed once that process has started (or at
// once, when none is started): its answer about itself is then to come
// (Caps.LiveInfo).
func (s *server) prewarm() <-chan struct{} {
	spawned := make(chan struct{})
	warm := s.capsNow().Warm // nil until planned: the plan's goroutine prewarms
	if warm == nil || !s.opts.Prewarm || s.ctx.Err() != nil || s.runs.busy() {
		// Shutting down: no process to start; busy: the run's turn starts
		// the process it needs.
		close(spawned)
		return spawned
	}
	session, _ := s.cliSession()
	if session.ForkFrom != "" {
		// The CLI makes a fork's transcript when it starts: not before the
		// host prompts.
		close(spawned)
		return spawned
	}
	if !s.goes.start(func() {
		warm(session)
		close(spawned)
		s.runs.post(func() { // a process started while idle rests again
			s.runs.restEnded()
			s.runs.armRest()
		})
		s.commandsChanged()
	}) {
		close(spawned) // shutting down: no process to start
	}
	return spawned
}

// awaitInfo is what the CLI says about itself, waiting until ctx ends:
// once the start goroutine has started the CLI (the pre-warmed process,
// whose answer it waits for, rather than starting a query process beside
// it), as cliInfo.
func (s *server) awaitInfo(ctx context.Context) (claudecli.Info, bool) {
	select {
	case <-s.started:
	case <-ctx.Done():
		return claudecli.Info{}, false
	}
	info, err := s.cliInfo(ctx)
	return info, err == nil
}

// commandsChanged sends omp's available_commands_update when the running
// CLI's commands differ from those last sent (the first time: always).
func (s *server) commandsChanged() {
	live := s.capsNow().LiveInfo
	if live == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, infoTimeout)
	info, ok := live(ctx)
	cancel()
	if !ok {
		return
	}
	s.sendCommands(s.info.withListed(info))
}

// sendCommands keeps info in the info cache and sends omp's
// available_commands_update when its commands differ from those last
// sent.
func (s *server) sendCommands(info claudecli.Info) {
	s.saveCache(&info)
	cmds := availableCommands(info)
	b, _ := json.Marshal(cmds)
	if s.info.commandsChanged(string(b)) {
		s.out.Send(availableCommandsUpdateJSON{Type: "available_commands_update", Commands: cmds})
	}
}

// isChunk reports whether a host line is an rpc_chunk frame (omp's
// framing; a host may chunk a command too long for one line).
func isChunk(line []byte) bool {
	head := line[:min(len(line), 48)]
	return bytes.Contains(head, []byte(`"rpc_chunk"`))
}

// negotiateProtocol handles negotiate_protocol (omp's): version 2 is
// rpc_chunk framing from the frame after the answer on; 1 is whole lines.
func (s *server) negotiateProtocol(c *call) (any, error) {
	v := c.raw.Get("protocolVersion")
	switch {
	case v.Type == gjson.Number && v.Num == 2:
		s.out.RespondThenChunk(okResponse(c.id, c.typ, negotiateData{ProtocolVersion: 2})) // never an internal call
		return nil, errAnswered
	case v.Type == gjson.Number && v.Num == 1:
		return negotiateData{ProtocolVersion: 1}, nil
	}
	return nil, fmt.Errorf("Unsupported RPC protocol version: %s", v.Raw)
}

// setEventFilter handles set_event_filter (omp's): events is an array of
// event types, or null for all.
func (s *server) setEventFilter(c *call) (any, error) {
	v := c.raw.Get("events")
	if !v.Exists() || v.Type == gjson.Null {
		s.out.SetFilter(nil)
		return eventFilterData{}, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("%s: \"events\" must be an array of event types or null, got %s", c.typ, jsonKind(v))
	}
	types := []string{}
	for i, e := range v.Array() {
		if e.Type != gjson.String {
			return nil, fmt.Errorf("%s: events[%d] must be a string, got %s", c.typ, i, jsonKind(e))
		}
		types = append(types, e.String())
	}
	s.out.SetFilter(types)
	return eventFilterData{Events: types}, nil
}

// owedContext is the context of work the bridge owes the session on disk
// after it answered (the CLI writing a name into the transcript): it
// outlives the server's context by the flush wait (Options.flushWait), the time a CLI process that
// finished its turn gets to write its transcript at shutdown. cancel
// releases it.
func (s *server) owedContext() (ctx context.Context, cancel func()) {
	ctx, end := context.WithCancelCause(context.WithoutCancel(s.ctx))
	stop := context.AfterFunc(s.ctx, func() {
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.flushWait):
			end(errShutdown)
		}
	})
	return ctx, func() { stop(); end(nil) }
}

// shutdown ends the running prompt as an abort, cancels what works on
// the server's context (the commands at work, the bash command, requests
// waiting for the host) and waits for every CLI process to exit, giving
// one that already finished its turn time to write its transcript.
func (s *server) shutdown() {
	s.stop(errShutdown)
	s.runs.close()
	s.stopExtensions() // its reader's callbacks (settings, UI) end before the wait below
	s.goes.wait()      // the plan's goroutine among them: the transport is made
	if t, ok := s.transportNow(); ok {
		t.Close(s.opts.flushWait)
	}
	if s.files != nil {
		s.files.close() // after the runs: their last entries are queued
	}
	s.out.Close()
}
