//go:build linux

package main

// End-to-end tests: the built claude-rpc binary, driven over its stdin and
// stdout like a pi host drives `pi --mode rpc`, running the real pinned
// Claude CLI against the fake Anthropic API (claudecli/fakeapi).

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// shape returns the frames' types, with message roles and each run of
// message_update collapsed to one entry, e.g. "message_start:user".
func shape(frames []gjson.Result) []string {
	var out []string
	for _, f := range frames {
		s := f.Get("type").String()
		switch s {
		case "message_start", "message_end":
			s += ":" + f.Get("message.role").String()
		case "message_update":
			s += ":" + f.Get("assistantMessageEvent.type").String()
			if len(out) > 0 && out[len(out)-1] == s && strings.HasSuffix(s, "_delta") {
				continue
			}
		case "response":
			s += ":" + f.Get("command").String()
		}
		out = append(out, s)
	}
	return out
}

// deltaText joins the text deltas of the frames.
func deltaText(frames []gjson.Result) string {
	var b strings.Builder
	for _, f := range frames {
		if f.Get("assistantMessageEvent.type").String() == "text_delta" {
			b.WriteString(f.Get("assistantMessageEvent.delta").String())
		}
	}
	return b.String()
}

func last(frames []gjson.Result, typ, role string) gjson.Result {
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].Get("type").String() == typ && (role == "" || frames[i].Get("message.role").String() == role) {
			return frames[i]
		}
	}
	return gjson.Result{}
}

func TestPromptStreamsATextTurn(t *testing.T) { forEachTransport(t, testPromptStreamsATextTurn) }

func testPromptStreamsATextTurn(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	before := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Regexp(t, `^[0-9a-f-]{36}$`, before.Get("sessionId").String(), "a session id from the start, as pi has")
	assert.Equal(t, tp, before.Get("transport").String())
	// A first start (nothing in the info cache): the model is left out
	// until the CLI has said which models it has, then it is one of them.
	if m := before.Get("model"); m.Exists() {
		list := b.call(map[string]any{"type": "get_available_models"})
		assert.True(t, list.Get(`data.models.#(id=="`+m.Get("id").String()+`")`).Exists(), "get_state's model %s is listed: %s", m.Raw, list.Raw)
	}
	frames := b.runPrompt("hello <b>world</b> & co")

	assert.Equal(t, []string{
		"agent_start", "turn_start", "message_start:user", "message_end:user",
		"message_start:assistant", "message_update:text_start", "message_update:text_delta",
		"message_update:text_end", "message_end:assistant", "turn_end", "agent_end",
	}, shape(frames))
	want := "echo: hello <b>world</b> & co"
	assert.Equal(t, want, deltaText(frames), "deltas must add up to the reply, once")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, want, end.Get("content.0.text").String())
	assert.Equal(t, "stop", end.Get("stopReason").String())
	assert.Equal(t, "anthropic", end.Get("provider").String())
	assert.Equal(t, "anthropic-messages", end.Get("api").String())
	assert.Positive(t, end.Get("usage.input").Int())
	assert.Positive(t, end.Get("usage.totalTokens").Int())
	assert.Positive(t, end.Get("timestamp").Int())
	assert.Equal(t, "text_end", frames[7].Get("assistantMessageEvent.type").String())
	assert.Equal(t, want, frames[7].Get("assistantMessageEvent.content").String())
	assert.Equal(t, want, frames[7].Get("assistantMessageEvent.partial.content.0.text").String())
	for _, f := range b.seen {
		assert.NotContains(t, string(f), `\u003c`, "frames must not be HTML-escaped")
	}
	turnEnd := last(frames, "turn_end", "")
	assert.Equal(t, want, turnEnd.Get("message.content.0.text").String())
	assert.True(t, turnEnd.Get("toolResults").IsArray())
	agentEnd := frames[len(frames)-1]
	require.Len(t, agentEnd.Get("messages").Array(), 2)
	assert.Equal(t, "user", agentEnd.Get("messages.0.role").String())
	assert.Equal(t, "hello <b>world</b> & co", agentEnd.Get("messages.0.content.0.text").String())

	// The session is the CLI's.
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 1)
	sid := reqs[0].Header.Get("X-Claude-Code-Session-Id")
	require.NotEmpty(t, sid)
	st := b.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("success").Bool())
	assert.Equal(t, sid, st.Get("data.sessionId").String())
	assert.Equal(t, before.Get("sessionId").String(), sid, "the CLI ran on the session the bridge chose")
	// (Older CLIs report the 1M-context variant they ask the API for with a
	// beta header: "claude-opus-5[1m]".)
	assert.Equal(t, gjson.GetBytes(reqs[0].Body, "model").String(), strings.TrimSuffix(st.Get("data.model.id").String(), "[1m]"), "the model the CLI reported")
	assert.Positive(t, st.Get("data.model.contextWindow").Int())
	assert.False(t, st.Get("data.isStreaming").Bool())
	assert.Equal(t, int64(2), st.Get("data.messageCount").Int())
	assert.Equal(t, "anthropic", st.Get("data.model.provider").String())
	// The run's entries reach the session's pi file a moment after its end.
	assert.Eventually(t, func() bool {
		pf, err := sessions.ReadPi(st.Get("data.sessionFile").String())
		return err == nil && len(pf.Entries) >= 4 // model, thinking level, the two messages
	}, 5*time.Second, 10*time.Millisecond, "the session's pi file")

	msgs := b.call(map[string]any{"type": "get_messages"})
	assert.Len(t, msgs.Get("data.messages").Array(), 2)
	txt := b.call(map[string]any{"type": "get_last_assistant_text"})
	assert.Equal(t, want, txt.Get("data.text").String())
}

func TestSecondTurnResumesTheSession(t *testing.T) {
	forEachTransport(t, testSecondTurnResumesTheSession)
}

