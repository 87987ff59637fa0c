//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// badInputs are host lines that must each get one clear success:false
// answer, and change nothing. command is the answer's command, errPart a
// piece of its error.
var badInputs = []struct {
	name, line, command, errPart string
}{
	{"not JSON", `hello`, "parse", "not valid JSON"},
	{"empty line", ``, "parse", "empty"},
	{"JSON array", `[{"type":"get_state"}]`, "parse", "JSON object"},
	{"JSON number", `42`, "parse", "JSON object"},
	{"JSON string", `"get_state"`, "parse", "JSON object"},
	{"JSON null", `null`, "parse", "JSON object"},
	{"truncated JSON", `{"type":"prompt","message":"hi`, "parse", "not valid JSON"},
	{"trailing garbage", `{"type":"get_state"} and more`, "parse", "not valid JSON"},
	{"raw NUL byte", "{\"type\":\"get_state\"}\x00", "parse", "not valid JSON"},
	{"missing type", `{"id":"x"}`, "parse", "type"},
	{"type not a string", `{"type":["prompt"]}`, "parse", "string"},
	{"unknown command", `{"type":"launch_missiles"}`, "launch_missiles", "Unknown command"},
	{"prompt without message", `{"type":"prompt"}`, "prompt", `"message"`},
	{"prompt message a number", `{"type":"prompt","message":12}`, "prompt", "string"},
	{"prompt message an object", `{"type":"prompt","message":{"text":"hi"}}`, "prompt", "string"},
	{"empty prompt", `{"type":"prompt","message":""}`, "prompt", "empty"},
	{"blank prompt", `{"type":"prompt","message":" \n\t "}`, "prompt", "empty"},
	{"bad streamingBehavior", `{"type":"prompt","message":"x","streamingBehavior":"now"}`, "prompt", "streamingBehavior"},
	{"images not an array", `{"type":"prompt","message":"x","images":"a.png"}`, "prompt", "array"},
	{"image of a wrong type", `{"type":"prompt","message":"x","images":[{"data":"AAAA","mimeType":"image/tiff"}]}`, "prompt", "mimeType"},
	{"image not base64", `{"type":"prompt","message":"x","images":[{"data":"%%%","mimeType":"image/png"}]}`, "prompt", "base64"},
	{"image without data", `{"type":"prompt","message":"x","images":[{"mimeType":"image/png"}]}`, "prompt", "data"},
	{"steer without message", `{"type":"steer"}`, "steer", `"message"`},
	{"follow_up message a bool", `{"type":"follow_up","message":true}`, "follow_up", "string"},
	{"abort_and_prompt without message", `{"type":"abort_and_prompt"}`, "abort_and_prompt", `"message"`},
	{"bad steering mode", `{"type":"set_steering_mode","mode":"most"}`, "set_steering_mode", "one-at-a-time"},
	{"bad interrupt mode", `{"type":"set_interrupt_mode","mode":"later"}`, "set_interrupt_mode", "immediate"},
	{"set_model without modelId", `{"type":"set_model","provider":"anthropic"}`, "set_model", "modelId"},
	{"set_model of another provider", `{"type":"set_model","provider":"openai","modelId":"gpt-5"}`, "set_model", "anthropic"},
	{"unknown thinking level", `{"type":"set_thinking_level","level":"ultra"}`, "set_thinking_level", "level"},
	{"auto retry not a bool", `{"type":"set_auto_retry","enabled":"yes"}`, "set_auto_retry", "boolean"},
	{"auto compaction not a bool", `{"type":"set_auto_compaction","enabled":1}`, "set_auto_compaction", "boolean"},
	{"compact instructions not a string", `{"type":"compact","customInstructions":["a"]}`, "compact", "string"},
	{"empty bash command", `{"type":"bash","command":""}`, "bash", "empty"},
	{"bash command a number", `{"type":"bash","command":7}`, "bash", "string"},
	{"empty session name", `{"type":"set_session_name","name":"  "}`, "set_session_name", "empty"},
	{"UI answer for nothing", `{"type":"extension_ui_response","id":"ui_42","value":"yes"}`, "extension_ui_response", "no request"},
	{"UI answer without a value", `{"type":"extension_ui_response","id":"ui_42"}`, "extension_ui_response", "value"},
	{"host tool result for nothing", `{"type":"host_tool_result","id":"host_9","result":{"content":[]}}`, "host_tool_result", "no request"},
	{"host tools not an array", `{"type":"set_host_tools","tools":{}}`, "set_host_tools", "array"},
	{"unknown permission mode", `{"type":"set_permission_mode","mode":"yolo"}`, "set_permission_mode", "acceptEdits, auto"},
	{"permission mode a number", `{"type":"set_permission_mode","mode":1}`, "set_permission_mode", "string"},
}

