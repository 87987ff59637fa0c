package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/claude-rpc/claude-rpc/bridge/rpcframe"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// The bridge's run orchestration, against a scripted fake transport
// (claudetest.Transport) replaying recorded CLI streams: no CLI, so every
// point of a run can be reached, and fast. The end-to-end tests
// (cmd/claude-rpc) drive the same through the real CLI.

// rig is one bridge under test: the host's side of its stdin and stdout.
// Its verbs are those of cmd/claude-rpc's rpcProc (the same bridge as a
// process, on the real CLI) where the act is the same: send, call, next,
// until. sendf and answer send a command now and take its response later;
// event waits for an event.
type rig struct {
	t      *testing.T
	fake   *claudetest.Transport
	in     *io.PipeWriter
	frames chan gjson.Result
	seen   []gjson.Result // every frame read so far, in order
	held   []gjson.Result // frames read by call while it waited for its response
	done   chan error
	seq    int
}

// waitFor bounds every wait of these tests; a hang fails the test.
const waitFor = 10 * time.Second

func newRig(t *testing.T, fake *claudetest.Transport, opts Options) *rig {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	opts = rigOptions(t, fake, opts)
	before := goleak.IgnoreCurrent()
	alone := rigs.start()
	r := &rig{t: t, fake: fake, in: inW, frames: make(chan gjson.Result, 1024), done: make(chan error, 1)}
	go func() {
		r.done <- Serve(context.Background(), inR, outW, opts)
		_ = outW.Close()
	}()
	go func() {
		defer close(r.frames)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if first {
				// omp's ready frame comes first, before any command.
				first = false
				if gjson.Get(line, "type").String() != "ready" {
					t.Errorf("the first frame is not ready: %.200s", line)
				}
				continue
			}
			if err := checkFrame([]byte(line)); err != nil {
				t.Errorf("frame not in the protocol reference: %v\n%.300s", err, line)
			}
			r.frames <- gjson.Parse(line)
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-r.done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Error("Serve did not return after stdin ended")
			return
		}
		// Every goroutine the bridge started has ended with Serve. A rig
		// that lived beside another (parallel tests) cannot tell their
		// goroutines apart: TestMain's check covers it.
		if rigs.end(alone) {
			goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("testing.(*testState).waitParallel"))
		}
	})
	return r
}

// rigs tells whether a rig lived alone: no other rig was alive at any
// moment of its life, so the goroutines that started since it did are its
// own (or a parallel test's waiting to run).
var rigs rigCount

type rigCount struct {
	mu     sync.Mutex
	live   int
	shared map[*bool]bool // the live rigs' flags: set when another rig lives beside them
}

// start counts a new rig and returns its flag.
func (c *rigCount) start() *bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shared == nil {
		c.shared = map[*bool]bool{}
	}
	flag := new(bool)
	if c.live > 0 {
		*flag = true
		for f := range c.shared {
			*f = true
		}
	}
	c.shared[flag] = true
	c.live++
	return flag
}

// end counts a rig's end and reports whether it lived alone.
func (c *rigCount) end(flag *bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live--
	delete(c.shared, flag)
	return !*flag
}

// rigOptions are opts for a bridge under test on fake: in folders of the
// test's, with no CLI to ask for its models.
func rigOptions(t *testing.T, fake *claudetest.Transport, opts Options) Options {
	t.Helper()
	opts.UseTransport = fake
	if opts.CLI.Dir == "" {
		opts.CLI.Dir = t.TempDir()
	}
	opts.CLI.Env = append(opts.CLI.Env, "CLAUDE_CONFIG_DIR="+t.TempDir())
	if opts.query == nil {
		opts.query = func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
			return claudecli.Info{}, errors.New("no CLI in these tests")
		}
	}
	return opts
}

// sendf writes a command, format with args, with the next id ("c1", "c2",
// …), which it returns for answer.
func (r *rig) sendf(format string, args ...any) string {
	r.t.Helper()
	r.seq++
	id := fmt.Sprintf("c%d", r.seq)
	line := fmt.Sprintf(format, args...)
	r.send(`{"id":"` + id + `",` + strings.TrimPrefix(line, "{"))
	return id
}

// send writes one line (a newline is added).
func (r *rig) send(line string) {
	r.t.Helper()
	_, err := io.WriteString(r.in, line+"\n")
	require.NoError(r.t, err)
}

// call sends a command with the next id and returns its response. Frames
// that come first (events of a running prompt, answers to commands sent
// without waiting) are held for next.
func (r *rig) call(v map[string]any) gjson.Result {
	r.t.Helper()
	r.seq++
	id := fmt.Sprintf("c%d", r.seq)
	v["id"] = id
	line, err := json.Marshal(v)
	require.NoError(r.t, err)
	r.send(string(line))
	deadline := time.Now().Add(waitFor)
	for {
		f := r.read(time.Until(deadline))
		if f.Get("type").String() == "response" && f.Get("id").String() == id {
			return f
		}
		r.held = append(r.held, f)
	}
}

// next returns the next frame (first those call held), failing the test
// after timeout.
func (r *rig) next(timeout time.Duration) gjson.Result {
	r.t.Helper()
	if len(r.held) > 0 {
		f := r.held[0]
		r.held = r.held[1:]
		return f
	}
	return r.read(timeout)
}

// read takes the next frame from stdout.
func (r *rig) read(timeout time.Duration) gjson.Result {
	r.t.Helper()
	select {
	case f, ok := <-r.frames:
		require.True(r.t, ok, "stdout ended")
		r.seen = append(r.seen, f)
		return f
	case <-time.After(timeout):
		r.t.Fatalf("no frame within %v; seen so far:\n%s", timeout, r.summary())
	}
	return gjson.Result{}
}

// until reads frames until one satisfies match and returns all of them, the
// match last.
func (r *rig) until(timeout time.Duration, match func(gjson.Result) bool) []gjson.Result {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	var out []gjson.Result
	for {
		f := r.next(time.Until(deadline))
		out = append(out, f)
		if match(f) {
			return out
		}
	}
}

// answer waits for the response to id (sent by sendf).
func (r *rig) answer(id string) gjson.Result {
	r.t.Helper()
	isAnswer := func(f gjson.Result) bool {
		return f.Get("type").String() == "response" && f.Get("id").String() == id
	}
	for _, f := range r.seen {
		if isAnswer(f) {
			return f
		}
	}
	return last(r.until(waitFor, isAnswer))
}

// event waits for an event of type typ and returns it.
func (r *rig) event(typ string) gjson.Result {
	r.t.Helper()
	return last(r.until(waitFor, func(f gjson.Result) bool { return f.Get("type").String() == typ }))
}

func last(frames []gjson.Result) gjson.Result { return frames[len(frames)-1] }

