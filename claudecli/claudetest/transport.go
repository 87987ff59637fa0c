package claudetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// Transport is a scripted [claudecli.Transport]: each turn runs a Scenario
// on a goroutine of its own, which plays the CLI: it emits lines (recorded
// ones, see [Recording]), waits for steering lines or an interrupt, asks
// the host control requests, or dies. It lets the bridge's orchestration be
// tested without a CLI: fast, and at every point a real CLI would be hard
// to stop at.
//
// Like the stream transport, its turns take steering ([claudecli.Steerer])
// and are over when the caller releases them; a turn waits for the previous
// one to be over.
type Transport struct {
	// Scenarios are played by successive turns; when they run out, the
	// last one is played again.
	Scenarios []Scenario
	// Info is what LiveInfo answers; nil: no live CLI (the caller asks
	// another way).
	Info *claudecli.Info
	// Per is true for a per-turn transport (pipe, pty): no steering, and a
	// turn ends when its scenario returns, released or not.
	Per bool
	// Hold, when set, is waited for by Turn before it starts a turn: the
	// previous CLI process taking its time to exit, or a slow start.
	Hold <-chan struct{}

	starting sync.Mutex // held through Turn: calls are taken in order, as the real ones

	mu     sync.Mutex
	n      int
	cfg    claudecli.Config
	last   *Turn
	inputs [][]byte
	turns  []*Turn
	closed bool
	onOwn  func(claudecli.OwnTurn)
}

// Scenario plays one CLI turn.
type Scenario func(t *Turn)

// Name is the transport it plays: pipe when Per, else stream.
func (f *Transport) Name() string {
	if f.Per {
		return claudecli.TransportPipe
	}
	return claudecli.TransportStream
}

// Caps are those of the transport it plays ([claudecli.CapsOf]), with
// LiveInfo and OnOwnTurn whatever Per says (Info and the scenarios decide
// what they give); it neither warms, renames nor quiesces.
func (f *Transport) Caps() claudecli.Caps {
	c := claudecli.CapsOf(f.Name())
	c.LiveInfo, c.OnOwnTurn = f.LiveInfo, f.OnOwnTurn
	return c
}

// SetConfig keeps cfg; its Host answers the scenarios' Ask.
func (f *Transport) SetConfig(cfg claudecli.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
}

// Config is the config the transport was last given.
func (f *Transport) Config() claudecli.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg
}

// Inputs are the user lines the transport was given, turns' and steering
// ones, in order.
func (f *Transport) Inputs() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.inputs...)
}

// Turns are the turns started so far.
func (f *Transport) Turns() []*Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Turn(nil), f.turns...)
}

// LiveInfo answers Info, if set.
func (f *Transport) LiveInfo(context.Context) (claudecli.Info, bool) {
	if f.Info == nil {
		return claudecli.Info{}, false
	}
	return *f.Info, true
}

// Turn starts the next scenario once the previous turn is over.
func (f *Transport) Turn(session claudecli.Session, input []byte) (claudecli.Turn, error) {
	f.starting.Lock()
	defer f.starting.Unlock()
	f.mu.Lock()
	prev := f.last
	f.mu.Unlock()
	if prev != nil && !(prev.own && prev.take()) {
		<-prev.over
	}
	if f.Hold != nil {
		<-f.Hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("fake transport: closed")
	}
	if len(f.Scenarios) == 0 {
		return nil, errors.New("fake transport: no scenario")
	}
	sc := f.Scenarios[min(f.n, len(f.Scenarios)-1)]
	f.n++
	t := newTurn(f, session, input)
	f.last = t
	f.inputs = append(f.inputs, input)
	f.turns = append(f.turns, t)
	go t.play(sc)
	return t, nil
}

func newTurn(f *Transport, session claudecli.Session, input []byte) *Turn {
	return &Turn{f: f, Session: session, Input: input, lines: make(chan []byte), steers: make(chan Steer, 16),
		interrupted: make(chan struct{}), released: make(chan struct{}), over: make(chan struct{}), played: make(chan struct{})}
}

