package writer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/transform"
)

// frameAt is one frame the writer wrote and when the reader got it.
type frameAt struct {
	line string
	at   time.Time
}

// watched is a frame writer on a pipe, and what it wrote.
type watched struct {
	*Writer
	pw     *io.PipeWriter
	frames <-chan frameAt
}

// watch starts a frame writer on a pipe and collects what it writes.
func watch(t *testing.T, coalesce time.Duration) watched {
	t.Helper()
	pr, pw := io.Pipe()
	w := New(pw, Config{Coalesce: coalesce})
	frames := make(chan frameAt, 1<<16)
	go func() {
		defer close(frames)
		r := bufio.NewReaderSize(pr, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			frames <- frameAt{strings.TrimSuffix(l, "\n"), time.Now()}
		}
	}()
	t.Cleanup(func() { _ = pw.Close() })
	return watched{w, pw, frames}
}

// recorded translates a recording from testdata/cli.
func recorded(t *testing.T, name string) []transform.Event {
	t.Helper()
	data, err := os.ReadFile("../../testdata/cli/" + name + ".jsonl")
	require.NoError(t, err)
	tr := transform.NewTranslator(func() int64 { return 1 })
	evs := tr.Start(transform.UserMessage([]transform.Content{transform.TextContent("hi")}, 1))
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		evs = append(evs, tr.Line(l)...)
	}
	evs = append(evs, tr.Finish("exit status 0")...)
	var ids messageIDs // as a fresh writer numbers them
	for i := range evs {
		ids.assign(&evs[i])
	}
	return evs
}

// closeAndCollect closes the writer and returns every frame it wrote.
func (w watched) closeAndCollect() []string {
	w.Close()
	_ = w.pw.Close()
	var out []string
	for f := range w.frames {
		out = append(out, f.line)
	}
	return out
}

// TestCoalescedFramesCarryTheSameText sends every event of recordings at
// once, with a window long enough to merge them, and checks what a host
// sees: every other event unchanged and in order, fewer delta frames, each
// delta the concatenation of the deltas it replaces, each partial message
// the text so far, and the same final text.
func TestCoalescedFramesCarryTheSameText(t *testing.T) {
	for _, name := range []string{"text", "thinking", "tool-bash", "tools-many", "text-unicode"} {
		t.Run(name, func(t *testing.T) {
			evs := recorded(t, name)
			w := watch(t, time.Second)
			w.Events(evs)
			got := w.closeAndCollect()

			var wantOther, gotOther []string
			deltas := 0
			for _, e := range evs {
				if isDelta(&e) {
					deltas++
					continue
				}
				b, err := e.MarshalJSON()
				require.NoError(t, err)
				wantOther = append(wantOther, string(b))
			}
			merged := 0
			var text map[int64]string // the open message's text from deltas, by content index
			for _, l := range got {
				v := gjson.Parse(l)
				ae := v.Get("assistantMessageEvent")
				switch v.Get("type").String() {
				case transform.EventMessageStart:
					text = map[int64]string{}
				case transform.EventMessageEnd:
					for i, s := range text { // the message ends with the text the deltas add up to
						block := v.Get("message.content." + strconv.FormatInt(i, 10))
						assert.Equal(t, s, block.Get("text").String()+block.Get("thinking").String())
					}
				}
				switch ae.Get("type").String() {
				case transform.TextDelta, transform.ThinkingDelta, transform.ToolcallDelta:
					merged++
					i := ae.Get("contentIndex").Int()
					assert.Equal(t, v.Get("message").Raw, ae.Get("partial").Raw)
					if ae.Get("type").String() == transform.ToolcallDelta {
						continue
					}
					text[i] += ae.Get("delta").String()
					block := v.Get("message.content." + strconv.FormatInt(i, 10))
					assert.Equal(t, text[i], block.Get("text").String()+block.Get("thinking").String(), "partial = deltas so far")
					continue
				}
				gotOther = append(gotOther, l)
			}
			assert.Equal(t, wantOther, gotOther, "the other frames, unchanged and in order")
			require.Positive(t, merged)
			assert.Less(t, merged, deltas, "deltas were merged")
		})
	}
}