// kinds lists the frames seen: event types, and responses as
// "response:<id>".
func (r *rig) kinds() []string {
	var out []string
	for _, f := range r.seen {
		k := f.Get("type").String()
		if k == "response" {
			k += ":" + f.Get("id").String()
		}
		out = append(out, k)
	}
	return out
}

func (r *rig) summary() string {
	var b strings.Builder
	for _, f := range r.seen {
		fmt.Fprintf(&b, "  %.160s\n", f.Raw)
	}
	return b.String()
}

// index is the position of kind among the frames seen, -1 if absent.
func (r *rig) index(kind string) int {
	for i, k := range r.kinds() {
		if k == kind {
			return i
		}
	}
	return -1
}

func recording(t *testing.T, name string) claudetest.Recording {
	t.Helper()
	rec, err := claudetest.LoadRecording("..", name)
	require.NoError(t, err)
	return rec
}

// replay plays a recording whole.
func replay(rec claudetest.Recording) claudetest.Scenario {
	return func(t *claudetest.Turn) { t.Emit(rec.Lines...) }
}

// resultLine is a recorded result line, to end a scripted turn.
func resultLine(t *testing.T) []byte {
	rec := recording(t, "text")
	return rec.Lines[len(rec.Lines)-1]
}

// stallUntilInterrupt plays the first n lines of rec, then waits for the
// interrupt, then (after delay) ends the turn with a result, as the CLI
// ends an interrupted turn.
func stallUntilInterrupt(rec claudetest.Recording, n int, result []byte, delay time.Duration) claudetest.Scenario {
	return func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:n]...)
		select {
		case <-t.Interrupted():
		case <-t.Released():
			return
		}
		time.Sleep(delay)
		t.Emit(result)
		<-t.Released()
	}
}

func texts(msgs gjson.Result) []string {
	var out []string
	for _, m := range msgs.Array() {
		var parts []string
		for _, c := range m.Get("content").Array() {
			if c.Get("type").String() == "text" {
				parts = append(parts, c.Get("text").String())
			}
		}
		out = append(out, m.Get("role").String()+":"+strings.Join(parts, ""))
	}
	return out
}

func TestRunPromptRepliesInOrder(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(rec)}}, Options{})
	id := r.sendf(`{"type":"prompt","message":"hi"}`)
	end := r.event("agent_end")
	assert.Equal(t, []string{"response:" + id, "agent_start", "turn_start", "message_start", "message_end"}, r.kinds()[:5],
		"the prompt is answered before agent_start")
	assert.Equal(t, "assistant", end.Get("messages.1.role").String())
	assert.True(t, end.Get("isTerminal").Bool() && end.Get("yielded").Bool() && end.Get("willRetry").Exists())
	res := r.event("prompt_result")
	assert.Equal(t, id, res.Get("id").String())
	assert.Equal(t, "completed", res.Get("status").String())
	assert.True(t, res.Get("sessionSettled").Bool())
	assert.False(t, r.event("agent_settled").Get("aborted").Bool())
	r.event("session_settled")
	state := r.call(map[string]any{"type": "get_state"})
	assert.True(t, state.Get("data.isSettled").Bool())
	msgs := r.call(map[string]any{"type": "get_messages"})
	assert.Len(t, msgs.Get("data.messages").Array(), 2, "the run's messages join the session")
	assert.Equal(t, "hi", gjson.Parse(string(r.fake.Inputs()[0])).Get("message.content").String())
}

func TestRunAbortIsAnsweredAfterAgentEnd(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{
		stallUntilInterrupt(rec, 6, resultLine(t), 50*time.Millisecond), replay(rec)}}, Options{})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.until(waitFor, func(f gjson.Result) bool { return f.Get("assistantMessageEvent.type").String() == "text_delta" })
	abort := r.sendf(`{"type":"abort"}`)
	end := r.event("agent_end")
	assert.Equal(t, "aborted", end.Get("messages.1.stopReason").String())
	r.answer(abort)
	assert.Less(t, r.index("agent_end"), r.index("response:"+abort), "abort answers after agent_end")
	assert.Equal(t, []string{"agent_end", "prompt_result", "agent_settled", "session_settled", "response:" + abort},
		r.kinds()[r.index("agent_end"):], "agent_end, then the settled events, then abort's answer")
	assert.True(t, r.seen[r.index("agent_settled")].Get("aborted").Bool())
	assert.Equal(t, "aborted", r.seen[r.index("prompt_result")].Get("status").String())
	// The next prompt runs once the aborted turn is over.
	r.sendf(`{"type":"prompt","message":"again"}`)
	end = r.event("agent_end")
	assert.Equal(t, "stop", end.Get("messages.1.stopReason").String())
}

// TestRunAbortWhileTurnStarts: while the transport starts the run's CLI
// turn (it waits for the previous CLI process to exit), commands are
// answered, and an abort ends the run at once; the turn, once started, is
// interrupted and drained unseen, and the next prompt runs after it.
func TestRunAbortWhileTurnStarts(t *testing.T) {
	for _, per := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "per-turn"}[per], func(t *testing.T) {
			rec := recording(t, "text")
			hold := make(chan struct{})
			fake := &claudetest.Transport{Per: per, Hold: hold, Scenarios: []claudetest.Scenario{
				stallUntilInterrupt(rec, 0, resultLine(t), 0), replay(rec)}}
			r := newRig(t, fake, Options{})
			r.sendf(`{"type":"prompt","message":"hi"}`)
			r.event("agent_start")
			for _, q := range []string{"set_thinking_level", "get_state", "get_messages", "get_session_stats"} {
				assert.True(t, r.call(map[string]any{"type": q, "level": "high"}).Get("success").Bool(), q)
			}
			abort := r.sendf(`{"type":"abort"}`)
			end := r.event("agent_end")
			r.answer(abort)
			assert.Equal(t, "aborted", last(end.Get("messages").Array()).Get("stopReason").String())
			assert.Empty(t, fake.Turns(), "answered before the turn started")
			close(hold)
			r.sendf(`{"type":"prompt","message":"again"}`)
			end = r.event("agent_end")
			assert.Equal(t, "stop", end.Get("messages.1.stopReason").String())
			require.Len(t, fake.Turns(), 2)
			select {
			case <-fake.Turns()[0].Interrupted():
			default:
				t.Error("the aborted run's turn was not interrupted")
			}
		})
	}
}