// OnOwnTurn is [claudecli.Caps.OnOwnTurn]: f gets the turns [Transport.Own]
// plays.
func (f *Transport) OnOwnTurn(fn func(claudecli.OwnTurn)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onOwn = fn
}

// Own plays sc as a turn the CLI begins by itself while idle, as the
// stream transport offers one ([claudecli.Caps.OnOwnTurn]): once the previous
// turn is over, the turn is offered to OnOwnTurn's function (on a
// goroutine) and sc plays. Unlike the stream transport, a turn that takes
// it over unclaimed does not get its lines (they are dropped).
func (f *Transport) Own(sc Scenario) *Turn {
	f.mu.Lock()
	prev := f.last
	f.mu.Unlock()
	if prev != nil {
		<-prev.over
	}
	f.mu.Lock()
	t := newTurn(f, claudecli.Session{}, nil)
	t.own = true
	f.last = t
	f.turns = append(f.turns, t)
	fn := f.onOwn
	f.mu.Unlock()
	go t.play(sc)
	if fn != nil {
		go fn(t)
	}
	return t
}

// Claim implements [claudecli.OwnTurn].
func (t *Turn) Claim() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claim == 0 {
		t.claim = 1
	}
	return t.claim == 1
}

// take takes an own turn nobody claimed over for a new turn.
func (t *Turn) take() bool {
	t.mu.Lock()
	if t.claim != 0 {
		t.mu.Unlock()
		return false
	}
	t.claim = 2
	t.mu.Unlock()
	t.Release()
	return true
}

// Close ends the transport: the turn still playing is interrupted, and
// Close waits for its scenario to return.
func (f *Transport) Close(time.Duration) {
	f.mu.Lock()
	f.closed = true
	last := f.last
	f.mu.Unlock()
	if last != nil {
		last.Interrupt()
		last.Release()
		<-last.played
	}
}

// Turn is one scripted turn; its methods are the scenario's (Emit, …) and
// the caller's (claudecli.Turn).
type Turn struct {
	f       *Transport
	Session claudecli.Session
	Input   []byte

	lines       chan []byte
	steers      chan Steer
	interrupted chan struct{}
	released    chan struct{}
	over        chan struct{} // released, or (per-turn) played
	played      chan struct{} // the scenario returned
	err         error         // set by Die, before played

	intOnce, relOnce, overOnce sync.Once
	mu                         sync.Mutex
	steered                    []Steer
	taken, cancelled           map[string]bool // steering lines by uuid: the scenario's (Take), the caller's (Cancel)
	own                        bool            // played by Own
	claim                      int             // an own turn's offer: 0 offered, 1 claimed, 2 taken over
}

// Steer is a steering line the caller handed to the turn.
type Steer struct {
	UUID string
	Line []byte
}

func (t *Turn) play(sc Scenario) {
	defer func() {
		close(t.played)
		if t.f.Per || t.err != nil {
			t.overOnce.Do(func() { close(t.over) })
		}
	}()
	if id := gjson.GetBytes(t.Input, "uuid").String(); id != "" && !t.f.Per {
		// As the CLI reports on a user line given with a uuid, before the
		// lines of its turn (the recordings' prompts had none).
		if !t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + id + `","state":"started"}`) {
			return
		}
	}
	sc(t)
}

// Next returns the scenario's next line.
func (t *Turn) Next() ([]byte, error) {
	select {
	case l := <-t.lines:
		return l, nil
	case <-t.played:
		select { // lines emitted before the scenario returned come first
		case l := <-t.lines:
			return l, nil
		default:
		}
		return nil, io.EOF
	case <-t.released:
		return nil, io.EOF
	}
}

// Release ends the turn for the caller.
func (t *Turn) Release() {
	t.relOnce.Do(func() { close(t.released) })
	t.overOnce.Do(func() { close(t.over) })
}

// Interrupt is seen by the scenario (Interrupted).
func (t *Turn) Interrupt() { t.intOnce.Do(func() { close(t.interrupted) }) }

// Err is what Die gave.
func (t *Turn) Err() error {
	<-t.played
	return t.err
}