func testSecondTurnResumesTheSession(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("first [[say:the answer is 42]]")
	frames := b.runPrompt("second")
	assert.Equal(t, "echo: second", deltaText(frames))
	// agent_end carries this run's messages only.
	assert.Len(t, frames[len(frames)-1].Get("messages").Array(), 2)

	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Header.Get("X-Claude-Code-Session-Id"), reqs[1].Header.Get("X-Claude-Code-Session-Id"))
	history := reqs[1].Messages().Raw
	assert.Contains(t, history, "first [[say:the answer is 42]]", "turn 2's request must carry turn 1's prompt")
	assert.Contains(t, history, "the answer is 42", "turn 2's request must carry turn 1's reply")
	assert.Equal(t, "second", reqs[1].LastUserText())

	assert.Len(t, b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array(), 4)
}

func TestAPIErrorThenRecovery(t *testing.T) { forEachTransport(t, testAPIErrorThenRecovery) }

func testAPIErrorThenRecovery(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("break [[error:500]]")
	assert.Equal(t, []string{
		"agent_start", "turn_start", "message_start:user", "message_end:user",
		"message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
	}, shape(frames), "an API error before streaming has no message_update")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "500")

	frames = b.runPrompt("and now?")
	assert.Equal(t, "echo: and now?", deltaText(frames))
	assert.Equal(t, "stop", last(frames, "message_end", "assistant").Get("message.stopReason").String())
}

func TestAbortMidReply(t *testing.T) { forEachTransport(t, testAbortMidReply) }

func testAbortMidReply(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	resp := b.call(map[string]any{"type": "prompt", "message": "talk slowly [[slow:400]]"})
	require.True(t, resp.Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
	st := b.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("data.isStreaming").Bool())
	busy := b.call(map[string]any{"type": "prompt", "message": "me too"})
	assert.False(t, busy.Get("success").Bool())
	assert.Contains(t, busy.Get("error").String(), "streamingBehavior")

	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames := b.until(15*time.Second, isResponse("abort"))
	types := shape(frames)
	require.GreaterOrEqual(t, len(types), 7)
	assert.Equal(t, []string{"message_end:assistant", "turn_end", "agent_end", "prompt_result", "agent_settled", "session_settled", "response:abort"},
		types[len(types)-7:], "the abort response comes after agent_end and the settled events")
	assert.Equal(t, "ab", frames[len(frames)-1].Get("id").String())
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "aborted", end.Get("stopReason").String())
	assert.Equal(t, "This operation was aborted", end.Get("errorMessage").String())
	assert.NotEmpty(t, end.Get("content.0.text").String(), "what streamed before the abort is kept")

	b.requireIdle(tp)
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 1)
	assert.Eventually(t, func() bool { return b.srv.MessagesRequests()[0].Disconnected }, 5*time.Second, 20*time.Millisecond,
		"the API stream must be cut")

	frames = b.runPrompt("still there?")
	assert.Equal(t, "echo: still there?", deltaText(frames))
}

func TestBadLinesAreAnsweredAndServingGoesOn(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	tests := []struct {
		line    string
		command string
		id      string
		errPart string
	}{
		{"not json", "parse", "", "Failed to parse command"},
		{"", "parse", "", "empty"},
		{"[1,2]", "parse", "", "object"},
		{`{"id":"a"}`, "parse", "a", "type"},
		{`{"id":"b","type":7}`, "parse", "b", "string"},
		{`{"id":"c","type":"frobnicate"}`, "frobnicate", "c", "Unknown command: frobnicate"},
		{`{"id":"d","type":"prompt"}`, "prompt", "d", `"message"`},
		{`{"id":"e","type":"prompt","message":5}`, "prompt", "e", "string"},
		{`{"id":"f","type":"set_model","provider":"anthropic"}`, "set_model", "f", `"modelId"`},
	}
	for _, tt := range tests {
		b.send(tt.line + "\r") // CR before LF is tolerated
		f := b.next(10 * time.Second)
		assert.Equal(t, "response", f.Get("type").String(), tt.line)
		assert.Equal(t, tt.command, f.Get("command").String(), tt.line)
		assert.False(t, f.Get("success").Bool(), tt.line)
		assert.Equal(t, tt.id, f.Get("id").String(), tt.line)
		assert.Contains(t, f.Get("error").String(), tt.errPart, tt.line)
	}
	st := b.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("success").Bool())
	assert.Empty(t, b.call(map[string]any{"type": "get_last_assistant_text"}).Get("data").Map(), "no text yet: {}")
}

func TestLineOverTheCapIsRefusedAndReadingGoesOn(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--max-line", "100000")
	b.send(`{"type":"prompt","message":"` + strings.Repeat("x", 200_000) + `"}`)
	f := b.next(10 * time.Second)
	assert.Equal(t, "parse", f.Get("command").String())
	assert.Contains(t, f.Get("error").String(), "line too long")
	frames := b.runPrompt("short one")
	assert.Equal(t, "echo: short one", deltaText(frames))
}

func TestLongPromptArrivesByteExact(t *testing.T) {
	forEachTransport(t, testLongPromptArrivesByteExact)
}

func testLongPromptArrivesByteExact(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	unit := "emoji 😀🎉 \"quotes\" 'single' back\\slash \\n not-a-newline\r\nCRLF line sep\u2028para\u2029 <tag> & done\n"
	var sb strings.Builder
	for sb.Len() < 300_000 {
		sb.WriteString(unit)
	}
	prompt := "[[say:got it]] " + sb.String()
	frames := b.runPrompt(prompt)
	assert.Equal(t, "got it", deltaText(frames))
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 1)
	got := reqs[0].LastUserText()
	require.Equal(t, len(prompt), len(got), "length at the API")
	assert.True(t, got == prompt, "the prompt must reach the API byte for byte")
	// and the host's own copy of it
	assert.Equal(t, prompt, frames[2].Get("message.content.0.text").String())
}

func TestHugeReplyArrivesIntact(t *testing.T) { forEachTransport(t, testHugeReplyArrivesIntact) }