// TestBadInputTable sends every bad input, then checks that the bridge
// answered each one clearly, in order, changed nothing, and still works.
func TestBadInputTable(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--max-line", "1000000")
	before := b.call(map[string]any{"type": "get_state"}).Get("data")
	for _, in := range badInputs {
		t.Run(in.name, func(t *testing.T) {
			b.send(in.line)
			f := b.next(10 * time.Second)
			assert.Equal(t, "response", f.Get("type").String(), f.Raw)
			assert.Equal(t, in.command, f.Get("command").String(), f.Raw)
			assert.False(t, f.Get("success").Bool(), f.Raw)
			assert.Contains(t, f.Get("error").String(), in.errPart, f.Raw)
		})
	}
	t.Run("line over the cap", func(t *testing.T) {
		b.send(`{"type":"prompt","message":"` + strings.Repeat("y", 2_000_000) + `"}`)
		f := b.next(10 * time.Second)
		assert.Equal(t, "parse", f.Get("command").String())
		assert.Contains(t, f.Get("error").String(), "too long")
	})
	after := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, before.Get("sessionId").String(), after.Get("sessionId").String())
	assert.Equal(t, before.Get("messageCount").Int(), after.Get("messageCount").Int())
	assert.False(t, after.Get("isStreaming").Bool(), "no bad input started a run")
	assert.Empty(t, b.srv.MessagesRequests(), "no bad input reached the API")
	assert.Equal(t, "echo: fine", deltaText(b.runPrompt("fine")))
	t.Logf("%d kinds of bad input answered", len(badInputs)+1)
}

// TestOddIDsAndBursts: ids of any JSON type are echoed as given, repeated
// ids are each answered, and a burst of commands is answered in order.
func TestOddIDsAndBursts(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	// open-design sends {"id":1,"type":"get_state"} and matches the answer
	// by the number: the id comes back as the same JSON text, first in the
	// frame as pi writes it, whatever its type (null too, as pi 1.6.0).
	for _, id := range []string{`1`, `7`, `2.50`, `{"a":[1]}`, `"dup"`, `"dup"`, `null`, `true`} {
		b.send(`{"id":` + id + `,"type":"get_state"}`)
		f := b.next(10 * time.Second)
		assert.True(t, f.Get("success").Bool(), f.Raw)
		assert.True(t, strings.HasPrefix(f.Raw, `{"id":`+id+`,"type":"response","command":"get_state",`), "id %s: %.120s", id, f.Raw)
	}
	b.send(`{"id":3}`)
	f := b.next(10 * time.Second)
	assert.Equal(t, `{"id":3,"type":"response","command":"parse","success":false,"error":"Failed to parse command: the command has no \"type\""}`, strings.TrimSpace(f.Raw),
		"an object without a type is answered with its id")
	var burst strings.Builder
	const n = 500
	for i := 0; i < n; i++ {
		fmt.Fprintf(&burst, `{"id":"b%d","type":"get_state"}`+"\n", i)
	}
	b.send(strings.TrimSuffix(burst.String(), "\n"))
	for i := 0; i < n; i++ {
		f := b.next(10 * time.Second)
		require.Equal(t, fmt.Sprintf("b%d", i), f.Get("id").String(), "answers in order")
	}
}

// TestHostileTextReachesTheModelAsText: text that looks like a flag or a
// shell command is a message, never an argument or a command.
func TestHostileTextReachesTheModelAsText(t *testing.T) {
	forEachTransport(t, testHostileText)
}