func TestRunSteerAtToolBoundary(t *testing.T) {
	rec := recording(t, "steer-at-tool-boundary")
	recorded := gjson.ParseBytes(rec.Inputs[1]).Get("uuid").String()
	steered := make(chan string, 1)
	scenario := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:9]...) // up to the tool call
		s, ok := t.WaitSteer()
		if !ok {
			return
		}
		steered <- gjson.ParseBytes(s.Line).Get("message.content").String()
		t.Emit(claudetest.Replace(rec.Lines[9:], recorded, s.UUID)...)
		<-t.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{scenario}}, Options{})
	r.sendf(`{"type":"prompt","message":"run it"}`)
	r.event("tool_execution_start")
	steer := r.sendf(`{"type":"steer","message":"change course"}`)
	assert.Equal(t, "change course", <-steered, "handed to the CLI mid-turn")
	end := r.event("agent_end")
	assert.Less(t, r.index("response:"+steer), r.index("agent_end"))
	assert.Equal(t, []string{"user:run it", "assistant:", "toolResult:slept", "user:change course", "assistant:" + gjson.ParseBytes(rec.Lines[16]).Get("message.content.0.text").String()},
		texts(end.Get("messages")), "the steer shows where the model got it: after the tool result")
	assert.Equal(t, 1, strings.Count(strings.Join(r.kinds(), " "), "agent_start"), "one run")
	state := r.call(map[string]any{"type": "get_state"})
	assert.Zero(t, state.Get("data.pendingMessageCount").Int())
	assert.Len(t, r.fake.Turns(), 1, "one CLI turn")
}

// TestClearQueueTakesBackAHandedSteer: on the stream transport a steer
// sent while the model's reply streams is handed to the CLI at once (doc.go
// says why); clear_queue takes it back from the CLI's queue before the CLI
// started it: it is listed in steering, and the model never gets it.
func TestClearQueueTakesBackAHandedSteer(t *testing.T) {
	rec := recording(t, "steer-at-tool-boundary")
	result := resultLine(t)
	cleared := make(chan struct{})
	scenario := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:5]...) // the tool call streams, not yet complete
		s, ok := t.WaitSteer()
		if !ok {
			return
		}
		<-cleared
		if t.Take(s.UUID) {
			panic("taken after it was cancelled")
		}
		t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + s.UUID + `","state":"cancelled"}`)
		t.Emit(rec.Lines[5:9]...) // the tool call and its result, no steer
		t.Emit(rec.Lines[10], result)
		<-t.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{scenario}}, Options{})
	r.sendf(`{"type":"prompt","message":"run it"}`)
	r.event("message_start")
	r.call(map[string]any{"type": "steer", "message": "change course"})
	require.Eventually(t, func() bool { return len(r.fake.Inputs()) == 2 }, waitFor, time.Millisecond, "handed to the CLI mid-reply")
	res := r.call(map[string]any{"type": "clear_queue"})
	assert.Equal(t, `{"steering":["change course"],"followUp":[]}`, res.Get("data").Raw)
	assert.Zero(t, r.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
	close(cleared)
	end := r.event("agent_end")
	assert.NotContains(t, texts(end.Get("messages")), "user:change course")
	assert.Len(t, r.fake.Turns(), 1, "one CLI turn")
}

// TestClearQueueKeepsASteerTheCLIStarted: a handed steer the CLI started
// before clear_queue asked for it back reaches the model: kept, not
// cleared, and the run shows it after the tool result.
func TestClearQueueKeepsASteerTheCLIStarted(t *testing.T) {
	rec := recording(t, "steer-at-tool-boundary")
	recorded := gjson.ParseBytes(rec.Inputs[1]).Get("uuid").String()
	require.Contains(t, string(rec.Lines[5]), `"type":"assistant"`, "the recording: line 5 ends the tool call")
	taken, cleared := make(chan struct{}), make(chan struct{})
	scenario := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:5]...)
		s, ok := t.WaitSteer()
		if !ok || !t.Take(s.UUID) {
			return
		}
		close(taken)
		<-cleared
		t.Emit(claudetest.Replace(rec.Lines[5:], recorded, s.UUID)...)
		<-t.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{scenario}}, Options{})
	r.sendf(`{"type":"prompt","message":"run it"}`)
	r.event("message_start")
	r.call(map[string]any{"type": "steer", "message": "change course"})
	<-taken
	res := r.call(map[string]any{"type": "clear_queue"})
	assert.Equal(t, `{"steering":[],"followUp":[],"kept":["change course"]}`, res.Get("data").Raw)
	close(cleared)
	end := r.event("agent_end")
	assert.Equal(t, []string{"user:run it", "assistant:", "toolResult:slept", "user:change course", "assistant:" + gjson.ParseBytes(rec.Lines[16]).Get("message.content.0.text").String()},
		texts(end.Get("messages")), "the kept steer reached the model after the tool result")
	assert.Len(t, r.fake.Turns(), 1, "one CLI turn")
}

// TestHandedSteerLetGoIsQueuedAgain: a handed steer the CLI lets go of
// without starting it (discarded, refused: any state but queued, started
// and completed) is not lost: it goes back to the queue and the run
// delivers it as its next turn.
func TestHandedSteerLetGoIsQueuedAgain(t *testing.T) {
	rec := recording(t, "steer-at-tool-boundary")
	result := resultLine(t)
	text := recording(t, "text")
	scenario := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:5]...)
		s, ok := t.WaitSteer()
		if !ok {
			return
		}
		t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + s.UUID + `","state":"queued"}`)
		t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + s.UUID + `","state":"refused"}`)
		t.Emit(rec.Lines[5:9]...)
		t.Emit(rec.Lines[10], result)
		<-t.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{scenario, replay(text)}}, Options{})
	r.sendf(`{"type":"prompt","message":"run it"}`)
	r.event("message_start")
	r.call(map[string]any{"type": "steer", "message": "change course"})
	end := r.event("agent_end")
	assert.Contains(t, texts(end.Get("messages")), "user:change course", "delivered as the run's next turn")
	require.Len(t, r.fake.Turns(), 2)
	assert.Contains(t, string(r.fake.Turns()[1].Input), "change course")
}

func TestRunFollowUpIsAnotherTurnOfTheRun(t *testing.T) {
	rec := recording(t, "text")
	gate := make(chan struct{})
	first := resultAfter(rec, gate)
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{first, replay(rec)}}, Options{})
	r.sendf(`{"type":"prompt","message":"one"}`)
	r.event("message_end")
	r.call(map[string]any{"type": "follow_up", "message": "two"})
	state := r.call(map[string]any{"type": "get_state"})
	assert.EqualValues(t, 1, state.Get("data.pendingMessageCount").Int())
	assert.True(t, state.Get("data.isStreaming").Bool())
	close(gate)
	end := r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 4)
	assert.Equal(t, "user:two", got[2])
	require.Len(t, r.fake.Inputs(), 2)
	assert.Contains(t, string(r.fake.Inputs()[1]), `"two"`)
}