func testHugeReplyArrivesIntact(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("[[huge:2000000]][[chunk:65536]]")
	want := fakeapi.HugeText(2_000_000)
	got := last(frames, "message_end", "assistant").Get("message.content.0.text").String()
	require.Equal(t, len(want), len(got))
	assert.True(t, want == got, "message_end text must be the reply")
	assert.True(t, want == deltaText(frames), "deltas must add up to the reply")
	assert.True(t, want == b.call(map[string]any{"type": "get_last_assistant_text"}).Get("data.text").String())
	// Its pi file entry, written as it is encoded (a long message's).
	file := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	var entry string
	assert.Eventually(t, func() bool {
		pf, err := sessions.ReadPi(file)
		if err != nil || len(pf.Entries) == 0 {
			return false
		}
		e := pf.Entries[len(pf.Entries)-1]
		entry = gjson.GetBytes(e.Raw, "message.content.0.text").String()
		return e.Type == "message" && gjson.GetBytes(e.Raw, "message.role").String() == "assistant"
	}, 5*time.Second, 10*time.Millisecond, "the reply's entry in the session's pi file")
	assert.True(t, want == entry, "the pi file's entry holds the reply (%d bytes of %d)", len(entry), len(want))
}

func TestStdinClosedWhileIdle(t *testing.T) { forEachTransport(t, testStdinClosedWhileIdle) }

func testStdinClosedWhileIdle(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("hi")
	start := time.Now()
	code, rest := b.closeAndWait(15 * time.Second)
	assert.Equal(t, 0, code)
	assert.Empty(t, rest)
	assert.Less(t, time.Since(start), 10*time.Second)
	b.requireNoLeftovers()
}

func TestStdinClosedWhileStreaming(t *testing.T) { forEachTransport(t, testStdinClosedWhileStreaming) }

func testStdinClosedWhileStreaming(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	resp := b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"})
	require.True(t, resp.Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
	start := time.Now()
	code, rest := b.closeAndWait(15 * time.Second)
	assert.Equal(t, 0, code)
	assert.Less(t, time.Since(start), 10*time.Second)
	require.GreaterOrEqual(t, len(rest), len(settledTail))
	assert.Equal(t, settledTail, shape(rest)[len(rest)-len(settledTail):], "the running turn ends cleanly")
	assert.Equal(t, "aborted", last(rest, "message_end", "assistant").Get("message.stopReason").String())
	b.requireNoLeftovers()
}

func TestStdinClosedWhileAskingModels(t *testing.T) {
	forEachTransport(t, testStdinClosedWhileAskingModels)
}

// get_available_models with nothing cached asks the CLI (a query process
// on pipe and pty, the starting process on stream); stdin ends before it
// answered. claude-rpc answers the command (its models, or the shutdown as
// its failure), exits 0 and leaves no process behind.
func testStdinClosedWhileAskingModels(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp, "--cache-dir", "off")
	b.send(`{"id":"m","type":"get_available_models"}`)
	time.Sleep(300 * time.Millisecond) // the CLI starting
	start := time.Now()
	code, rest := b.closeAndWait(15 * time.Second)
	t.Logf("%s: claude-rpc exited %v after stdin closed", tp, time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 0, code)
	answered := false
	for _, f := range rest {
		if f.Get("type").String() == "response" && f.Get("id").String() == "m" {
			answered = true
			assert.True(t, f.Get("success").Bool() || strings.Contains(f.Get("error").String(), "the bridge is shutting down"), f.Raw)
		}
	}
	assert.True(t, answered, "get_available_models was not answered")
	b.requireNoLeftovers()
}

func TestMissingCLIIsAnErrorEventNotACrash(t *testing.T) {
	forEachTransport(t, testMissingCLIIsAnErrorEventNotACrash)
}

func testMissingCLIIsAnErrorEventNotACrash(t *testing.T, tp string) {
	srv := claudetest.Start(t)
	b := startBridgeWith(t, bridgeOpts{srv: srv, cli: "/nonexistent/claude"}, "--transport", tp)
	frames := b.runPrompt("anyone?")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "claude CLI not found")
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("success").Bool())
}

func TestCLIExitingWithoutResult(t *testing.T) { forEachTransport(t, testCLIExitingWithoutResult) }

func testCLIExitingWithoutResult(t *testing.T, tp string) {
	// A "CLI" that writes to stderr and fails at once.
	fake := t.TempDir() + "/claude"
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'boom: no credentials' >&2\nexit 3\n"), 0o755))
	srv := claudetest.Start(t)
	b := startBridgeWith(t, bridgeOpts{srv: srv, cli: fake}, "--transport", tp)
	frames := b.runPrompt("hello")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "exit status 3")
	assert.Contains(t, end.Get("errorMessage").String(), "boom: no credentials")
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"--mode", "json"},
		{"--mode", "rpc", "--transport", "carrier-pigeon"},
		{"--mode", "rpc", "--permission-mode", "yolo"},
		{"--mode", "rpc", "--log-level", "loud"},
		{"--mode", "rpc", "--cwd", "/nonexistent/dir"},
		{"--mode", "rpc", "@stray.md"}, // pi refuses @file arguments in --mode rpc too (a plain one it ignores)
		{"--mode", "rpc", "--idle-timeout", "soon"},
		{"--mode", "rpc", "--idle-timeout", "-1s"},
		{"--mode", "rpc", "--ask-timeout", "-5s"},
		{"--mode", "rpc", "--coalesce", "-4ms"},
		// A host flag whose value is missing (the last argument).
		{"--mode", "rpc", "--system-prompt"},
		{"--mode", "rpc", "--append-system-prompt"},
		{"--mode", "rpc", "--skill"},
		{"--mode", "rpc", "--session-dir"},
		{"--mode", "rpc", "--approve", "--name"},
	} {
		out, err := runBinary(t, nil, args...)
		var exitErr interface{ ExitCode() int }
		require.ErrorAs(t, err, &exitErr, "%v: %s", args, out)
		assert.Equal(t, 2, exitErr.ExitCode(), "%v", args)
		assert.Contains(t, out, "claude-rpc: ", "%v", args)
	}
}

