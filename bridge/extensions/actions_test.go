package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// goStart runs f on a goroutine of its own, as Session.Go does before
// shutdown.
func goStart(f func()) bool { go f(); return true }

func TestQueueSettles(t *testing.T) {
	q := queue{start: goStart}
	var mu sync.Mutex
	var order []int
	release := make(chan struct{})
	q.push(func() { <-release; mu.Lock(); order = append(order, 1); mu.Unlock() })
	q.push(func() { mu.Lock(); order = append(order, 2); mu.Unlock() })
	settled := make(chan struct{})
	go func() { q.settle(context.Background()); close(settled) }()
	select {
	case <-settled:
		t.Fatal("settled while the first action still ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-settled:
	case <-time.After(settleWait / 2):
		t.Fatal("not settled after the actions ran")
	}
	mu.Lock()
	assert.Equal(t, []int{1, 2}, order, "carried out in the order pushed, both before settle returned")
	mu.Unlock()
	q.settle(context.Background()) // nothing pending: at once
}

func TestQueueRefusedAtShutdown(t *testing.T) {
	q := queue{start: func(func()) bool { return false }}
	ran := false
	q.push(func() { ran = true })
	done := make(chan struct{})
	go func() { q.settle(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(settleWait / 2):
		t.Fatal("a settle waits for what a refused start dropped")
	}
	assert.False(t, ran, "a refused start runs nothing")
}

// fakeSession records what the actions asked of the session.
type fakeSession struct {
	mu       sync.Mutex
	calls    []map[string]any
	errs     []Error
	entries  []string
	active   []string
	callErr  error
	shutdown chan struct{}
}

func (f *fakeSession) Context() context.Context { return context.Background() }
func (f *fakeSession) Go(g func()) bool         { go g(); return true }
func (f *fakeSession) Call(cmd map[string]any) (gjson.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, cmd)
	return gjson.Parse(`{"cancelled":true}`), f.callErr
}
func (f *fakeSession) WaitIdle() {}
func (f *fakeSession) Shutdown() { close(f.shutdown) }
func (f *fakeSession) AppendEntry(customType string, data json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, customType+" "+string(data))
}
func (f *fakeSession) Label(string, string) error { return nil }
func (f *fakeSession) SendMessage(gjson.Result, string, gjson.Result) error {
	return errors.New("no run")
}
func (f *fakeSession) SetActiveTools(names []string) { f.active = names }
func (f *fakeSession) Error(e Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, e)
}
func (f *fakeSession) State() map[string]any         { return map[string]any{} }
func (f *fakeSession) WaitModel(ctx context.Context) {}

func act(name, args string) Action { return Action{Name: name, Args: gjson.Parse(args)} }

func TestActionsAsTheHostsCommands(t *testing.T) {
	s := &fakeSession{shutdown: make(chan struct{})}
	a := NewActions(s, nil)
	v, err := a.do(act("sendUserMessage", `{"content":"hi","options":{"deliverAs":"followUp"}}`))
	require.NoError(t, err)
	assert.Nil(t, v)
	v, err = a.do(act("newSession", `{"parentSession":"p"}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"cancelled": true}, v)
	s.callErr = errors.New("unknown model")
	v, err = a.do(act("setModel", `{"provider":"anthropic","id":"x"}`))
	assert.NoError(t, err, "setModel answers false, as pi's, rather than failing")
	assert.Equal(t, false, v)
	assert.Equal(t, []map[string]any{
		{"type": "prompt", "message": "hi", "streamingBehavior": "followUp"},
		{"type": "new_session", "parentSession": "p"},
		{"type": "set_model", "provider": "anthropic", "modelId": "x"},
	}, s.calls)

	_, err = a.do(act("appendEntry", `{"customType":"k","data":{"n":1}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{`k {"n":1}`}, s.entries)
	_, err = a.do(act("setActiveTools", `{"toolNames":["read","grep"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "grep"}, s.active)
	_, err = a.do(act("registerProvider", `{}`))
	assert.EqualError(t, err, "registerProvider is not supported by claude-rpc")
	_, err = a.do(act("navigateTree", `{}`))
	assert.Error(t, err)
}

func TestActionsInOrderAndErrors(t *testing.T) {
	s := &fakeSession{shutdown: make(chan struct{})}
	a := NewActions(s, nil)
	var order []string
	a.Do(act("setThinkingLevel", `{"level":"high"}`))
	a.Push(func() { order = append(order, "notify") })
	a.Do(act("sendMessage", `{"message":{}}`))
	a.Settle(context.Background())
	assert.Equal(t, []string{"notify"}, order)
	s.mu.Lock()
	assert.Equal(t, []map[string]any{{"type": "set_thinking_level", "level": "high"}}, s.calls, "carried out before Settle returned")
	assert.Equal(t, []Error{{ExtensionPath: "<runtime>", Event: "send_message", Error: "no run"}}, s.errs,
		"a failed call the extension did not wait for is an extension_error")
	s.mu.Unlock()
	assert.Equal(t, "set_thinking_level", snake("setThinkingLevel"))
}

func TestShutdownWaitsForTheCommand(t *testing.T) {
	s := &fakeSession{shutdown: make(chan struct{})}
	a := NewActions(s, nil)
	answered := make(chan struct{})
	go a.Command(func() {
		_, err := a.do(act("shutdown", `{}`))
		assert.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		close(answered)
	})
	select {
	case <-s.shutdown:
		select {
		case <-answered:
		default:
			t.Fatal("shut down before the command that asked was answered")
		}
	case <-time.After(shutdownWaitsForCommands):
		t.Fatal("no shutdown")
	}
}

func TestPumpWants(t *testing.T) {
	var none *Pump
	assert.False(t, none.Wants("agent_end"), "no extensions: nothing wanted")
	assert.False(t, none.Started())
	none.FlushState() // nothing to tell

	p := NewPump(nil, &fakeSession{}, nil)
	assert.False(t, p.Wants("turn_end"), "nothing before the extensions loaded")
	h := map[string]bool{"turn_end": true, "agent_end": true}
	p.handled.Store(&h)
	assert.True(t, p.Started())
	assert.True(t, p.Tapped("turn_end"))
	assert.True(t, p.Wants("agent_end"))
	assert.False(t, p.Tapped("agent_end"), "agent_end is the runner's to give (before the host sees it)")
	assert.False(t, p.Tapped("message_update"))
	p.Stop()
	p.Stop() // twice: as once
}

func TestToolOutputText(t *testing.T) {
	text, put := ToolOutputText(gjson.Parse(`"plain"`))
	assert.Equal(t, "plain", text)
	assert.Equal(t, "new", put("new"))
	text, put = ToolOutputText(gjson.Parse(`{"stdout":"out","stderr":"err","interrupted":false}`))
	assert.Equal(t, "out\nerr", text)
	assert.Equal(t, map[string]any{"stdout": "new", "stderr": "", "interrupted": false}, put("new"))
	_, put = ToolOutputText(gjson.Parse(`{"file":{}}`))
	assert.Nil(t, put, "a shape claude-rpc cannot rewrite")
	assert.True(t, JSONEqual(`{"a":1,"b":[2]}`, `{"b":[2], "a":1.0}`))
	assert.False(t, JSONEqual(`{"a":1}`, `{"a":2}`))
}

func TestDialogs(t *testing.T) {
	var d Dialogs
	ctx, cancel := context.WithCancel(context.Background())
	d.Add(7, cancel)
	d.Cancel(8) // not asked: nothing
	assert.NoError(t, ctx.Err())
	d.Cancel(7)
	assert.Error(t, ctx.Err())
	d.Cancel(7) // twice: as once
}
