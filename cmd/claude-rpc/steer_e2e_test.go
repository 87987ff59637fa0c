//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// requestsEndingWith lists the indexes of the API requests whose last user
// text is text: the model calls that delivered it.
func requestsEndingWith(reqs []fakeapi.Request, text string) []int {
	var out []int
	for i, r := range reqs {
		if r.LastUserText() == text {
			out = append(out, i)
		}
	}
	return out
}

// assistantTexts lists the first text of each assistant message_end.
func assistantTexts(frames []gjson.Result) []string {
	var out []string
	for _, f := range frames {
		if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
			out = append(out, f.Get("message.content.0.text").String())
		}
	}
	return out
}

func TestSteerDuringToolCall(t *testing.T) { forEachTransport(t, testSteerDuringToolCall) }

// A steer sent while a tool runs reaches the model in the same run. On the
// stream transport it goes with the tool's result, in the same model call
// (pi's tool boundary); the per-turn transports deliver it when the CLI
// turn ends, as a model call of its own.
func testSteerDuringToolCall(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:sleep 1.5; echo slept]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	steer := "change course [[say:steered]]"
	require.True(t, b.call(map[string]any{"type": "steer", "message": steer}).Get("success").Bool())
	assert.Equal(t, int64(1), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())

	frames := b.until(60*time.Second, isType("agent_end"))
	for _, f := range frames {
		assert.NotEqual(t, "agent_start", f.Get("type").String(), "one run")
	}
	end := frames[len(frames)-1]
	assert.Equal(t, []string{"[[bash:sleep 1.5; echo slept]]", steer}, userTexts(end))
	reqs := b.srv.MessagesRequests()
	require.Len(t, requestsEndingWith(reqs, steer), 1, "the steer reached the API once")
	assert.Equal(t, int64(0), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())

	if tp != "stream" {
		assert.Len(t, reqs, 3, "tool call, its answer, then the steer as a CLI turn of its own")
		assert.Equal(t, []string{"tool said: slept", "steered"}, assistantTexts(frames))
		return
	}
	// Stream: the steer went with the tool result, in the same model call.
	require.Len(t, reqs, 2, "the tool call, then tool result and steer in one model call")
	steerAfterToolResult(t, reqs[1], "change course")
	// The host sees it where the model got it: a new turn after the tool
	// results, before the answer.
	var sh []string
	for _, k := range shape(frames) {
		if k != "queue_update" { // the queue's changes are checked elsewhere
			sh = append(sh, k)
		}
	}
	i := indexOf(sh, "message_end:toolResult")
	require.GreaterOrEqual(t, i, 0, "%v", sh)
	assert.Equal(t, []string{"message_end:toolResult", "turn_end", "turn_start", "message_start:user", "message_end:user", "message_start:assistant"}, sh[i:i+6])
	assert.Equal(t, []string{"steered"}, assistantTexts(frames))
}

// steerAfterToolResult checks that req, a model call, ends with the tool
// result and then the steer (steer: a part of its text): the CLI quotes
// it after the result, 2.1.328 in a system message of its own, 2.1.332 in
// a text block of the result's user message.
func steerAfterToolResult(t *testing.T, req fakeapi.Request, steer string) {
	t.Helper()
	msgs := req.Messages().Array()
	require.GreaterOrEqual(t, len(msgs), 2)
	tail := msgs[len(msgs)-2].Get("content").Raw + msgs[len(msgs)-1].Get("content").Raw
	result, steered := strings.Index(tail, `"tool_result"`), strings.Index(tail, steer)
	assert.True(t, result >= 0 && steered > result, "the steer after the tool result, in the last two messages: %.2000s", tail)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestSteeringModesAtToolBoundary(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, mode := range []string{"one-at-a-time", "all"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testSteeringMode(t, mode)
		})
	}
}

// On the stream transport, two steers sent during a tool call: in "all"
// mode both go with the tool result; one at a time, the first does and the
// second follows the answer to it, as pi delivers one per boundary.
func testSteeringMode(t *testing.T, mode string) {
	b := startBridge(t, "--transport", "stream")
	require.True(t, b.call(map[string]any{"type": "set_steering_mode", "mode": mode}).Get("success").Bool())
	prompt := "[[bash:sleep 1.5; echo slept]]"
	require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	s1, s2 := "steer one [[say:one]]", "steer two [[say:two]]"
	require.True(t, b.call(map[string]any{"type": "steer", "message": s1}).Get("success").Bool())
	require.True(t, b.call(map[string]any{"type": "steer", "message": s2}).Get("success").Bool())
	frames := b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, []string{prompt, s1, s2}, userTexts(frames[len(frames)-1]))
	reqs := b.srv.MessagesRequests()
	// body is the part of request i after the last tool result.
	body := func(i int) string {
		raw := reqs[i].Messages().Raw
		return raw[strings.LastIndex(raw, "tool_result"):]
	}
	if mode == "all" {
		require.Len(t, reqs, 2, "both steers with the tool result")
		assert.Contains(t, body(1), "steer one")
		assert.Contains(t, body(1), "steer two")
		assert.Equal(t, []string{"two"}, assistantTexts(frames))
		return
	}
	require.Len(t, reqs, 3, "one steer per boundary")
	assert.Contains(t, body(1), "steer one")
	assert.NotContains(t, body(1), "steer two")
	assert.Equal(t, s2, reqs[2].LastUserText())
	assert.Equal(t, []string{"one", "two"}, assistantTexts(frames))
}