func TestOptionsFromEnvironmentAndConfigFile(t *testing.T) {
	t.Parallel()
	// The environment sets an invalid transport: the error proves it was read.
	out, err := runBinary(t, []string{"CLAUDE_RPC_TRANSPORT=smoke"}, "--mode", "rpc")
	require.Error(t, err)
	assert.Contains(t, out, `"smoke"`)

	cfg := t.TempDir() + "/c.yaml"
	require.NoError(t, os.WriteFile(cfg, []byte("permission-mode: sideways\n"), 0o644))
	out, err = runBinary(t, nil, "--mode", "rpc", "--config", cfg)
	require.Error(t, err)
	assert.Contains(t, out, `"sideways"`)

	out, err = runBinary(t, nil, "--version")
	require.NoError(t, err)
	assert.Contains(t, out, "claude-rpc ")
}

func runBinary(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	return runBinaryWithStdin(t, env, "", args...)
}

func TestNewSessionStartsAfresh(t *testing.T) { forStreamAndPipe(t, testNewSessionStartsAfresh) }

func testNewSessionStartsAfresh(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("remember [[say:noted]]")
	first := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	require.NotEmpty(t, first)

	resp := b.call(map[string]any{"type": "new_session"})
	assert.True(t, resp.Get("success").Bool())
	assert.False(t, resp.Get("data.cancelled").Bool())
	st := b.call(map[string]any{"type": "get_state"})
	assert.NotEqual(t, first, st.Get("data.sessionId").String())
	assert.Equal(t, int64(0), st.Get("data.messageCount").Int())
	assert.Empty(t, b.call(map[string]any{"type": "get_last_assistant_text"}).Get("data").Map())

	b.runPrompt("who are you")
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 2)
	assert.NotContains(t, reqs[1].Messages().Raw, "remember", "a new session carries no history")
	second := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	assert.Equal(t, st.Get("data.sessionId").String(), second)
	assert.Equal(t, second, reqs[1].Header.Get("X-Claude-Code-Session-Id"))
}

func TestNewSessionWhileStreamingAbortsTheRun(t *testing.T) {
	forEachTransport(t, testNewSessionWhileStreamingAbortsTheRun)
}

func testNewSessionWhileStreamingAbortsTheRun(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"}).Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
	b.sendJSON(map[string]any{"type": "new_session", "id": "ns"})
	frames := b.until(15*time.Second, isResponse("new_session"))
	assert.Equal(t, "aborted", last(frames, "message_end", "assistant").Get("message.stopReason").String())
	assert.Equal(t, append(settledTail, "response:new_session"), shape(frames)[len(frames)-len(settledTail)-1:])
	assert.Equal(t, int64(0), b.call(map[string]any{"type": "get_state"}).Get("data.messageCount").Int())
	b.requireIdle(tp)
}

// TestChildEnvironment runs a stand-in CLI that records its environment and
// arguments: CLAUDECODE is dropped, the entrypoint set, flags passed.
func TestChildEnvironment(t *testing.T) {
	t.Parallel()
	fake := t.TempDir() + "/claude"
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nenv > \"$0.env\"\necho \"$@\" > \"$0.args\"\ncat >/dev/null\n"), 0o755))
	srv := claudetest.Start(t)
	b := startBridgeWith(t, bridgeOpts{srv: srv, cli: fake, env: []string{"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli"}}, "--transport", "pipe", "--model", "sonnet", "--permission-mode", "plan")
	frames := b.runPrompt("hi")
	assert.Contains(t, last(frames, "message_end", "assistant").Get("message.errorMessage").String(), "claude exited without a result")
	env, err := os.ReadFile(fake + ".env")
	require.NoError(t, err)
	assert.Contains(t, string(env), "\nCLAUDE_CODE_ENTRYPOINT=sdk-cli\n")
	assert.NotContains(t, string(env), "CLAUDECODE=")
	assert.NotContains(t, string(env), "ENTRYPOINT=cli")
	args, err := os.ReadFile(fake + ".args")
	require.NoError(t, err)
	// Asking is on (the default): the relay's MCP servers, permission
	// tool and hooks, in files named on the command line.
	assert.Regexp(t, `^-p --verbose --input-format stream-json --output-format stream-json --include-partial-messages --model sonnet --permission-mode plan `+
		`--mcp-config /\S+-mcp\.json --permission-prompt-tool mcp__claude-rpc__permission --settings /\S+-settings\.json --session-id=[0-9a-f-]{36}\n$`, string(args))
}

func runBinaryWithStdin(t *testing.T, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSIGTERMMidTurn(t *testing.T) { forEachTransport(t, testSIGTERMMidTurn) }

func testSIGTERMMidTurn(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"}).Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
	require.NotEmpty(t, b.leftovers(), "the CLI runs")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-b.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("claude-rpc did not exit within 15s of SIGTERM")
	}
	assert.Equal(t, 128+int(syscall.SIGTERM), b.cmd.ProcessState.ExitCode())
	var rest []gjson.Result
	for f := range b.frames {
		rest = append(rest, gjson.ParseBytes(f))
	}
	require.GreaterOrEqual(t, len(rest), len(settledTail), "%v", shape(rest))
	assert.Equal(t, settledTail, shape(rest)[len(rest)-len(settledTail):], "the running turn ends cleanly")
	b.requireNoLeftovers()
}

func TestThinkingThenText(t *testing.T) { forEachTransport(t, testThinkingThenText) }

func testThinkingThenText(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("[[think:Weighing the options.]][[say:Option B.]][[chunk:5]]")
	assert.Equal(t, []string{
		"agent_start", "turn_start", "message_start:user", "message_end:user", "message_start:assistant",
		"message_update:thinking_start", "message_update:thinking_delta", "message_update:thinking_end",
		"message_update:text_start", "message_update:text_delta", "message_update:text_end",
		"message_end:assistant", "turn_end", "agent_end",
	}, shape(frames))
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "thinking", end.Get("content.0.type").String())
	assert.Equal(t, "Weighing the options.", end.Get("content.0.thinking").String())
	assert.Equal(t, "Option B.", end.Get("content.1.text").String())
	for _, f := range frames {
		if f.Get("assistantMessageEvent.type").String() == "thinking_end" {
			assert.Equal(t, "Weighing the options.", f.Get("assistantMessageEvent.content").String())
		}
	}
}