// TestRunIdleQueueWaitsForThePrompt: steer and follow_up while idle are
// queued, not run (pi 0.73.1 and 1.5.2 alike): the steering message goes
// to the model with the next prompt, in the same model call; the
// follow-up after that prompt's reply, as the next turn of its run.
func TestRunIdleQueueWaitsForThePrompt(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(rec)}}, Options{})
	steer := r.call(map[string]any{"type": "steer", "message": "and also this"})
	assert.Equal(t, "queued", steer.Get("data.disposition").String())
	follow := r.call(map[string]any{"type": "follow_up", "message": "then that"})
	assert.Equal(t, "queued", follow.Get("data.disposition").String())
	assert.Equal(t, []string{"queue_update", "response:c1", "queue_update", "response:c2"}, r.kinds(), "queue_update before each answer")
	assert.Equal(t, `{"type":"queue_update","steering":["and also this"],"followUp":["then that"]}`, r.seen[2].Raw)
	st := r.call(map[string]any{"type": "get_state"})
	assert.EqualValues(t, 2, st.Get("data.pendingMessageCount").Int())
	assert.False(t, st.Get("data.isStreaming").Bool())
	assert.Empty(t, r.fake.Turns(), "nothing runs")

	p := r.call(map[string]any{"type": "prompt", "message": "the prompt"})
	assert.Equal(t, "started", p.Get("data.disposition").String())
	end := r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 5)
	assert.Equal(t, []string{"user:the prompt", "user:and also this"}, got[:2], "the steer right after the prompt")
	assert.Equal(t, "user:then that", got[3], "the follow-up after the reply")
	inputs := r.fake.Inputs()
	require.Len(t, inputs, 2, "two CLI turns: prompt and steer in one")
	assert.Equal(t, "the prompt\n\nand also this", gjson.ParseBytes(inputs[0]).Get("message.content").String())
	assert.Zero(t, r.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
}

// TestClearQueue: clear_queue returns what waited and empties the queues.
func TestClearQueue(t *testing.T) {
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	empty := r.call(map[string]any{"type": "clear_queue"})
	assert.Equal(t, `{"steering":[],"followUp":[]}`, empty.Get("data").Raw, "nothing queued: success, empty lists (as pi)")
	r.sendf(`{"type":"steer","message":"s1"}`)
	r.sendf(`{"type":"follow_up","message":"f1"}`)
	res := r.call(map[string]any{"type": "clear_queue"})
	assert.Equal(t, `{"steering":["s1"],"followUp":["f1"]}`, res.Get("data").Raw)
	assert.Equal(t, `{"type":"queue_update","steering":[],"followUp":[]}`, r.seen[len(r.seen)-2].Raw)
	assert.Zero(t, r.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
}

func TestRunCLIDiesMidTurn(t *testing.T) {
	rec := recording(t, "text")
	die := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:5]...)
		t.Die(&claudecli.ExitError{Status: errors.New("signal: killed"), Stderr: "boom"})
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{die, replay(rec)}}, Options{})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	end := r.event("agent_end")
	last := end.Get("messages.@reverse.0")
	assert.Equal(t, "error", last.Get("stopReason").String())
	assert.Contains(t, last.Get("errorMessage").String(), "signal: killed; stderr: boom")
	r.sendf(`{"type":"prompt","message":"again"}`)
	assert.Equal(t, "stop", r.event("agent_end").Get("messages.1.stopReason").String(), "the bridge goes on")
}

func TestRunAbortAndPrompt(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{
		stallUntilInterrupt(rec, 6, resultLine(t), 0), replay(rec)}}, Options{})
	r.sendf(`{"type":"prompt","message":"one"}`)
	r.event("message_update")
	id := r.sendf(`{"type":"abort_and_prompt","message":"two"}`)
	// The answer may come before or after the aborted run's agent_end:
	// answer finds it among the frames seen either way.
	first := r.event("agent_end")
	assert.True(t, r.answer(id).Get("success").Bool())
	assert.Equal(t, "aborted", first.Get("messages.1.stopReason").String())
	assert.False(t, first.Get("isTerminal").Bool(), "abort_and_prompt's prompt follows")
	res := r.event("prompt_result")
	assert.Equal(t, "c1", res.Get("id").String())
	assert.Equal(t, "aborted", res.Get("status").String())
	assert.False(t, res.Get("sessionSettled").Bool())
	end := r.event("agent_end")
	assert.Equal(t, id, r.event("prompt_result").Get("id").String())
	assert.Equal(t, -1, r.index("agent_settled"), "no agent_settled before the last run ended")
	r.event("agent_settled")
	assert.Equal(t, []string{"user:two", "assistant:" + gjson.ParseBytes(rec.Lines[11]).Get("message.content.0.text").String()}, texts(end.Get("messages")))
	starts := []int{}
	for i, k := range r.kinds() {
		if k == "agent_start" {
			starts = append(starts, i)
		}
	}
	require.Len(t, starts, 2)
	assert.Less(t, r.index("response:"+id), starts[1], "abort_and_prompt is answered before its run's agent_start (rule 4)")
}

// TestRunNewSessionMidRun: new_session switches at once (get_state sent
// after it sees the new session while the old run still winds down), is
// answered once the old run ended, and the old run's messages stay out of
// the new session.
func TestRunNewSessionMidRun(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{
		stallUntilInterrupt(rec, 6, resultLine(t), 300*time.Millisecond), replay(rec)}}, Options{})
	before := r.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	r.sendf(`{"type":"prompt","message":"one"}`)
	r.event("message_update")
	ns := r.sendf(`{"type":"new_session"}`)
	start := time.Now()
	state := r.call(map[string]any{"type": "get_state"})
	assert.Less(t, time.Since(start), 250*time.Millisecond, "get_state does not wait for the old run")
	assert.NotEqual(t, before, state.Get("data.sessionId").String())
	assert.Zero(t, state.Get("data.messageCount").Int())
	r.answer(ns)
	assert.Less(t, r.index("agent_end"), r.index("response:"+ns), "new_session answers after the old run's agent_end")
	p := r.sendf(`{"type":"prompt","message":"two"}`)
	r.answer(p)
	r.event("agent_end")
	msgs := r.call(map[string]any{"type": "get_messages"})
	assert.Equal(t, "user:two", texts(msgs.Get("data.messages"))[0])
	turns := r.fake.Turns()
	require.Len(t, turns, 2)
	assert.NotEqual(t, turns[0].Session.ID, turns[1].Session.ID)
}

