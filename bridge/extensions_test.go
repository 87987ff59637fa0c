package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// fakeExtHost is the far side of an extHost: what the bridge sends it
// (fromBridge) and a writer for what it answers.
type fakeExtHost struct {
	h          *extHost
	fromBridge chan gjson.Result
	reply      *io.PipeWriter
	tools      chan []hostTool
	ui         chan gjson.Result
	read       chan struct{}
}

func newFakeExtHost(t *testing.T) *fakeExtHost {
	inR, inW := io.Pipe()   // bridge → host
	outR, outW := io.Pipe() // host → bridge
	f := &fakeExtHost{fromBridge: make(chan gjson.Result, 16), reply: outW, tools: make(chan []hostTool, 4),
		ui: make(chan gjson.Result, 4), read: make(chan struct{})}
	f.h = newExtHost(inW, slog.New(slog.DiscardHandler), func(tools []hostTool) { f.tools <- tools }, func(m gjson.Result) { f.ui <- m })
	go func() {
		dec := json.NewDecoder(inR)
		for {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return
			}
			f.fromBridge <- gjson.ParseBytes(raw)
		}
	}()
	go func() {
		f.h.read(outR)
		f.h.ended(errors.New("the extension host is not running (it exited: killed)"))
		close(f.read)
	}()
	t.Cleanup(func() { _ = outW.Close(); _ = inR.Close(); <-f.read })
	return f
}

func (f *fakeExtHost) say(t *testing.T, m map[string]any) {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	_, err = f.reply.Write(append(b, '\n'))
	require.NoError(t, err)
}

func (f *fakeExtHost) got(t *testing.T) gjson.Result {
	select {
	case m := <-f.fromBridge:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("the bridge sent the host nothing")
		return gjson.Result{}
	}
}

// TestExtHostProtocol: the bridge's side of the extension host: what it
// loaded (tools checked, a bad name left out), a call and its result, a
// tool's updates, ctx.ui calls handed on, a cancelled call told to the
// host, and the host's death failing the call waiting and every later one
// with a clear error.
func TestExtHostProtocol(t *testing.T) {
	f := newFakeExtHost(t)
	f.say(t, map[string]any{"type": "loaded", "beforeAgentStart": true, "tools": []any{
		map[string]any{"name": "ok_tool", "description": "d", "parameters": map[string]any{"type": "object"}},
		map[string]any{"name": "bad name"},
		map[string]any{"name": "ok_tool"},
	}})
	tools := <-f.tools
	require.Len(t, tools, 1)
	assert.Equal(t, "ok_tool", tools[0].Name)
	assert.True(t, f.h.loaded(context.Background()))
	assert.True(t, f.h.hasBeforeStart())

	// A call and its result; updates on the way.
	type res struct {
		v   gjson.Result
		err error
	}
	done := make(chan res, 1)
	updates := make(chan gjson.Result, 4)
	go func() {
		v, err := f.h.call(context.Background(), "tool_call", map[string]any{"name": "ok_tool"}, func(p gjson.Result) { updates <- p })
		done <- res{v, err}
	}()
	m := f.got(t)
	assert.Equal(t, "tool_call", m.Get("type").String())
	assert.Equal(t, "ok_tool", m.Get("name").String())
	id := m.Get("id").Int()
	f.say(t, map[string]any{"type": "update", "id": id, "partialResult": map[string]any{"n": 1}})
	f.say(t, map[string]any{"type": "ui", "method": "setTitle", "title": "T"})
	f.say(t, map[string]any{"type": "result", "id": id, "value": map[string]any{"content": []any{}}})
	r := <-done
	require.NoError(t, r.err)
	assert.True(t, r.v.Get("content").IsArray())
	assert.Equal(t, int64(1), (<-updates).Get("n").Int())
	assert.Equal(t, "T", (<-f.ui).Get("title").String())

	// The host's error is the call's.
	go func() {
		v, err := f.h.call(context.Background(), "before_agent_start", map[string]any{}, nil)
		done <- res{v, err}
	}()
	f.say(t, map[string]any{"type": "result", "id": f.got(t).Get("id").Int(), "error": "handler broke"})
	assert.EqualError(t, (<-done).err, "handler broke")

	// A call whose context ends is cancelled at the host.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		v, err := f.h.call(ctx, "tool_call", map[string]any{"name": "ok_tool"}, nil)
		done <- res{v, err}
	}()
	id = f.got(t).Get("id").Int()
	cancel()
	assert.ErrorIs(t, (<-done).err, context.Canceled)
	c := f.got(t)
	assert.Equal(t, "cancel", c.Get("type").String())
	assert.Equal(t, id, c.Get("id").Int())

	// The host dies during a call: it fails, and so does every later one.
	go func() {
		v, err := f.h.call(context.Background(), "tool_call", map[string]any{"name": "ok_tool"}, nil)
		done <- res{v, err}
	}()
	f.got(t)
	_ = f.reply.Close()
	err := (<-done).err
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the extension host is not running")
	_, err = f.h.call(context.Background(), "tool_call", map[string]any{"name": "ok_tool"}, nil)
	assert.Contains(t, err.Error(), "the extension host is not running")
	assert.False(t, f.h.hasBeforeStart())
}

// TestExtHostDiesBeforeLoading: a host that ends before it said what it
// loaded does not leave loaded waiting.
func TestExtHostDiesBeforeLoading(t *testing.T) {
	f := newFakeExtHost(t)
	_ = f.reply.Close()
	assert.False(t, f.h.loaded(context.Background()))
}