func TestBashToolCall(t *testing.T) { forEachTransport(t, testBashToolCall) }

func testBashToolCall(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("[[say:Let me run it.]][[bash:echo hello-from-bash]]")
	assert.Equal(t, []string{
		"agent_start", "turn_start", "message_start:user", "message_end:user", "message_start:assistant",
		"message_update:text_start", "message_update:text_delta", "message_update:text_end",
		"message_update:toolcall_start", "message_update:toolcall_delta", "message_update:toolcall_end",
		"message_end:assistant", "tool_execution_start", "tool_execution_end",
		"message_start:toolResult", "message_end:toolResult", "turn_end",
		"turn_start", "message_start:assistant", "message_update:text_start", "message_update:text_delta",
		"message_update:text_end", "message_end:assistant", "turn_end", "agent_end",
	}, shape(frames))
	var start, end, firstTurnEnd gjson.Result
	for _, f := range frames {
		switch f.Get("type").String() {
		case "tool_execution_start":
			start = f
		case "tool_execution_end":
			end = f
		case "turn_end":
			if !firstTurnEnd.Exists() {
				firstTurnEnd = f
			}
		}
	}
	assert.Equal(t, "bash", start.Get("toolName").String(), "pi's name (--tool-names pi, the default)")
	assert.Equal(t, "echo hello-from-bash", start.Get("args.command").String())
	assert.Equal(t, start.Get("toolCallId").String(), end.Get("toolCallId").String())
	assert.False(t, end.Get("isError").Bool())
	assert.Equal(t, "hello-from-bash", end.Get("result.content.0.text").String())
	assert.Equal(t, "hello-from-bash", end.Get("result.details.stdout").String())
	assert.Equal(t, "toolUse", firstTurnEnd.Get("message.stopReason").String())
	assert.Len(t, firstTurnEnd.Get("toolResults").Array(), 1)
	assert.Equal(t, "tool said: hello-from-bash", last(frames, "message_end", "assistant").Get("message.content.0.text").String(),
		"the final text quotes the tool output")
	msgs := frames[len(frames)-1].Get("messages").Array()
	require.Len(t, msgs, 4)
	assert.Equal(t, []string{"user", "assistant", "toolResult", "assistant"},
		[]string{msgs[0].Get("role").String(), msgs[1].Get("role").String(), msgs[2].Get("role").String(), msgs[3].Get("role").String()})
	assert.Len(t, b.srv.MessagesRequests(), 2, "one model call per turn")
}

func TestAbortMidToolCall(t *testing.T) { forEachTransport(t, testAbortMidToolCall) }

func testAbortMidToolCall(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:sleep 20; echo finished]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	// The Bash child runs (in a session of its own, as the CLI starts it).
	require.Eventually(t, func() bool {
		for _, p := range b.leftovers() {
			if strings.Contains(p, "sleep 20") {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the Bash tool runs")

	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames := b.until(15*time.Second, isResponse("abort"))
	end := last(frames, "tool_execution_end", "")
	assert.True(t, end.Get("isError").Bool())
	assert.Equal(t, append(settledTail, "response:abort"), shape(frames)[len(frames)-len(settledTail)-1:])
	b.requireIdle(tp) // the sleep is gone too

	frames = b.runPrompt("next [[say:fine]]")
	assert.Equal(t, "fine", deltaText(frames))
}

func TestCLIKilledMidTurn(t *testing.T) { forEachTransport(t, testCLIKilledMidTurn) }

func testCLIKilledMidTurn(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[slow:400]]"}).Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
	// Kill it once the CLI has written the turn's start to its transcript,
	// so the resumed session must carry it (a CLI killed earlier has nothing
	// to resume, and the next turn starts the session afresh).
	file := b.transcript()
	require.Eventually(t, func() bool { _, err := os.Stat(file); return err == nil }, 10*time.Second, 10*time.Millisecond)
	// The turn's process (transcript's get_state may have started a query
	// process beside it, on a loaded machine still running).
	pids := b.turnPids()
	require.Len(t, pids, 1, "the bridge's processes: %q", b.leftovers())
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	frames := b.until(15*time.Second, isType("agent_end"))
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "killed")

	frames = b.runPrompt("still alive? [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames), "the next prompt resumes the session")
	reqs := b.srv.MessagesRequests()
	assert.Contains(t, reqs[len(reqs)-1].Messages().Raw, "[[slow:400]]", "the new process resumed the session")
}

// startSlowPrompt starts a slow reply and waits until text streams.
func (b *rpcProc) startSlowPrompt(msg string) {
	b.t.Helper()
	require.True(b.t, b.call(map[string]any{"type": "prompt", "message": msg}).Get("success").Bool())
	b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("assistantMessageEvent.type").String() == "text_delta"
	})
}

// userTexts lists the text of the user messages in agent_end's messages.
func userTexts(agentEnd gjson.Result) []string {
	var out []string
	for _, m := range agentEnd.Get("messages").Array() {
		if m.Get("role").String() == "user" {
			out = append(out, m.Get("content.0.text").String())
		}
	}
	return out
}

func TestQueuedMessagesStayInTheRun(t *testing.T) {
	forStreamAndPipe(t, testQueuedMessagesStayInTheRun)
}