// TestCommandsDoNotWait: a slow command (the CLI's models, asked of a CLI
// that takes its time) holds up nothing that does not touch what it
// touches; a command that changes state is seen by the commands after it.
func TestCommandsDoNotWait(t *testing.T) {
	release := make(chan struct{})
	var asked sync.WaitGroup
	asked.Add(1)
	var once sync.Once
	info := claudecli.Info{Models: []claudecli.ModelInfo{{Value: "opus", ResolvedModel: "claude-opus-9"}, {Value: "sonnet", ResolvedModel: "claude-sonnet-9"}}}
	opts := Options{query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
		once.Do(asked.Done)
		<-release
		return info, nil
	}}
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, opts)
	models := r.sendf(`{"type":"get_available_models"}`)
	cmds := r.sendf(`{"type":"get_commands"}`)
	asked.Wait()
	state := r.sendf(`{"type":"get_state"}`)
	r.answer(state)
	setModel := r.sendf(`{"type":"set_model","provider":"anthropic","modelId":"sonnet"}`)
	after := r.sendf(`{"type":"get_state"}`)
	abort := r.sendf(`{"type":"abort"}`)
	r.answer(abort)
	assert.Equal(t, []string{"response:" + state, "response:" + abort}, r.kinds(), "answered while the models are asked")
	close(release)
	got := r.answer(after)
	assert.Equal(t, "claude-sonnet-9", got.Get("data.model.id").String(), "set_model is seen by get_state sent after it")
	assert.Less(t, r.index("response:"+setModel), r.index("response:"+after))
	r.answer(models)
	r.answer(cmds)
}

// TestQueryIsShared: concurrent asks for the CLI's models share one query
// process.
func TestQueryIsShared(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	opts := Options{query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
		mu.Lock()
		n++
		mu.Unlock()
		<-release
		return claudecli.Info{Models: []claudecli.ModelInfo{{Value: "opus"}}}, nil
	}}
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, opts)
	ids := []string{r.sendf(`{"type":"get_available_models"}`), r.sendf(`{"type":"get_commands"}`), r.sendf(`{"type":"cycle_model"}`)}
	time.Sleep(50 * time.Millisecond)
	close(release)
	for _, id := range ids {
		assert.True(t, r.answer(id).Get("success").Bool())
	}
	r.call(map[string]any{"type": "get_available_models"})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, n, "one query for all, and none after it answered")
}

// TestLiveInfo: with a running CLI that answered initialize (the stream
// transport), its answer is used and no query process starts.
func TestLiveInfo(t *testing.T) {
	opts := Options{query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
		t.Error("a query process was started")
		return claudecli.Info{}, errors.New("no")
	}}
	info := &claudecli.Info{Models: []claudecli.ModelInfo{{Value: "opus", ResolvedModel: "claude-opus-9", DisplayName: "Opus"}},
		Commands: []claudecli.CommandInfo{{Name: "compact", Description: "Compact"}}}
	r := newRig(t, &claudetest.Transport{Info: info, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, opts)
	assert.Equal(t, "Opus", r.call(map[string]any{"type": "get_available_models"}).Get("data.models.0.name").String())
	assert.Equal(t, "compact", r.call(map[string]any{"type": "get_commands"}).Get("data.commands.0.name").String())
}

func TestCompactRunsAsATurn(t *testing.T) {
	rec := recording(t, "compact")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(rec)}}, Options{})
	id := r.sendf(`{"type":"compact","customInstructions":"keep names"}`)
	res := r.answer(id)
	require.True(t, res.Get("success").Bool(), res.Raw)
	assert.NotEmpty(t, res.Get("data.summary").String())
	assert.Contains(t, string(r.fake.Inputs()[0]), "/compact keep names")
	assert.Equal(t, []string{"compaction_start", "compaction_end", "response:" + id}, r.kinds(), "no agent events: pi's compaction events, then the answer")
	assert.Equal(t, "manual", r.seen[0].Get("reason").String())
	assert.Equal(t, res.Get("data.summary").String(), r.seen[1].Get("result.summary").String())
	assert.False(t, r.call(map[string]any{"type": "get_state"}).Get("data.isCompacting").Bool())
}

// TestAbortWithHandedSteer: a steer handed to the CLI and not started when
// the run is aborted is cancelled in the CLI, kept in the queue, and
// delivered once, in the next prompt's run.
func TestAbortWithHandedSteer(t *testing.T) {
	rec := recording(t, "text")
	steerRec := recording(t, "steer-at-tool-boundary")
	recorded := gjson.ParseBytes(steerRec.Inputs[1]).Get("uuid").String()
	completed := steerRec.Lines[20] // a command_lifecycle line
	result := resultLine(t)
	first := func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:6]...)
		s, ok := t.WaitSteer()
		if !ok {
			return
		}
		<-t.Interrupted()
		// The CLI drops the queued line (recorded: "completed" stands in
		// for "cancelled", which the bridge takes the same way).
		t.Emit(claudetest.Replace([][]byte{completed}, recorded, s.UUID)...)
		t.Emit(result)
		<-t.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{first, replay(rec)}}, Options{})
	r.sendf(`{"type":"prompt","message":"one"}`)
	r.event("message_update")
	r.call(map[string]any{"type": "steer", "message": "later"})
	require.Eventually(t, func() bool { return len(r.fake.Inputs()) == 2 }, waitFor, time.Millisecond, "handed to the CLI")
	abort := r.sendf(`{"type":"abort"}`)
	r.answer(abort)
	state := r.call(map[string]any{"type": "get_state"})
	assert.EqualValues(t, 1, state.Get("data.pendingMessageCount").Int(), "kept for the next prompt, as pi")
	r.sendf(`{"type":"prompt","message":"next"}`)
	end := r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 3)
	assert.Equal(t, []string{"user:next", "user:later"}, got[:2], "delivered once, with the next prompt")
	inputs := r.fake.Inputs()
	require.Len(t, inputs, 3)
	assert.Equal(t, "next\n\nlater", gjson.ParseBytes(inputs[2]).Get("message.content").String())
	assert.Zero(t, r.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
}

func TestMessagesPage(t *testing.T) {
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(rec)}}, Options{})
	empty := r.call(map[string]any{"type": "get_messages_page"})
	assert.Equal(t, `{"messages":[],"totalMessages":0}`, empty.Get("data").Raw)
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("session_settled")
	first := r.call(map[string]any{"type": "get_messages_page", "limit": 1})
	require.True(t, first.Get("success").Bool(), first.Raw)
	assert.Equal(t, []string{"user:hi"}, texts(first.Get("data.messages")))
	assert.EqualValues(t, 2, first.Get("data.totalMessages").Int())
	cursor := first.Get("data.nextCursor").String()
	require.NotEmpty(t, cursor)
	second := r.answer(r.sendf(`{"type":"get_messages_page","cursor":%q,"limit":256}`, cursor))
	assert.Equal(t, "assistant", second.Get("data.messages.0.role").String())
	assert.False(t, second.Get("data.nextCursor").Exists(), "the last page")

	for _, bad := range []string{`"limit":0`, `"limit":257`, `"limit":1.5`, `"limit":"2"`, `"cursor":"!!"`, `"cursor":7`} {
		res := r.answer(r.sendf(`{"type":"get_messages_page",%s}`, bad))
		assert.False(t, res.Get("success").Bool(), bad)
		assert.NotEmpty(t, res.Get("error").String(), bad)
	}
	r.call(map[string]any{"type": "new_session"})
	stale := r.answer(r.sendf(`{"type":"get_messages_page","cursor":%q}`, cursor))
	assert.False(t, stale.Get("success").Bool())
	assert.Equal(t, "stale_cursor", stale.Get("code").String())
}