// TestLoneDeltaIsWrittenAfterTheWindow checks that a delta with nothing
// after it is written when its window ends, not held until the next frame,
// and that a frame of another kind releases a held delta at once, before
// itself.
func TestLoneDeltaIsWrittenAfterTheWindow(t *testing.T) {
	evs := recorded(t, "text")
	var delta, end transform.Event
	for _, e := range evs {
		if e.Type == transform.EventMessageUpdate && e.Update.Type == transform.TextDelta && delta.Type == "" {
			delta = e
		}
		if e.Type == transform.EventMessageEnd && e.Message.Role == transform.RoleAssistant {
			end = e
		}
	}
	const window = 50 * time.Millisecond
	w := watch(t, window)
	start := time.Now()
	w.Events([]transform.Event{delta})
	select {
	case f := <-w.frames:
		assert.GreaterOrEqual(t, f.at.Sub(start), window*9/10, "held for the window")
		assert.Contains(t, f.line, `"text_delta"`)
	case <-time.After(10 * time.Second):
		t.Fatal("a lone delta was never written")
	}

	w.Events([]transform.Event{delta})
	w.Events([]transform.Event{end})
	f1, f2 := <-w.frames, <-w.frames
	assert.Contains(t, f1.line, `"text_delta"`, "the held delta first")
	assert.Contains(t, f2.line, `"message_end"`)
	w.Close()
}

// TestHeldUpdateHoldsOnlyDeltas: the deltas that follow a held one are
// merged into it, but nothing else waits for its window: a response and a
// message_end go out at once.
func TestHeldUpdateHoldsOnlyDeltas(t *testing.T) {
	var deltas []transform.Event
	var end transform.Event
	for _, e := range recorded(t, "text") {
		if e.Type == transform.EventMessageUpdate && e.Update.Type == transform.TextDelta {
			deltas = append(deltas, e)
		}
		if e.Type == transform.EventMessageEnd && e.Message.Role == transform.RoleAssistant {
			end = e
		}
	}
	require.GreaterOrEqual(t, len(deltas), 3)
	const window = 2 * time.Second
	w := watch(t, window)
	start := time.Now()
	w.Events(deltas[:3]) // the first held, the others merged into it
	w.Respond(okResponse(json.RawMessage(`"r"`), "get_state", nil))
	f := <-w.frames
	assert.Less(t, f.at.Sub(start), window/2, "the response is not held")
	assert.Equal(t, "r", gjson.Get(f.line, "id").String(), "ahead of the held update")
	w.Events([]transform.Event{end})
	upd, last := <-w.frames, <-w.frames
	assert.Less(t, last.at.Sub(start), window/2, "message_end is not held")
	assert.Equal(t, deltas[0].Update.Delta+deltas[1].Update.Delta+deltas[2].Update.Delta,
		gjson.Get(upd.line, "assistantMessageEvent.delta").String(), "one frame for the three deltas")
	assert.Equal(t, "message_end", gjson.Get(last.line, "type").String())
	w.Close()
}

// TestNoCoalescing: with a zero window every delta is its own frame.
func TestNoCoalescing(t *testing.T) {
	evs := recorded(t, "text")
	w := watch(t, 0)
	w.Events(evs)
	assert.Len(t, w.closeAndCollect(), len(evs))
}

