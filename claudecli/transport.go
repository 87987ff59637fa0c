package claudecli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
)

// Transport runs the turns of one conversation through the CLI. The bridge
// drives it without knowing which kind runs: start a turn with a user
// message, read its lines, maybe interrupt it, and close at the end.
//
// Turns are serial: [Transport.Turn] waits until the CLI is ready for a new
// one (the previous per-turn process has written its transcript and exited,
// or the persistent process has finished the previous turn). Calls may
// overlap (a run aborted while its turn starts, then the next prompt): a
// call waits for those before it, and its turn comes after theirs.
type Transport interface {
	// Name is the transport's --transport value, for logs and reports:
	// what the transport can do is [Transport.Caps].
	Name() string
	// Caps is what the transport can do beyond these methods. It is the
	// same for the transport's life and quick to call.
	Caps() Caps
	// Turn starts a turn on session with input, one stream-json user line.
	Turn(session Session, input []byte) (Turn, error)
	// SetConfig changes how the CLI runs from the next turn on (a
	// persistent process is replaced, resuming its session, before it).
	SetConfig(cfg Config)
	// Close ends every CLI process with the shutdown ladder and returns when
	// they have exited. flush bounds how long a process that finished its
	// turn may take to write its transcript before it is signalled.
	Close(flush time.Duration)
}

// Turn is one turn's output. Next and Interrupt may be called from
// different goroutines; Next from one only.
//
// The caller decides when a turn is over (the bridge's run: a result after
// which the CLI holds no steering line of its own), and says so with
// Release; the turn itself only knows when its process ended.
type Turn interface {
	// Next returns the next line the CLI printed for this turn. The slice
	// is valid until the next call. It returns io.EOF when the turn is
	// over: released, or its process ended. A line too long to keep gives
	// an error wrapping jsonl.ErrLineTooLong, and reading goes on. A line
	// longer than [PiecesOver] that [InPieces] accepts comes in pieces as
	// it is read: each but the last with jsonl.ErrPiece, the last as a
	// line (a line over the limit gives ErrLineTooLong after its pieces).
	Next() ([]byte, error)
	// Release says the caller has read the turn's last line: the CLI may
	// take the next turn, and Next returns io.EOF. A per-turn process needs
	// none (its turn ends with it). Safe to call more than once.
	Release()
	// Interrupt asks the CLI to stop the turn; Next then reaches io.EOF
	// soon. Safe to call more than once and after the turn ended.
	Interrupt()
	// Err says, after Next returned io.EOF, how the CLI process that ran
	// the turn ended when it ended abnormally (a per-turn process without
	// a result, a persistent one that died): an [*ExitError]. It is nil
	// when the turn ended normally.
	Err() error
	// Pid is the CLI process's id, for logs.
	Pid() int
}