// TestStartOptions: pi's startup flags that set the session's name, its
// id and the thinking level.
func TestStartOptions(t *testing.T) {
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}
	r := newRig(t, fake, Options{SessionName: " named ", ThinkingLevel: "max", SessionID: "my-session"})
	st := r.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, "named", st.Get("sessionName").String())
	assert.Equal(t, "max", st.Get("thinkingLevel").String())
	assert.Equal(t, sessions.IDFor("my-session"), st.Get("sessionId").String(), "a name-based UUID for a pi id")
	assert.Equal(t, "max", fake.Config().Effort)
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("agent_end")
	turn := fake.Turns()[0]
	assert.Equal(t, sessions.IDFor("my-session"), turn.Session.ID)
	assert.Equal(t, "named", turn.Session.Name)
}

// TestEntries: pi 1.5's session entries and tree, kept by the bridge.
func TestEntries(t *testing.T) {
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	types := func(d gjson.Result) []string {
		var out []string
		for _, e := range d.Get("entries").Array() {
			out = append(out, e.Get("type").String())
		}
		return out
	}
	fresh := r.call(map[string]any{"type": "get_entries"}).Get("data")
	assert.Equal(t, []string{"model_change", "thinking_level_change"}, types(fresh))
	first := fresh.Get("entries.0.id").String()
	assert.Regexp(t, `^[0-9a-f]{8}$`, first)
	assert.Equal(t, "null", fresh.Get("entries.0.parentId").Raw)
	assert.Equal(t, first, fresh.Get("entries.1.parentId").String())
	assert.Equal(t, fresh.Get("entries.1.id").String(), fresh.Get("leafId").String())

	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("session_settled")
	r.call(map[string]any{"type": "set_session_name", "name": "named"})
	r.call(map[string]any{"type": "set_thinking_level", "level": "high"})
	all := r.call(map[string]any{"type": "get_entries"}).Get("data")
	assert.Equal(t, []string{"model_change", "thinking_level_change", "message", "message", "session_info", "thinking_level_change"}, types(all))
	assert.Equal(t, "user", all.Get("entries.2.message.role").String())
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, all.Get("entries.2.timestamp").String())
	since := r.answer(r.sendf(`{"type":"get_entries","since":%q}`, all.Get("entries.3.id").String())).Get("data")
	assert.Equal(t, []string{"session_info", "thinking_level_change"}, types(since))
	leaf := r.answer(r.sendf(`{"type":"get_entries","since":%q}`, all.Get("leafId").String())).Get("data")
	assert.Equal(t, `[]`, leaf.Get("entries").Raw)
	bad := r.call(map[string]any{"type": "get_entries", "since": "nope"})
	assert.False(t, bad.Get("success").Bool())
	assert.Equal(t, "Entry not found: nope", bad.Get("error").String())

	tree := r.call(map[string]any{"type": "get_tree"}).Get("data")
	depth, node := 0, tree.Get("tree.0")
	for node.Exists() {
		depth++
		node = node.Get("children.0")
	}
	assert.Equal(t, 6, depth, "one chain")
	assert.Equal(t, all.Get("leafId").String(), tree.Get("leafId").String())

	r.call(map[string]any{"type": "new_session"})
	assert.Equal(t, []string{"session_info", "model_change", "thinking_level_change"}[1:],
		types(r.call(map[string]any{"type": "get_entries"}).Get("data")), "a new session's own log")
}

// TestBashUpdatesAndContext: bash's output comes as bash_execution_update
// while it runs; its result goes to the model with the next prompt unless
// excludeFromContext.
func TestBashUpdatesAndContext(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	rec := recording(t, "text")
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(rec)}}, Options{})
	id := r.sendf(`{"type":"bash","command":"printf 'h\\303\\251llo\\n'; sleep 0.2; printf 'err\\n' >&2"}`)
	res := r.answer(id)
	require.True(t, res.Get("success").Bool(), res.Raw)
	var deltas string
	for _, f := range r.seen {
		if f.Get("type").String() == "bash_execution_update" {
			assert.Equal(t, id, f.Get("id").String())
			deltas += f.Get("delta").String()
		}
	}
	assert.Equal(t, "héllo\nerr\n", deltas)
	assert.Equal(t, deltas, res.Get("data.output").String())
	r.call(map[string]any{"type": "bash", "command": "echo secret", "excludeFromContext": true})
	r.sendf(`{"type":"prompt","message":"go"}`)
	r.event("agent_end")
	text := gjson.ParseBytes(r.fake.Inputs()[0]).Get("message.content").String()
	assert.Contains(t, text, "héllo")
	assert.NotContains(t, text, "secret", "excludeFromContext")
	stats := r.call(map[string]any{"type": "get_session_stats"}).Get("data.contextUsage")
	assert.Greater(t, stats.Get("contextWindow").Int(), int64(0))
	assert.Greater(t, stats.Get("tokens").Int(), int64(0))
}