func testQueuedMessagesStayInTheRun(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.startSlowPrompt("first [[slow:30]]")
	assert.True(t, b.call(map[string]any{"type": "follow_up", "message": "follow one [[say:f1]]"}).Get("success").Bool())
	assert.True(t, b.call(map[string]any{"type": "prompt", "message": "follow two [[say:f2]]", "streamingBehavior": "followUp"}).Get("success").Bool())
	assert.True(t, b.call(map[string]any{"type": "steer", "message": "steer me [[say:s1]]"}).Get("success").Bool())
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, int64(3), st.Get("pendingMessageCount").Int())

	frames := b.until(60*time.Second, isType("agent_end"))
	for _, f := range frames {
		assert.NotEqual(t, "agent_start", f.Get("type").String(), "one run")
	}
	end := frames[len(frames)-1]
	// Steering first, then the follow-ups one at a time (the default mode).
	assert.Equal(t, []string{"first [[slow:30]]", "steer me [[say:s1]]", "follow one [[say:f1]]", "follow two [[say:f2]]"}, userTexts(end))
	var replies []string
	for _, f := range frames {
		if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
			replies = append(replies, f.Get("message.content.0.text").String())
		}
	}
	require.Len(t, replies, 4)
	assert.Equal(t, []string{"s1", "f1", "f2"}, replies[1:])
	assert.Equal(t, int64(0), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
	assert.Len(t, b.srv.MessagesRequests(), 4, "one CLI turn per delivered message")
}

func TestQueueModeAll(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	assert.True(t, b.call(map[string]any{"type": "set_follow_up_mode", "mode": "all"}).Get("success").Bool())
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, "all", st.Get("followUpMode").String())
	assert.Equal(t, "one-at-a-time", st.Get("steeringMode").String())
	b.startSlowPrompt("first [[slow:30]]")
	b.call(map[string]any{"type": "follow_up", "message": "one"})
	b.call(map[string]any{"type": "follow_up", "message": "two [[say:both]]"})
	frames := b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, []string{"first [[slow:30]]", "one", "two [[say:both]]"}, userTexts(frames[len(frames)-1]))
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 2, "both follow-ups in one CLI turn")
	assert.Equal(t, "one\n\ntwo [[say:both]]", reqs[1].LastUserText())
}

func TestAbortKeepsTheQueue(t *testing.T) { forEachTransport(t, testAbortKeepsTheQueue) }

func testAbortKeepsTheQueue(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.startSlowPrompt("[[slow:400]]")
	b.call(map[string]any{"type": "follow_up", "message": "later [[say:kept]]"})
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames := b.until(15*time.Second, isResponse("abort"))
	assert.Equal(t, []string{"[[slow:400]]"}, userTexts(last(frames, "agent_end", "")), "the follow-up is not delivered by an aborted run")
	assert.Equal(t, int64(1), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())

	frames = b.runPrompt("again [[say:again]]")
	assert.Equal(t, []string{"again [[say:again]]", "later [[say:kept]]"}, userTexts(frames[len(frames)-1]),
		"the kept follow-up comes with the next run")
}

func TestAbortAndPrompt(t *testing.T) { forEachTransport(t, testAbortAndPrompt) }

func testAbortAndPrompt(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.startSlowPrompt("[[slow:400]]")
	resp := b.call(map[string]any{"type": "abort_and_prompt", "message": "instead [[say:new]]"})
	assert.True(t, resp.Get("success").Bool())
	frames := b.until(30*time.Second, isType("agent_end"))
	assert.Equal(t, "aborted", last(frames, "message_end", "assistant").Get("message.stopReason").String())
	assert.False(t, frames[len(frames)-1].Get("isTerminal").Bool(), "abort_and_prompt's prompt follows")
	frames = b.until(30*time.Second, isType("agent_end"))
	assert.Equal(t, []string{"prompt_result", "agent_start"}, shape(frames)[:2], "the aborted prompt's result, then the new run")
	assert.Equal(t, "aborted", frames[0].Get("status").String())
	assert.Equal(t, "new", deltaText(frames))
}

func TestPromptWithImage(t *testing.T) { forEachTransport(t, testPromptWithImage) }

func testPromptWithImage(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	// A 1x1 PNG.
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	resp := b.call(map[string]any{"type": "prompt", "message": "what is this [[say:a dot]]",
		"images": []any{map[string]any{"type": "image", "data": png, "mimeType": "image/png"}}})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	frames := b.until(60*time.Second, isType("agent_end"))
	user := frames[2].Get("message")
	assert.Equal(t, "image", user.Get("content.1.type").String())
	assert.Equal(t, png, user.Get("content.1.data").String())
	assert.Equal(t, "a dot", deltaText(frames))
	reqs := b.srv.MessagesRequests()
	require.Len(t, reqs, 1)
	var sawImage bool
	for _, m := range reqs[0].Messages().Array() {
		for _, c := range m.Get("content").Array() {
			if c.Get("type").String() == "image" && c.Get("source.data").String() == png {
				sawImage = true
			}
		}
	}
	assert.True(t, sawImage, "the image reaches the API")
}