// Caps is what a transport can do beyond [Transport]'s other methods: the
// one thing a caller asks, rather than the transport's name or type. A
// false field is a thing the transport does not do; a nil func, a method
// it does not have. The funcs may be called from any goroutine.
type Caps struct {
	// Persistent: one CLI process runs turn after turn and goes on between
	// them (the stream transport). What the CLI started in the background
	// during a turn (a sub-agent) may print in a later turn, or in a turn
	// of its own (OnOwnTurn); so a turn may begin with lines that are not
	// its input's, and the CLI reports a user line given with a uuid
	// ([UserLineID]) in a command_lifecycle line ([Lifecycle]) that tells
	// where that input's turn begins. False: each turn is a process of its
	// own, and every line it prints is the turn's.
	Persistent bool
	// Steer: the transport's turns are [Steerer]s, which take user lines
	// while they run. False: a turn takes its input only.
	Steer bool
	// Control: the CLI reaches [Config.Host] while a turn runs: it calls
	// the tools the host serves ([Config.SDKServers]), asks before a tool
	// that needs permission ([Config.AskPermissions]) and runs the host's
	// tool hooks ([Config.ToolHooks]) — over the control protocol
	// (stream) or through the relay (pipe, pty: relay.go; the CLI's own
	// dialogs and ControlRequest need the control protocol). False: Host
	// is never called.
	Control bool

	// LiveInfo, when set, is what the running CLI process said about
	// itself (its initialize answer): asking costs no process of its own.
	// It waits for the answer of a process still starting (or about to,
	// once the one it replaces has exited), until ctx is done; false when
	// no process runs or it did not answer. With ctx done already it
	// never waits.
	LiveInfo func(ctx context.Context) (Info, bool)
	// Rename, when set, names session through the process that runs it,
	// at once, and waits for the CLI's answer. It returns [ErrNotRunning]
	// when no process of the transport runs the session.
	Rename func(session Session, title string) error
	// ControlRequest, when set, sends req (a control request of the CLI's:
	// its subtype and fields, as the Agent SDK's types name them) to the
	// running CLI process and waits, until ctx is done, for its answer: the
	// success response's payload, or an error saying the CLI refused it
	// (its message), exited or did not answer. It returns [ErrNotRunning]
	// when no process runs (it waits for one still starting). For what
	// lives in the process, not in the session: its background tasks.
	ControlRequest func(ctx context.Context, req map[string]any) (gjson.Result, error)
	// Task, when set, is a task (a sub-agent, a Bash command …) the
	// running CLI process started, by its task_id: [ErrUnknownTask] when
	// that process printed no task_started for it (a task of a process
	// that was replaced is not its), [ErrNotRunning] when no process runs.
	// An ended task stays known (the last 1024 that ended).
	Task func(id string) (Task, error)
	// Warm, when set, starts and initializes the process the next turn on
	// session would run in, so that turn does not wait for the CLI's
	// start-up; it does nothing when that process runs already, a turn
	// is under way, or a turn's change of process is. The CLI calls no API and writes no transcript until it
	// is given a user line (2.1.328; TestPrewarm checks it). It blocks
	// while the process starts.
	Warm func(session Session)
	// Rest, when set, ends the process between turns while it rests, as
	// Close ends it (stdin closed, its transcript flushed, then stopped),
	// and keeps everything else (the config, the session): the next turn,
	// or Warm, resumes the session in a new process. It returns at once:
	// the process exits on a goroutine of its own, and a turn or Warm that
	// comes meanwhile waits for that exit (the transcript written) before
	// it starts the new one, so no turn is lost and no two processes run
	// the session. It releases nothing and returns an error saying why
	// when the process does not rest: a turn is open (the caller's, or
	// one the CLI began by itself), one of its tasks (a background
	// sub-agent or command) has not ended, a control request of the
	// CLI's (a permission dialog, a host tool call) or of the
	// transport's is being answered, it is still starting, or a change
	// of process is under way; then the caller may try again later.
	// released is false, with no error, when no process runs. A released
	// process's lines begin no turn of its own ([Caps.OnOwnTurn]).
	// Per-turn transports have none: they hold no process between turns.
	Rest func() (released bool, err error)
	// Quiesce, when set, waits until the previous turn is over to the end:
	// a per-turn process writes its transcript as it exits, after its last
	// line. What the caller decides next (resume the session, or create
	// it) then sees the transcript as the CLI left it.
	Quiesce func()
	// OnOwnTurn, when set, says the CLI runs turns by itself between the
	// caller's (a Persistent process), and sets f, which the transport
	// calls on a goroutine of its own with each turn the CLI begins by
	// itself: the CLI printed a line while no turn was open. The process
	// is read at all times: until f's caller claims the turn (or a turn
	// of the caller's takes it over), its lines wait. What it relies on
	// (the CLI 2.1.328; testdata/cli/subagent-background-idle records
	// it): with no user line pending, the CLI prints nothing unless
	// something it runs in the background moves (a background sub-agent's
	// lines, task_* system lines, then a turn of its own: init … result).
	OnOwnTurn func(f func(OwnTurn))
}

// Flags is c without its funcs: what a transport does, not the means to
// ask it.
func (c Caps) Flags() Caps {
	return Caps{Persistent: c.Persistent, Steer: c.Steer, Control: c.Control}
}