// TestOmpCommands: omp's commands the CLI can serve, and those it cannot,
// refused at once with the reason.
func TestOmpCommands(t *testing.T) {
	info := &claudecli.Info{Commands: []claudecli.CommandInfo{{Name: "compact", Description: "Compact", ArgumentHint: "<instructions>", Builtin: true}, {Name: "mine"}}}
	r := newRig(t, &claudetest.Transport{Info: info, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	cmds := r.call(map[string]any{"type": "get_available_commands"})
	assert.Equal(t, `[{"name":"compact","description":"Compact","input":{"hint":"<instructions>"},"source":"builtin"},{"name":"mine","source":"custom"}]`, cmds.Get("data.commands").Raw)
	assert.Equal(t, "anthropic", r.call(map[string]any{"type": "get_login_providers"}).Get("data.providers.0.id").String())
	for _, cmd := range []string{"login"} {
		res := r.answer(r.sendf(`{"type":%q}`, cmd))
		assert.False(t, res.Get("success").Bool(), cmd)
		assert.NotContains(t, res.Get("error").String(), "Unknown command", cmd)
		assert.Contains(t, res.Get("error").String(), cmd+": ", cmd)
	}

	// set_event_filter: only these events are written, from the next
	// frame on; responses always are.
	f := r.call(map[string]any{"type": "set_event_filter", "events": []any{"agent_end", "message_end"}})
	assert.Equal(t, `["agent_end","message_end"]`, f.Get("data.events").Raw)
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("session_settled")
	for _, fr := range r.seen[r.index("response:"+f.Get("id").String())+1:] {
		switch k := fr.Get("type").String(); k {
		case "response", "agent_end", "message_end", "prompt_result", "agent_settled", "session_settled":
		default:
			t.Errorf("filtered out, yet written: %s", k)
		}
	}
	assert.Equal(t, "msg-2", r.seen[r.index("agent_end")-1].Get("messageId").String(), "ids minted at message_start, though it was dropped")
	r.call(map[string]any{"type": "set_event_filter", "events": nil})
	bad := r.call(map[string]any{"type": "set_event_filter", "events": "all"})
	assert.False(t, bad.Get("success").Bool())
}

// TestChunkedCommands: a command the host sends as rpc_chunk frames is
// reassembled and answered; a malformed sequence, a chunk declaring more
// than 64 MiB and a chunk interrupted by another frame are refused with a
// clear error, and the bridge goes on serving.
func TestChunkedCommands(t *testing.T) {
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	name := strings.Repeat("n", 2<<20) // a command of over 2 MiB: 9 chunks
	cmd := fmt.Sprintf(`{"id":"big","type":"set_session_name","name":%q}`, name)
	var c rpcframe.Chunker
	lines, err := c.Split([]byte(cmd))
	require.NoError(t, err)
	require.Greater(t, len(lines), 2)
	for _, l := range lines {
		_, err := r.in.Write(l)
		require.NoError(t, err)
	}
	assert.True(t, r.answer("big").Get("success").Bool())
	assert.Len(t, r.call(map[string]any{"type": "get_state"}).Get("data.sessionName").String(), len(name))

	bad := func(lines ...string) gjson.Result {
		t.Helper()
		for _, l := range lines {
			r.send(l)
		}
		f := last(r.until(waitFor, func(f gjson.Result) bool { return f.Get("command").String() == "parse" }))
		assert.False(t, f.Get("success").Bool())
		return f
	}
	// Interrupted: the second chunk never comes, a command does; the
	// sequence is lost, the command is answered.
	first := strings.TrimSuffix(string(lines[0]), "\n")
	assert.Contains(t, bad(first, `{"id":"cut","type":"get_state"}`).Get("error").String(), "interrupted")
	assert.True(t, r.answer("cut").Get("success").Bool())
	// Over the limit: 65 MiB declared.
	assert.Contains(t, bad(`{"type":"rpc_chunk","chunkId":"x","index":0,"count":2,"byteLength":68157440,"data":"AAAA"}`).Get("error").String(), "metadata")
	// Not base64.
	assert.Contains(t, bad(`{"type":"rpc_chunk","chunkId":"y","index":0,"count":2,"byteLength":1048577,"data":"!!"}`).Get("error").String(), "data")
	assert.True(t, r.call(map[string]any{"type": "get_state"}).Get("success").Bool(), "still serving")
}

// TestSubagents: the CLI's sub-agent (the recorded Agent call running Bash)
// as omp's frames, only once the host subscribed, and omp's three
// commands.
func TestSubagents(t *testing.T) {
	rec := recording(t, "subagent")
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(rec), replay(rec), replay(rec)}}, Options{})
	subFrames := func(from int) map[string]int {
		n := map[string]int{}
		for _, f := range r.seen[from:] {
			if k := f.Get("type").String(); strings.HasPrefix(k, "subagent_") {
				n[k]++
			}
		}
		return n
	}

	// Not subscribed: none.
	r.sendf(`{"type":"prompt","message":"go"}`)
	r.event("agent_end")
	assert.Empty(t, subFrames(0), "sub-agent frames to a host that did not subscribe")
	list := r.call(map[string]any{"type": "get_subagents"})
	assert.JSONEq(t, `{"subagents":[]}`, list.Get("data").Raw, "none runs after the run")

	for _, bad := range []string{`"level":"all"`, `"level":3`, ``} {
		res := r.answer(r.sendf(`{"type":"set_subagent_subscription"%s}`, map[bool]string{true: "," + bad, false: ""}[bad != ""]))
		assert.False(t, res.Get("success").Bool(), bad)
		assert.Contains(t, res.Get("error").String(), "level", bad)
	}

	// progress: lifecycle and progress, not the events.
	res := r.call(map[string]any{"type": "set_subagent_subscription", "level": "progress"})
	assert.Equal(t, "progress", res.Get("data.level").String())
	from := len(r.seen)
	r.sendf(`{"type":"prompt","message":"go"}`)
	r.event("agent_end")
	n := subFrames(from)
	assert.Equal(t, 2, n["subagent_lifecycle"], "started and completed")
	assert.Positive(t, n["subagent_progress"])
	assert.Zero(t, n["subagent_event"])

	// events: all three; the sub-agent's own run inside subagent_event.
	r.call(map[string]any{"type": "set_subagent_subscription", "level": "events"})
	from = len(r.seen)
	r.sendf(`{"type":"prompt","message":"go"}`)
	r.event("agent_end")
	var life []gjson.Result
	var inner []string
	for _, f := range r.seen[from:] {
		switch f.Get("type").String() {
		case "subagent_lifecycle":
			life = append(life, f.Get("payload"))
		case "subagent_event":
			inner = append(inner, f.Get("payload.event.type").String())
		}
	}
	require.Len(t, life, 2)
	assert.Equal(t, "started", life[0].Get("status").String())
	assert.Equal(t, "completed", life[1].Get("status").String())
	assert.Equal(t, "general-purpose", life[0].Get("agent").String())
	assert.Equal(t, "bundled", life[0].Get("agentSource").String())
	assert.NotEmpty(t, life[0].Get("parentToolCallId").String())
	id := life[0].Get("id").String()
	file := life[0].Get("sessionFile").String()
	// A native path, as the host's OS spells it (backslashes on Windows).
	assert.True(t, strings.HasSuffix(file, string(filepath.Separator)+filepath.Join("subagents", "agent-"+id+".jsonl")), file)
	require.NotEmpty(t, inner)
	assert.Equal(t, "agent_start", inner[0])
	assert.Equal(t, "agent_end", inner[len(inner)-1])
	assert.Contains(t, inner, "tool_execution_end", "the sub-agent's Bash call")

	// get_subagent_messages: by id or file (this fake CLI writes no
	// transcript: an empty read), and the errors omp gives.
	msgs := r.answer(r.sendf(`{"type":"get_subagent_messages","subagentId":%q}`, id))
	require.True(t, msgs.Get("success").Bool(), msgs.Raw)
	assert.Equal(t, file, msgs.Get("data.sessionFile").String())
	assert.JSONEq(t, `[]`, msgs.Get("data.messages").Raw)
	assert.True(t, r.answer(r.sendf(`{"type":"get_subagent_messages","sessionFile":%q}`, file)).Get("success").Bool())
	for req, want := range map[string]string{
		`{"type":"get_subagent_messages"}`:                                          "requires subagentId or sessionFile",
		`{"type":"get_subagent_messages","subagentId":"nope"}`:                      "Unknown subagent",
		`{"type":"get_subagent_messages","sessionFile":"/etc/passwd"}`:              "Unknown subagent session file",
		`{"type":"get_subagent_messages","subagentId":"` + id + `","fromByte":"x"}`: "fromByte must be a finite number",
	} {
		res := r.answer(r.sendf("%s", req))
		assert.False(t, res.Get("success").Bool(), req)
		assert.Contains(t, res.Get("error").String(), want, req)
	}

	// A new session forgets them.
	r.call(map[string]any{"type": "new_session"})
	res = r.answer(r.sendf(`{"type":"get_subagent_messages","subagentId":%q}`, id))
	assert.False(t, res.Get("success").Bool())
}