// TestLongMessagesUpdateLessOften checks the spacing of the updates of a
// long message: after an update of B bytes the next waits B/coalesceBudget
// windows (here ~120: without the spacing it would be one). The times are
// the reader's, taken as each 4 MB line has been read: a reader descheduled
// after the first line sees the gap shorter than the writer kept it (106
// of 110 ms seen on a loaded machine), so half the wait is what is checked.
func TestLongMessagesUpdateLessOften(t *testing.T) {
	if underWine() {
		// Measured under Wine 10, alone: 2 of 4 runs saw gaps of 65 and
		// 107 ms where 110 are due (Linux: 5 of 5 pass); the spacing logic
		// is the same on every OS and this test runs on Linux.
		t.Skip("the spacing is timed too unevenly under Wine to check; checked on Linux")
	}
	long := strings.Repeat("long text ", 200_000) // 2 MB: updates of about 4 MB
	update := func(n int) transform.Event {
		return transform.Event{Type: transform.EventMessageUpdate,
			Message: transform.Message{Role: transform.RoleAssistant, Content: []transform.Content{transform.TextContent(long[:n])}},
			Update:  transform.AssistantEvent{Type: transform.TextDelta, Delta: long[n-10 : n]}}
	}
	const window = time.Millisecond
	w := watch(t, window)
	w.Events([]transform.Event{update(len(long) - 10)})
	first := <-w.frames
	w.Events([]transform.Event{update(len(long))})
	second := <-w.frames
	wait := time.Duration(len(first.line)/coalesceBudget) * window
	assert.Greater(t, wait, 100*window)
	assert.GreaterOrEqual(t, second.at.Sub(first.at), wait/2)
	w.Close()
}

// gatedWriter blocks its first Write until open is closed, so that what is
// sent meanwhile queues behind the frame being written.
type gatedWriter struct {
	w       io.Writer
	open    chan struct{}
	writing chan struct{} // closed at the first Write
	first   bool
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if !g.first {
		g.first = true
		close(g.writing)
		<-g.open
	}
	return g.w.Write(p)
}

// TestResponsesOvertakeUpdates: a response queued behind message_update
// frames goes out before them, never before any other event nor before a
// frame queued ahead of it, and the events keep their order.
func TestResponsesOvertakeUpdates(t *testing.T) {
	var text, end transform.Event
	for _, e := range recorded(t, "text") {
		if e.Type == transform.EventMessageUpdate && e.Update.Type == transform.TextEnd {
			text = e
		}
		if e.Type == transform.EventMessageEnd && e.Message.Role == transform.RoleAssistant {
			end = e
		}
	}
	require.NotEmpty(t, text.Type)
	require.NotEmpty(t, end.Type)
	for _, coalesce := range []time.Duration{0, DefaultCoalesce} {
		var out bytes.Buffer
		g := &gatedWriter{w: &out, open: make(chan struct{}), writing: make(chan struct{})}
		w := New(g, Config{Coalesce: coalesce})
		w.Respond(okResponse(json.RawMessage(`"first"`), "get_state", nil)) // written whole: the gate holds it
		<-g.writing
		w.Events([]transform.Event{text, text})
		w.Respond(okResponse(json.RawMessage(`"r1"`), "get_state", nil))
		w.Send(map[string]string{"type": "agent_settled"})
		w.Respond(okResponse(json.RawMessage(`"r2"`), "get_state", nil))
		w.Events([]transform.Event{text, end})
		w.Respond(okResponse(json.RawMessage(`"r3"`), "get_state", nil))
		close(g.open)
		w.Close()
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			v := gjson.Parse(l)
			got = append(got, v.Get("type").String()+v.Get("assistantMessageEvent.type").String()+v.Get("id").String())
		}
		assert.Equal(t, []string{
			"responsefirst",
			"responser1", // ahead of the two updates
			"message_updatetext_end", "message_updatetext_end",
			"agent_settled", "responser2", // a frame the bridge made is passed by no response
			"message_updatetext_end", "message_end",
			"responser3", // not ahead of message_end
		}, got, "coalesce %v", coalesce)
	}
}

// testResponse is a response frame's shape (bridge's response), for the
// tests' frames.
type testResponse struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Type    string          `json:"type"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
}

func okResponse(id json.RawMessage, command string, data any) testResponse {
	return testResponse{ID: id, Type: "response", Command: command, Success: true, Data: data}
}

// TestWritesWholeFrames sends from many goroutines and checks
// every line is one whole frame.
func TestWritesWholeFrames(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, Config{})
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				w.Respond(okResponse(nil, "x", map[string]any{"text": strings.Repeat("a", 1000*g)}))
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	w.Close()
	w.Respond(okResponse(nil, "late", nil)) // dropped, not a panic
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Len(t, lines, 1600)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, `{"type":"response"`) && strings.HasSuffix(l, `}}`), "%.80s", l)
	}
}