func TestQueueCommandErrors(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	for _, tt := range []struct {
		cmd     map[string]any
		errPart string
	}{
		{map[string]any{"type": "follow_up"}, `"message"`},
		{map[string]any{"type": "steer", "message": 3}, "string"},
		{map[string]any{"type": "set_steering_mode", "mode": "some"}, "one-at-a-time"},
		{map[string]any{"type": "set_follow_up_mode"}, `"mode"`},
		{map[string]any{"type": "set_interrupt_mode", "mode": "never"}, "immediate"},
		{map[string]any{"type": "prompt", "message": "x", "streamingBehavior": "later"}, "streamingBehavior"},
		{map[string]any{"type": "prompt", "message": "x", "images": "cat.png"}, "array"},
		{map[string]any{"type": "prompt", "message": "x", "images": []any{map[string]any{"data": "AAAA", "mimeType": "image/bmp"}}}, "mimeType"},
		{map[string]any{"type": "prompt", "message": "x", "images": []any{map[string]any{"data": "!!", "mimeType": "image/png"}}}, "base64"},
		{map[string]any{"type": "abort_and_prompt"}, `"message"`},
	} {
		resp := b.call(tt.cmd)
		assert.False(t, resp.Get("success").Bool(), "%v", tt.cmd)
		assert.Contains(t, resp.Get("error").String(), tt.errPart, "%v", tt.cmd)
	}
	assert.True(t, b.call(map[string]any{"type": "set_interrupt_mode", "mode": "wait"}).Get("success").Bool())
	assert.Equal(t, "wait", b.call(map[string]any{"type": "get_state"}).Get("data.interruptMode").String())
	// steer while idle is queued (pi 0.73.1 and 1.5.2): it goes to the
	// model with the next prompt, in the same model call.
	idle := b.call(map[string]any{"type": "steer", "message": "idle steer [[say:ran]]"})
	require.True(t, idle.Get("success").Bool())
	assert.Equal(t, "queued", idle.Get("data.disposition").String())
	assert.Equal(t, int64(1), b.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
	assert.Empty(t, b.srv.MessagesRequests(), "nothing runs")
	frames := b.runPrompt("the prompt")
	assert.Equal(t, []string{"the prompt", "idle steer [[say:ran]]"}, userTexts(frames[len(frames)-1]))
	assert.Equal(t, "ran", deltaText(frames))
	require.Len(t, b.srv.MessagesRequests(), 1, "one model call for both")
}

func TestAutoRetryEvents(t *testing.T) { forEachTransport(t, testAutoRetryEvents) }

func testAutoRetryEvents(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("flaky [[flaky:529:1]][[say:made it]]")
	var start, end gjson.Result
	for _, f := range frames {
		switch f.Get("type").String() {
		case "auto_retry_start":
			start = f
		case "auto_retry_end":
			end = f
		}
	}
	require.True(t, start.Exists(), "auto_retry_start")
	assert.Equal(t, int64(1), start.Get("attempt").Int())
	assert.Positive(t, start.Get("maxAttempts").Int())
	assert.Positive(t, start.Get("delayMs").Int())
	assert.Equal(t, "529 overloaded", start.Get("errorMessage").String())
	require.True(t, end.Exists(), "auto_retry_end")
	assert.True(t, end.Get("success").Bool())
	assert.Equal(t, "made it", deltaText(frames))
	assert.Len(t, b.srv.MessagesRequests(), 2, "the failed attempt and the retry")
}

func TestSetAutoRetry(t *testing.T) { forStreamAndPipe(t, testSetAutoRetry) }

func testSetAutoRetry(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("warm up [[say:ok]]") // a stream process exists: the change must replace it
	assert.True(t, b.call(map[string]any{"type": "set_auto_retry", "enabled": false}).Get("success").Bool())
	frames := b.runPrompt("flaky [[flaky:529:1]][[say:no]]")
	assert.Equal(t, "error", last(frames, "message_end", "assistant").Get("message.stopReason").String())
	for _, f := range frames {
		assert.NotEqual(t, "auto_retry_start", f.Get("type").String(), "no retries")
	}
	assert.True(t, b.call(map[string]any{"type": "set_auto_retry", "enabled": true}).Get("success").Bool())
	frames = b.runPrompt("flaky again [[flaky:529:1]][[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames))
	assert.False(t, b.call(map[string]any{"type": "set_auto_retry", "enabled": "no"}).Get("success").Bool())
}

func TestAbortRetry(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[flaky:529:9]][[say:never]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("auto_retry_start"))
	assert.True(t, b.call(map[string]any{"type": "abort_retry"}).Get("success").Bool())
	frames := b.until(15*time.Second, isType("agent_end"))
	end := last(frames, "auto_retry_end", "")
	require.True(t, end.Exists())
	assert.False(t, end.Get("success").Bool())
	frames = b.runPrompt("after [[say:fine]]")
	assert.Equal(t, "fine", deltaText(frames))
	assert.True(t, b.call(map[string]any{"type": "abort_retry"}).Get("success").Bool(), "nothing to abort: still success")
}

func TestIdleTimeout(t *testing.T) { forEachTransport(t, testIdleTimeout) }

func testIdleTimeout(t *testing.T, tp string) {
	// 3 s: the watchdog counts from the CLI's start, which on a loaded
	// machine can take over a second before its first line.
	b := startBridge(t, "--transport", tp, "--idle-timeout", "3s")
	start := time.Now()
	frames := b.runPrompt("hang [[stall:20000]][[say:late]]")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "claude printed nothing for 3s")
	assert.Less(t, time.Since(start), 15*time.Second)
	b.requireIdle(tp)
	frames = b.runPrompt("and now [[say:quick]]")
	assert.Equal(t, "quick", deltaText(frames))
}

// TestSilentCLI: a "CLI" that reads stdin and never prints nor answers
// control requests; the watchdog, then the interrupt deadline, end the turn.
func TestSilentCLI(t *testing.T) { forEachTransport(t, testSilentCLI) }

func testSilentCLI(t *testing.T, tp string) {
	fake := t.TempDir() + "/claude"
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\ncat >/dev/null\n"), 0o755))
	b := startBridgeWith(t, bridgeOpts{cli: fake}, "--transport", tp, "--idle-timeout", "1s")
	frames := b.runPrompt("anyone?")
	assert.Equal(t, "error", last(frames, "message_end", "assistant").Get("message.stopReason").String())
	b.requireIdle("pipe") // nothing of it is left, whichever the transport
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("success").Bool())
}

func TestSessionNameAndStats(t *testing.T) { forStreamAndPipe(t, testSessionNameAndStats) }