// TestIdleWhenNothingRuns: Options.Idle is called once a run has ended and
// nothing more runs (a follow-up's turn is the same run; abort_and_prompt's
// prompt runs right after the aborted run), after a compaction, and after
// a session change while nothing runs.
func TestIdleWhenNothingRuns(t *testing.T) {
	rec, compact := recording(t, "text"), recording(t, "compact")
	var mu sync.Mutex
	idle := 0
	idles := func() int { mu.Lock(); defer mu.Unlock(); return idle }
	gate := make(chan struct{})
	first := resultAfter(rec, gate)
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{first, replay(rec), replay(compact),
		stallUntilInterrupt(rec, 6, resultLine(t), 0), replay(rec)}}, Options{Idle: func() {
		mu.Lock()
		defer mu.Unlock()
		idle++
	}})
	r.sendf(`{"type":"prompt","message":"one"}`)
	r.event("message_end")
	r.call(map[string]any{"type": "follow_up", "message": "two"})
	close(gate)
	r.event("session_settled")
	// Idle is called right after session_settled is queued: soon after
	// it is read.
	assert.Eventually(t, func() bool { return idles() == 1 }, waitFor, time.Millisecond, "once, after the run's second turn")
	r.call(map[string]any{"type": "compact"})
	assert.Eventually(t, func() bool { return idles() == 2 }, waitFor, time.Millisecond, "after the compaction (not between the run's turns: twice in all)")
	// abort_and_prompt: the aborted run ends, its prompt's run follows
	// at once: idle once, after that one.
	r.sendf(`{"type":"prompt","message":"three"}`)
	r.event("message_update")
	r.call(map[string]any{"type": "abort_and_prompt", "message": "four"})
	r.event("session_settled")
	assert.Eventually(t, func() bool { return idles() == 3 }, waitFor, time.Millisecond, "after abort_and_prompt's run")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 3, idles())
	// A session change while nothing runs: the heap keeps another history.
	r.call(map[string]any{"type": "new_session"})
	assert.Equal(t, 4, idles(), "after new_session")
}

// TestIdleAfterASessionLoadedAtStart: a bridge started on a session with
// messages calls Options.Idle once before it serves (the heap now keeps
// that history); one started on none does not.
func TestIdleAfterASessionLoadedAtStart(t *testing.T) {
	for _, tc := range []struct {
		session string
		idles   int32
	}{{"../testdata/cli/transcript.transcript.jsonl", 1}, {"", 0}} {
		var idles atomic.Int32
		r := newRig(t, &claudetest.Transport{}, Options{Session: tc.session, Idle: func() { idles.Add(1) }})
		st := r.call(map[string]any{"type": "get_state"})
		assert.Equal(t, tc.session != "", st.Get("data.messageCount").Int() > 0, "%q: %s", tc.session, st.Raw)
		assert.Equal(t, tc.idles, idles.Load(), "session %q", tc.session)
	}
}

// resultAfter replays rec up to its result, which it emits once gate is
// closed.
func resultAfter(rec claudetest.Recording, gate <-chan struct{}) claudetest.Scenario {
	return func(t *claudetest.Turn) {
		t.Emit(rec.Lines[:len(rec.Lines)-1]...)
		<-gate
		t.Emit(rec.Lines[len(rec.Lines)-1])
		<-t.Released()
	}
}

// TestAbortOvertakesAWaitingPrompt: an abort sent after a prompt that has
// not begun (it waits for set_model, which waits for the CLI's models)
// aborts that prompt's run once it starts, and is answered after its
// agent_end, not at once as when idle; abort_and_prompt likewise aborts
// it and runs after it, the prompt answered, not refused as busy.
// Commands meanwhile are answered.
func TestAbortOvertakesAWaitingPrompt(t *testing.T) {
	for _, typ := range []string{"abort", "abort_and_prompt"} {
		t.Run(typ, func(t *testing.T) {
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			t.Cleanup(free) // before the rig's: Serve ends after the query
			info := claudecli.Info{Models: []claudecli.ModelInfo{{Value: "opus"}, {Value: "sonnet"}}}
			opts := Options{query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
				<-release
				return info, nil
			}}
			rec := recording(t, "text")
			// "hi" runs until interrupted, the others to their end; a run
			// aborted while its turn starts may start no turn.
			fake := &claudetest.Transport{Per: true}
			stall, whole := stallUntilInterrupt(rec, 6, resultLine(t), 0), replay(rec)
			fake.Scenarios = []claudetest.Scenario{func(turn *claudetest.Turn) {
				in := fake.Inputs()
				if gjson.GetBytes(in[len(in)-1], "message.content").String() == "hi" {
					stall(turn)
					return
				}
				whole(turn)
			}}
			r := newRig(t, fake, opts)
			r.sendf(`{"type":"set_model","provider":"anthropic","modelId":"sonnet"}`)
			prompt := r.sendf(`{"type":"prompt","message":"hi"}`)
			abort := r.sendf(`{"type":%q,"message":"next"}`, typ)
			stats := r.sendf(`{"type":"get_session_stats"}`)
			r.answer(stats)
			assert.NotContains(t, r.kinds(), "response:"+abort, "not answered while the prompt it follows waits")
			free()
			assert.True(t, r.answer(prompt).Get("success").Bool(), "the prompt starts: %s", r.summary())
			end := r.event("agent_end")
			assert.Equal(t, "aborted", last(end.Get("messages").Array()).Get("stopReason").String(), "the prompt's run is aborted")
			r.answer(abort)
			if typ == "abort" {
				assert.Less(t, r.index("agent_end"), r.index("response:"+abort), "abort answers after agent_end")
				r.sendf(`{"type":"prompt","message":"again"}`)
			}
			end = r.event("agent_end")
			assert.Equal(t, "stop", end.Get("messages.1.stopReason").String(), "the next prompt runs")
		})
	}
}