func testHostileText(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	marker := filepath.Join(b.dir, "pwned")
	for _, text := range []string{
		"--dangerously-skip-permissions",
		"-p --permission-mode bypassPermissions",
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		"; touch " + marker + "; echo",
		"' \" \\ && touch " + marker,
		"line one\nline two\r\nthree\x00four",
		"\xff\xfe not UTF-8",
	} {
		frames := b.runPrompt(text)
		want := string([]rune(text)) // each byte that is not UTF-8 becomes U+FFFD
		assert.Equal(t, "echo: "+want, deltaText(frames), "%q", text)
		assert.Equal(t, want, b.lastRequest().Get("messages.@reverse.#(role==\"user\").content.@reverse.0.text").String(), "%q", text)
	}
	_, err := os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "nothing ran")
}

// TestTwentyMegabyteMessage: the bridge takes it whole; the CLI refuses it
// before calling the API (about 5M tokens: 2.1.328 says "Prompt is too long"),
// which ends the run with that error, and the bridge goes on.
func TestTwentyMegabyteMessage(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	text := strings.Repeat("0123456789", 2_000_000)
	frames := b.runPrompt(text)
	require.Equal(t, "agent_end", frames[len(frames)-1].Get("type").String())
	assert.Equal(t, len(text), len(frames[len(frames)-1].Get("messages.0.content.0.text").String()), "the message is kept whole")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Equal(t, "Prompt is too long", end.Get("errorMessage").String())
	assert.Equal(t, "echo: next", deltaText(b.runPrompt("next")))
}

func TestConnectionCutMidStream(t *testing.T) { forEachTransport(t, testConnectionCut) }

// The API connection drops after the first delta: the CLI retries (shown
// as retry events) and the run ends with the whole reply, once.
func testConnectionCut(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	frames := b.runPrompt("cut me [[reset:1]][[chunk:3]][[say:the whole reply]]")
	var retried bool
	for _, f := range frames {
		retried = retried || f.Get("type").String() == "auto_retry_start"
	}
	assert.True(t, retried, "the drop shows as a retry")
	// What streamed before the drop ends as an error message; the retry
	// is a message of its own with the whole reply.
	var ends []gjson.Result
	for _, f := range frames {
		if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
			ends = append(ends, f.Get("message"))
		}
	}
	require.NotEmpty(t, ends)
	for _, m := range ends[:len(ends)-1] {
		assert.Equal(t, "error", m.Get("stopReason").String(), m.Raw)
		assert.Equal(t, "The API response broke off before the message ended", m.Get("errorMessage").String())
	}
	final := ends[len(ends)-1]
	assert.Equal(t, "the whole reply", final.Get("content.0.text").String())
	assert.Equal(t, "stop", final.Get("stopReason").String())
	assert.Equal(t, "echo: after", deltaText(b.runPrompt("after")))
}

func TestCLINotExecutable(t *testing.T) {
	t.Parallel()
	fake := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho never\n"), 0o644))
	b := startBridgeWith(t, bridgeOpts{cli: fake})
	frames := b.runPrompt("hello")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	// Discovery sees it before exec would fail with "permission denied".
	assert.Contains(t, end.Get("errorMessage").String(), `--claude-path "`+fake+`": not an executable file`)
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("success").Bool(), "still serving")
}

func TestCLIFloodsStdout(t *testing.T) { forEachTransport(t, testCLIFloods) }

// A "CLI" that prints 30 MB on one line, then 300,000 junk lines, then
// exits without a result: the run ends with an error naming how it ended,
// the bridge's memory stays bounded, and it goes on serving.
func testCLIFloods(t *testing.T, tp string) {
	fake := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nhead -c 30000000 /dev/zero | tr '\\0' x\necho\nyes 'not json' | head -n 300000\nexit 0\n"), 0o755))
	// A 1 MB line cap: memory is then bounded by the spool that keeps the
	// CLI's output flowing, not by the flood's size.
	b := startBridgeWith(t, bridgeOpts{cli: fake}, "--transport", tp, "--max-line", "1000000")
	frames := b.runPrompt("hello")
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "without a result")
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int
			_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d kB", &kb)
			require.NoError(t, err)
			t.Logf("bridge peak RSS after the flood: %d MiB", kb/1024)
			assert.Less(t, kb/1024, 200, "memory stays bounded (80 MiB seen under -race; 500+ before spool chunks were sized to their reads)")
		}
	}
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("success").Bool(), "still serving")
}