// Pid is 0: no process.
func (t *Turn) Pid() int { return 0 }

// Steer takes a steering line (stream transports only).
func (t *Turn) Steer(uuid string, line []byte) bool {
	if t.f.Per {
		return false
	}
	select {
	case <-t.released:
		return false
	case <-t.interrupted:
		return false
	default:
	}
	t.mu.Lock()
	t.steered = append(t.steered, Steer{uuid, line})
	t.mu.Unlock()
	t.f.mu.Lock()
	t.f.inputs = append(t.f.inputs, line)
	t.f.mu.Unlock()
	t.steers <- Steer{uuid, line}
	return true
}

// Cancel takes back a steering line the scenario has not taken (Take), as
// the CLI's cancel_async_message does with a line it has not dequeued.
func (t *Turn) Cancel(uuid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taken[uuid] || !slices.ContainsFunc(t.steered, func(s Steer) bool { return s.UUID == uuid }) {
		return false
	}
	if t.cancelled == nil {
		t.cancelled = map[string]bool{}
	}
	t.cancelled[uuid] = true
	return true
}

// Take is the scenario taking a steering line off the CLI's queue (the
// model gets it): the caller can no longer Cancel it. It reports false
// when the caller cancelled it first.
func (t *Turn) Take(uuid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancelled[uuid] {
		return false
	}
	if t.taken == nil {
		t.taken = map[string]bool{}
	}
	t.taken[uuid] = true
	return true
}

// Emit sends lines to the caller, one at a time; it reports false, sending
// no more, once the caller released the turn.
func (t *Turn) Emit(lines ...[]byte) bool {
	for _, l := range lines {
		select {
		case t.lines <- l:
		case <-t.released:
			return false
		}
	}
	return true
}

// EmitString is Emit for one line.
func (t *Turn) EmitString(line string) bool { return t.Emit([]byte(line)) }

// WaitSteer waits for a steering line; false when interrupted or released
// first.
func (t *Turn) WaitSteer() (Steer, bool) {
	select {
	case s := <-t.steers:
		return s, true
	case <-t.interrupted:
	case <-t.released:
	}
	return Steer{}, false
}

// Interrupted is closed when the caller interrupts the turn.
func (t *Turn) Interrupted() <-chan struct{} { return t.interrupted }

// Released is closed when the caller releases the turn.
func (t *Turn) Released() <-chan struct{} { return t.released }

// Die ends the turn as a process that died: Next reaches io.EOF and Err
// says err. Call it last.
func (t *Turn) Die(err error) { t.err = err }

// Ask sends a control request to the host the config names, as the CLI
// does, and returns its answer.
func (t *Turn) Ask(ctx context.Context, req claudecli.ControlRequest) (any, error) {
	h := t.f.Config().Host
	if h == nil {
		return nil, errors.New("fake transport: no host")
	}
	return h(ctx, req)
}

// Recording is a recorded CLI stream of testdata/cli (scripts/record): the
// lines the CLI printed, and the user lines it was given (the prompt, and
// any steering line, whose uuid the stream's command_lifecycle lines name).
type Recording struct {
	Lines  [][]byte
	Inputs [][]byte
}

// LoadRecording reads testdata/cli/<name>.jsonl (and .input.jsonl) from the
// repository; dir is the path from the caller's package to the repository's
// root ("..", "../..").
func LoadRecording(dir, name string) (Recording, error) {
	out, err := os.ReadFile(filepath.Join(dir, "testdata", "cli", name+".jsonl"))
	if err != nil {
		return Recording{}, err
	}
	in, err := os.ReadFile(filepath.Join(dir, "testdata", "cli", name+".input.jsonl"))
	if err != nil {
		return Recording{}, err
	}
	split := func(b []byte) [][]byte { return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) }
	return Recording{Lines: split(out), Inputs: split(in)}, nil
}

// Replace returns lines with old replaced by new in each (a recorded
// steering uuid by the one the bridge chose).
func Replace(lines [][]byte, old, new string) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = bytes.ReplaceAll(l, []byte(old), []byte(new))
	}
	return out
}