func testSessionNameAndStats(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	empty := b.call(map[string]any{"type": "set_session_name", "name": "  "})
	assert.False(t, empty.Get("success").Bool())
	assert.Equal(t, "Session name cannot be empty", empty.Get("error").String())
	b.runPrompt("warm up [[say:ok]]") // on stream, the name must reach a process that already runs
	require.True(t, b.call(map[string]any{"type": "set_session_name", "name": "Build fixer"}).Get("success").Bool())
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, "Build fixer", st.Get("sessionName").String())
	b.runPrompt("[[bash:echo counted]]")

	stats := b.call(map[string]any{"type": "get_session_stats"}).Get("data")
	assert.Equal(t, st.Get("sessionId").String(), stats.Get("sessionId").String())
	assert.Equal(t, int64(2), stats.Get("userMessages").Int())
	assert.Equal(t, int64(3), stats.Get("assistantMessages").Int())
	assert.Equal(t, int64(1), stats.Get("toolCalls").Int())
	assert.Equal(t, int64(1), stats.Get("toolResults").Int())
	assert.Equal(t, int64(6), stats.Get("totalMessages").Int())
	tok := stats.Get("tokens")
	var in, out int64
	for _, r := range b.srv.MessagesRequests() {
		in, out = in+int64(r.InputTokens), out+int64(r.OutputTokens)
	}
	assert.Positive(t, in)
	assert.Equal(t, in, tok.Get("input").Int(), "the sum of what the API reported")
	assert.Equal(t, out, tok.Get("output").Int(), "the sum of what the API reported")
	assert.Equal(t, tok.Get("input").Int()+tok.Get("output").Int()+tok.Get("cacheRead").Int()+tok.Get("cacheWrite").Int(), tok.Get("total").Int())
	assert.Positive(t, stats.Get("cost").Float())

	// The CLI keeps the name as the session's title.
	transcript, err := os.ReadFile(b.transcript())
	require.NoError(t, err)
	assert.Contains(t, string(transcript), `"customTitle":"Build fixer"`)
	// So does its pi file (pi's session_info), which get_session_stats names.
	pf, err := sessions.ReadPi(stats.Get("sessionFile").String())
	require.NoError(t, err)
	assert.Equal(t, "Build fixer", pf.Name())
}

func TestBashCommand(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	res := b.call(map[string]any{"type": "bash", "command": "echo hi; echo oops >&2; pwd; exit 3"})
	require.True(t, res.Get("success").Bool(), res.Raw)
	d := res.Get("data")
	assert.Equal(t, "hi\noops\n"+b.dir+"\n", d.Get("output").String(), "stdout and stderr, in the session's folder")
	assert.Equal(t, int64(3), d.Get("exitCode").Int())
	assert.False(t, d.Get("cancelled").Bool())
	assert.False(t, d.Get("truncated").Bool())

	frames := b.runPrompt("what happened? [[say:it failed]]")
	assert.Equal(t, "what happened? [[say:it failed]]", last(frames, "message_start", "user").Get("message.content.0.text").String(), "the host sees its prompt as sent")
	reqs := b.srv.MessagesRequests()
	sent := reqs[len(reqs)-1].LastUserText()
	assert.True(t, strings.HasPrefix(sent, "Ran `echo hi; echo oops >&2; pwd; exit 3`\n```\nhi\noops\n"), sent)
	assert.Contains(t, sent, "Command exited with code 3")
	assert.True(t, strings.HasSuffix(sent, "what happened? [[say:it failed]]"))
	b.runPrompt("again [[say:ok]]")
	reqs = b.srv.MessagesRequests()
	assert.Equal(t, "again [[say:ok]]", reqs[len(reqs)-1].LastUserText(), "the context goes with one prompt only")
}

func TestBashLongOutputAndAbort(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	d := b.call(map[string]any{"type": "bash", "command": "head -c 200000 /dev/zero | tr '\\0' x; echo; echo end"}).Get("data")
	assert.True(t, d.Get("truncated").Bool())
	assert.Len(t, d.Get("output").String(), 50<<10)
	assert.True(t, strings.HasSuffix(d.Get("output").String(), "x\nend\n"))
	full, err := os.ReadFile(d.Get("fullOutputPath").String())
	require.NoError(t, err)
	assert.Len(t, full, 200_000+5)
	_ = os.Remove(d.Get("fullOutputPath").String())

	b.sendJSON(map[string]any{"type": "bash", "id": "long", "command": "sleep 30 & sleep 31; echo never"})
	require.Eventually(t, func() bool {
		for _, p := range b.leftovers() {
			if strings.Contains(p, "sleep 31") {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	busy := b.call(map[string]any{"type": "bash", "command": "true"})
	assert.False(t, busy.Get("success").Bool(), "one bash command at a time")
	b.sendJSON(map[string]any{"type": "abort_bash", "id": "ab"})
	var frames []gjson.Result // the answers; bash_execution_update frames (its output) aside
	for _, f := range b.until(10*time.Second, isResponse("abort_bash")) {
		if f.Get("type").String() != "bash_execution_update" {
			frames = append(frames, f)
		}
	}
	require.Len(t, frames, 2)
	assert.Equal(t, "long", frames[0].Get("id").String())
	assert.True(t, frames[0].Get("data.cancelled").Bool())
	assert.NotContains(t, frames[0].Get("data.output").String(), "never")
	b.requireIdle("stream") // both sleeps are gone (the session's warm CLI stays)

	bad := b.call(map[string]any{"type": "bash"})
	assert.False(t, bad.Get("success").Bool())
	assert.Contains(t, bad.Get("error").String(), `"command"`)
	assert.True(t, b.call(map[string]any{"type": "abort_bash"}).Get("success").Bool(), "nothing to abort: still success")
}

// TestPromptWithImageURL: omp's image form {source:{type:"url", url}}
// reaches the API as a URL image block.
func TestPromptWithImageURL(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	const u = "https://example.com/cat.png"
	resp := b.call(map[string]any{"type": "prompt", "message": "what is this [[say:a cat]]",
		"images": []any{map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": u}}}})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	frames := b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, "a cat", deltaText(frames))
	var sent bool
	for _, m := range b.srv.MessagesRequests()[0].Messages().Array() {
		for _, c := range m.Get("content").Array() {
			if c.Get("type").String() == "image" && c.Get("source.type").String() == "url" && c.Get("source.url").String() == u {
				sent = true
			}
		}
	}
	assert.True(t, sent, "the URL image reached the API")
	bad := b.call(map[string]any{"type": "prompt", "message": "x", "images": []any{map[string]any{"source": map[string]any{"type": "url", "url": "file:///etc/passwd"}}}})
	assert.False(t, bad.Get("success").Bool())
	assert.Contains(t, bad.Get("error").String(), "http(s) URL")
}