func TestAbortKeepsAHandedSteer(t *testing.T) { forEachTransport(t, testAbortKeepsAHandedSteer) }

// A steer the CLI holds when the run is aborted is not run by the CLI: it
// stays queued, as pi keeps an aborted run's queue, and comes with the next
// prompt, once.
func testAbortKeepsAHandedSteer(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.startSlowPrompt("[[slow:400]]")
	steer := "kept steer [[say:kept]]"
	require.True(t, b.call(map[string]any{"type": "steer", "message": steer}).Get("success").Bool())
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames := b.until(15*time.Second, isResponse("abort"))
	assert.Equal(t, []string{"[[slow:400]]"}, userTexts(last(frames, "agent_end", "")))
	assert.Equal(t, int64(1), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
	time.Sleep(300 * time.Millisecond) // time for a CLI that would run it anyway
	assert.Empty(t, requestsEndingWith(b.srv.MessagesRequests(), steer), "the CLI dropped it with the interrupt")

	// It goes to the model with the next prompt, in the same model call
	// (pi 1.5's order: the prompt, then the steer).
	frames = b.runPrompt("again")
	assert.Equal(t, []string{"again", steer}, userTexts(frames[len(frames)-1]))
	assert.Equal(t, []string{"kept"}, assistantTexts(frames))
	assert.Len(t, requestsEndingWith(b.srv.MessagesRequests(), "again\n\n"+steer), 1, "delivered once, with the prompt")
	assert.Empty(t, requestsEndingWith(b.srv.MessagesRequests(), steer), "and not on its own")
	assert.False(t, strings.Contains(b.stderr.String(), "panic"))
}

// On the stream transport a steer sent while the model's reply streams,
// before its tool call, is handed to the CLI at once (bridge/doc.go says
// why), and clear_queue takes it back from the CLI's queue
// (cancel_async_message): it is listed in steering, and the model never
// gets it.
func TestClearQueueTakesBackAHandedSteer(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	b := startBridge(t, "--transport", "stream")
	file := filepath.Join(b.dir, "small.txt")
	require.NoError(t, os.WriteFile(file, []byte("small\n"), 0o644))
	b.startSlowPrompt("[[slow:20]][[read:" + file + "]]")
	steer := "change course [[say:steered]]"
	require.True(t, b.call(map[string]any{"type": "steer", "message": steer}).Get("success").Bool())
	cleared := b.call(map[string]any{"type": "clear_queue"}).Get("data")
	assert.Equal(t, `{"steering":["change course [[say:steered]]"],"followUp":[]}`, cleared.Raw)
	assert.Zero(t, b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())

	frames := b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, []string{"[[slow:20]][[read:" + file + "]]"}, userTexts(frames[len(frames)-1]))
	assert.Zero(t, apiRequestsWith(b.srv, "change course"), "a cleared steer never reaches the model")
	assert.Len(t, b.srv.MessagesRequests(), 2, "the tool call, then the reply to its result")
	state := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.False(t, state.Get("isStreaming").Bool(), "the run ended: nothing of the steer's is outstanding")
}

// TestClearQueueRacesTheCLI: clear_queue sent around the moment the CLI
// takes a handed steer off its queue (when a tool's result goes to the
// model). Whatever the timing, the steer either reaches the model (listed
// in kept, shown in the run; or, started before clear_queue came, in
// neither list, as it is no longer queued) or is taken back (listed in
// steering, in no API request): never both, never neither.
func TestClearQueueRacesTheCLI(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	b := startBridge(t, "--transport", "stream")
	seen := map[string]int{}
	for i, delay := range []time.Duration{0, 800, 1100, 1200, 1300, 1350, 1400, 1450, 1500, 1600, 2500} {
		steer := fmt.Sprintf("steer %d [[say:steered %d]]", i, i)
		b.startSlowPrompt(fmt.Sprintf("[[slow:3]][[bash:sleep 0.3; echo run %d]]", i))
		require.True(t, b.call(map[string]any{"type": "steer", "message": steer}).Get("success").Bool())
		// From the steer on: the tool runs for 0.3 s after the reply's
		// last words, then its result goes to the model with the steer.
		delay *= time.Millisecond
		time.Sleep(delay)
		cleared := b.call(map[string]any{"type": "clear_queue"}).Get("data")
		frames := b.until(60*time.Second, isType("agent_end"))
		shown := slices.Contains(userTexts(frames[len(frames)-1]), steer)
		sent := apiRequestsWith(b.srv, fmt.Sprintf("steer %d ", i)) > 0
		kept, taken := cleared.Get("kept").Array(), cleared.Get("steering").Array()
		switch {
		case len(kept) == 1 && len(taken) == 0:
			seen["kept"]++
			assert.True(t, shown && sent, "delay %v: kept, so the model gets it and the run shows it (shown %v, sent %v)", delay, shown, sent)
		case len(taken) == 1 && len(kept) == 0:
			seen["taken back"]++
			assert.False(t, shown || sent, "delay %v: taken back, so the model never gets it (shown %v, sent %v)", delay, shown, sent)
		case len(taken) == 0 && len(kept) == 0:
			seen["started before"]++
			assert.True(t, shown && sent, "delay %v: no longer queued, so the model got it and the run shows it (shown %v, sent %v)", delay, shown, sent)
		default:
			t.Errorf("delay %v: clear_queue lists the steer once at most: %s", delay, cleared.Raw)
		}
		b.until(10*time.Second, isType("agent_settled"))
	}
	t.Logf("outcomes: %v", seen)
}