// CapsOf is what the transport [New] makes of name can do, for a caller
// that must know before one is made (a flag's check, the bridge until the
// CLI's plan is made): the [Caps.Flags] of the one New makes, which starts
// nothing. A name New refuses (pty where it is not available, an unknown
// one) can do nothing.
func CapsOf(name string) Caps {
	t, err := New(name, Config{}, 0)
	if err != nil {
		return Caps{}
	}
	return t.Caps().Flags()
}

// Transport names accepted by [New].
const (
	TransportPipe   = "pipe"
	TransportPTY    = "pty"
	TransportStream = "stream"
)

// Transports are the names [New] accepts, the default first; New may
// still refuse one on this system (pty).
func Transports() []string { return []string{TransportStream, TransportPipe, TransportPTY} }

// errUnknownTransport is returned by [New] for a name it does not know.
var errUnknownTransport = errors.New("unknown transport")

// New returns the transport called name: "pipe", "pty" or "stream".
func New(name string, cfg Config, maxLine int) (Transport, error) {
	switch name {
	case TransportPipe:
		return &perTurn{cfg: cfg, maxLine: maxLine, name: name, start: startTurn}, nil
	case TransportPTY:
		if !ptySupported {
			return nil, fmt.Errorf("the pty transport is not available on this system; use pipe or stream")
		}
		return &perTurn{cfg: cfg, maxLine: maxLine, name: name, start: startPTYTurn}, nil
	case TransportStream:
		return newStream(cfg, maxLine), nil
	}
	return nil, fmt.Errorf("%w %q: choose pipe, pty or stream", errUnknownTransport, name)
}

// perTurn runs one CLI process per turn: the pipe and pty transports.
type perTurn struct {
	cfg     Config
	maxLine int
	name    string
	start   func(Config, Session, []byte) (*cliProcess, error)

	turns sync.Mutex // held through Turn: one call at a time, in order
	// relay puts the turns in the loop with Config.Host (relay.go):
	// started by the first turn that needs it, closed by Close. Turn's
	// alone (under turns), and Close's once it holds turns.
	relay *relay

	mu   sync.Mutex  // guards last and cfg; never held while waiting
	last *cliProcess // the newest process, maybe still writing its transcript
}

func (t *perTurn) Name() string { return t.name }

// Caps: a per-turn transport quiesces, and its turns reach Config.Host
// through the relay (Control); it does nothing else of [Caps].
func (t *perTurn) Caps() Caps { return Caps{Control: true, Quiesce: t.Quiesce} }

func (t *perTurn) SetConfig(cfg Config) {
	t.mu.Lock()
	t.cfg = cfg
	t.mu.Unlock()
}

// Quiesce is [Caps.Quiesce]: it waits (up to flushWait) for the previous
// turn's process to exit.
func (t *perTurn) Quiesce() {
	t.mu.Lock()
	prev := t.last
	t.mu.Unlock()
	if prev != nil {
		waitOrStop(prev, flushWait)
	}
}

func (t *perTurn) Turn(session Session, input []byte) (Turn, error) {
	t.turns.Lock()
	defer t.turns.Unlock()
	t.mu.Lock()
	prev := t.last
	t.mu.Unlock()
	// The previous turn's process writes its transcript after its result;
	// resuming before it exits could miss the end of that turn.
	if prev != nil {
		waitOrStop(prev, flushWait)
	}
	t.mu.Lock()
	cfg := t.cfg
	t.mu.Unlock()
	var ended func()
	if cfg.Host != nil && (cfg.AskPermissions || len(cfg.SDKServers) > 0 || cfg.ToolHooks) {
		if t.relay == nil {
			r, err := startRelay(cfg.Log)
			if err != nil {
				return nil, err
			}
			t.relay = r
		}
		args, end, err := t.relay.open(cfg)
		if err != nil {
			return nil, fmt.Errorf("the relay for the CLI's tool calls and permission prompts: %w", err)
		}
		cfg.relayArgs, ended = args, end
	}
	p, err := t.start(cfg, session, input)
	if err != nil {
		if ended != nil {
			ended()
		}
		return nil, err
	}
	if ended != nil {
		go func() { <-p.Done(); ended() }()
	}
	t.mu.Lock()
	t.last = p
	t.mu.Unlock()
	lr := jsonl.NewReader(p.Stdout(), t.maxLine)
	lr.SetPieces(PiecesOver, InPieces)
	return &processTurn{p: p, lr: lr}, nil
}

func (t *perTurn) Close(flush time.Duration) {
	t.mu.Lock()
	last := t.last
	t.mu.Unlock()
	if last != nil {
		waitOrStop(last, flush)
	}
	t.turns.Lock() // a turn starting now finishes starting first
	defer t.turns.Unlock()
	if t.relay != nil {
		t.relay.close()
		t.relay = nil
	}
}

// flushWait bounds how long a turn waits for the previous process to exit.
var flushWait = 10 * time.Second

// waitOrStop waits up to d for p to exit on its own, then stops it.
func waitOrStop(p *cliProcess, d time.Duration) {
	select {
	case <-p.Done():
	case <-time.After(d):
		p.Stop()
	}
}

// processTurn is a turn that is a whole process: its lines until EOF.
type processTurn struct {
	p         *cliProcess
	lr        *jsonl.Reader
	sawResult bool
	// A long line being read in pieces: the last bytes of the last
	// piece, and whether its pieces so far say it is a result (its type
	// may come after its text).
	inPiece  bool
	pieceEnd []byte
	resultIn bool
}

// saysResult reports whether a piece, after the last one's end, has
// resultType, and keeps the piece's end for the next.
func (t *processTurn) saysResult(piece []byte) bool {
	n := len(resultType)
	found := bytes.Contains(append(t.pieceEnd, piece[:min(len(piece), n)]...), resultType) || bytes.Contains(piece, resultType)
	t.pieceEnd = append(t.pieceEnd[:0], piece[max(0, len(piece)-n):]...)
	return found
}

// resultType is how a result line says it is one.
var resultType = []byte(`"type":"result"`)

// PiecesOver is the length past which a line of the CLI's is handed over
// in pieces as it is read ([Turn]), when [InPieces] accepts it: the
// translator reads it as it comes (transform.Translator.Piece), where a
// whole line would be held once more, twice while its pieces are joined.
// Below it, lines are read whole: the CLI's stream_event lines are a few
// hundred bytes.
const PiecesOver = 64 << 10

// InPieces reports whether a long line starting with head is handed over
// in pieces: any but the control protocol's and system lines, which the
// transports read whole.
func InPieces(head []byte) bool {
	return !bytes.HasPrefix(head, []byte(`{"type":"control_`)) && !bytes.HasPrefix(head, []byte(`{"type":"system"`))
}

func (t *processTurn) Next() ([]byte, error) {
	line, err := t.lr.Next()
	if t.p.clean != nil && (t.inPiece || errors.Is(err, jsonl.ErrPiece)) {
		line = t.p.clean(line) // (a sequence cut between two pieces stays)
	}
	if errors.Is(err, jsonl.ErrPiece) {
		t.inPiece = true
		t.resultIn = t.resultIn || t.saysResult(line)
		return line, err
	}
	if t.inPiece { // the last piece of a long line, or its end
		t.sawResult = t.sawResult || err == nil && (t.resultIn || t.saysResult(line))
		t.inPiece, t.resultIn, t.pieceEnd = false, false, t.pieceEnd[:0]
		if err == nil {
			return line, nil
		}
	}
	if errors.Is(err, jsonl.ErrLineTooLong) {
		return nil, err
	}
	if err != nil {
		<-t.p.Done()
		return nil, io.EOF
	}
	if t.p.clean != nil {
		if line = t.p.clean(line); len(line) == 0 {
			return t.Next() // a line that was only terminal noise (the cursor shown again at exit)
		}
	}
	if IsResult(line) {
		t.sawResult = true
	}
	return line, nil
}

func (t *processTurn) Interrupt() { go t.p.Stop() }

func (t *processTurn) Release() {}

func (t *processTurn) Err() error {
	if t.sawResult {
		return nil
	}
	return t.p.Exit()
}

func (t *processTurn) Pid() int { return t.p.Pid() }
