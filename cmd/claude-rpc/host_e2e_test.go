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
)

// writePrompt makes the model call Write for name in the bridge's folder.
func (b *rpcProc) writePrompt(name string) (prompt, path string) {
	path = filepath.Join(b.dir, name)
	return fmt.Sprintf(`[[tool:Write:{"file_path":%q,"content":"written by the model"}]]`, path), path
}

// TestPermissionAnswers: the host's answers to a permission dialog, on
// every transport (pipe and pty ask through the relay's permission tool):
// all four on stream, one that allows and one that denies on the others.
// "Allow always" is offered when the CLI suggests what to remember, which
// it does over the control protocol only: pipe and pty offer "Allow once"
// and "Deny".
func TestPermissionAnswers(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tc := range []struct {
		transport string
		name      string
		answer    map[string]any
		written   bool
	}{
		{"stream", "allow once", map[string]any{"value": "Allow once"}, true},
		{"stream", "allow always", map[string]any{"value": "Allow always"}, true},
		{"stream", "deny", map[string]any{"value": "Deny"}, false},
		{"stream", "cancelled", map[string]any{"cancelled": true}, false},
		{"pipe", "allow once", map[string]any{"value": "Allow once"}, true},
		{"pipe", "deny", map[string]any{"value": "Deny"}, false},
		{"pty", "allow once", map[string]any{"value": "Allow once"}, true},
		{"pty", "cancelled", map[string]any{"cancelled": true}, false},
	} {
		t.Run(tc.transport+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBridge(t, "--transport", tc.transport)
			prompt, path := b.writePrompt("out.txt")
			require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
			frames := b.until(30*time.Second, isType("extension_ui_request"))
			req := frames[len(frames)-1]
			assert.Equal(t, "select", req.Get("method").String())
			assert.Equal(t, "Allow Write?", req.Get("title").String())
			assert.Contains(t, req.Get("message").String(), path)
			assert.Equal(t, "Allow once", req.Get("options.0").String())
			if tc.transport != "stream" {
				assert.Equal(t, []any{"Allow once", "Deny"}, req.Get("options").Value())
			}
			assert.Equal(t, "Deny", req.Get("options.@reverse.0").String())
			assert.Positive(t, req.Get("timeout").Int())

			answer := map[string]any{"type": "extension_ui_response", "id": req.Get("id").String()}
			for k, v := range tc.answer {
				answer[k] = v
			}
			b.sendJSON(answer)
			frames = b.until(30*time.Second, isType("agent_end"))
			end := last(frames, "tool_execution_end", "")
			_, err := os.Stat(path)
			if tc.written {
				assert.NoError(t, err, "the host allowed the write")
				assert.False(t, end.Get("isError").Bool())
			} else {
				assert.True(t, os.IsNotExist(err), "the host denied the write")
				assert.True(t, end.Get("isError").Bool())
				assert.Contains(t, end.Get("result.content.0.text").String(), "denied")
			}
		})
	}
}

// TestWithoutAskToolsAreNotAsked: with --ask=false, on stream and on
// pipe, a tool that needs permission is refused without a dialog.
func TestWithoutAskToolsAreNotAsked(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--ask=false"}, {"--transport", "pipe", "--ask=false"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			b := startBridge(t, args...)
			prompt, path := b.writePrompt("out.txt")
			frames := b.runPrompt(prompt)
			for _, f := range frames {
				assert.NotEqual(t, "extension_ui_request", f.Get("type").String())
			}
			_, err := os.Stat(path)
			assert.True(t, os.IsNotExist(err), "refused")
			assert.True(t, last(frames, "tool_execution_end", "").Get("isError").Bool())
		})
	}
}

// TestAskByDefault: on the default (stream) transport without flags, the
// host is asked before a tool that needs permission; the dialog carries
// pi's timeout field, --ask-timeout's default. A host that never answers is
// not held past it: the tool is denied, the dialog withdrawn, the run goes
// on.
func TestAskByDefault(t *testing.T) {
	t.Parallel()
	t.Run("answered", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t)
		prompt, path := b.writePrompt("out.txt")
		require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
		frames := b.until(30*time.Second, isType("extension_ui_request"))
		req := frames[len(frames)-1]
		assert.Equal(t, "select", req.Get("method").String())
		assert.Equal(t, DefaultAskTimeout.Milliseconds(), req.Get("timeout").Int())
		b.sendJSON(map[string]any{"type": "extension_ui_response", "id": req.Get("id").String(), "value": "Allow once"})
		frames = b.until(30*time.Second, isType("agent_end"))
		assert.False(t, last(frames, "tool_execution_end", "").Get("isError").Bool())
		assert.FileExists(t, path)
	})
	for _, tp := range []string{"stream", "pipe"} {
		t.Run("never answered/"+tp, func(t *testing.T) {
			t.Parallel()
			neverAnswered(t, tp)
		})
	}
}

// neverAnswered: a dialog the host leaves unanswered is withdrawn at
// --ask-timeout, the tool denied, and the bridge serves on.
func neverAnswered(t *testing.T, transport string) {
	{
		b := startBridge(t, "--ask-timeout", "1500ms", "--transport", transport)
		prompt, path := b.writePrompt("out.txt")
		// Timed from the prompt's sending, which comes before the bridge
		// asks: its timer starts as it queues the request, and under load
		// the frame may reach the test a while later (ci at 90f88e7:
		// 1.44 s from the frame's reading to the run's end).
		sent := time.Now()
		require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
		frames := b.until(30*time.Second, isType("extension_ui_request"))
		req := frames[len(frames)-1]
		assert.Equal(t, int64(1500), req.Get("timeout").Int())
		frames = b.until(30*time.Second, isType("agent_end"))
		held := time.Since(sent)
		assert.GreaterOrEqual(t, held, 1500*time.Millisecond)
		assert.Less(t, held, 15*time.Second)
		assert.True(t, slices.ContainsFunc(frames, func(f gjson.Result) bool {
			return f.Get("method").String() == "cancel" && f.Get("targetId").String() == req.Get("id").String()
		}), "the dialog is withdrawn")
		end := last(frames, "tool_execution_end", "")
		assert.True(t, end.Get("isError").Bool())
		assert.Contains(t, end.Get("result.content.0.text").String(), "denied")
		assert.NoFileExists(t, path)
		frames = b.runPrompt("next [[say:still here]]")
		assert.Equal(t, "still here", deltaText(frames))
	}
}

func TestAskUserQuestion(t *testing.T) {
	forEachTransport(t, askUserQuestion)
}

func askUserQuestion(t *testing.T, transport string) {
	b := startBridge(t, "--transport", transport)
	q := `[[tool:AskUserQuestion:{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}],"multiSelect":false}]}]]`
	require.True(t, b.call(map[string]any{"type": "prompt", "message": q}).Get("success").Bool())
	frames := b.until(30*time.Second, isType("extension_ui_request"))
	req := frames[len(frames)-1]
	assert.Equal(t, "select", req.Get("method").String())
	assert.Equal(t, "Color", req.Get("title").String())
	assert.Equal(t, "Which color?", req.Get("message").String())
	assert.Equal(t, []any{"Red", "Blue"}, req.Get("options").Value())
	b.sendJSON(map[string]any{"type": "extension_ui_response", "id": req.Get("id").String(), "value": "Blue"})
	frames = b.until(30*time.Second, isType("agent_end"))
	result := last(frames, "tool_execution_end", "")
	assert.False(t, result.Get("isError").Bool(), result.Raw)
	assert.Contains(t, result.Get("result.content.0.text").String(), `"Which color?"="Blue"`)
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "Blue", "the answer reached the model")
}

func TestAbortWhileAsking(t *testing.T) {
	forEachTransport(t, abortWhileAsking)
}

func abortWhileAsking(t *testing.T, transport string) {
	b := startBridge(t, "--transport", transport)
	prompt, path := b.writePrompt("out.txt")
	require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
	frames := b.until(30*time.Second, isType("extension_ui_request"))
	id := frames[len(frames)-1].Get("id").String()
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames = b.until(15*time.Second, isResponse("abort"))
	// The dialog is withdrawn (omp's cancel), before or after the abort's
	// answer.
	withdrawn := func(f gjson.Result) bool {
		return f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "cancel" && f.Get("targetId").String() == id
	}
	if !slices.ContainsFunc(frames, withdrawn) {
		b.until(5*time.Second, withdrawn)
	}
	// A late answer finds nothing waiting: a clear error, nothing written.
	r := b.call(map[string]any{"type": "extension_ui_response", "id": id, "value": "Allow once"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Contains(t, r.Get("error").String(), "no request")
	_, err := os.Stat(path)
	assert.True(t, os.IsNotExist(err))
	frames = b.runPrompt("next [[say:fine]]")
	assert.Equal(t, "fine", deltaText(frames))
}

func TestUIResponseErrors(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--ask")
	for _, bad := range []map[string]any{
		{"type": "extension_ui_response", "id": "ui_99", "value": "x"},
		{"type": "extension_ui_response", "id": "ui_1"},
		{"type": "host_tool_result", "id": "host_7", "result": map[string]any{"content": []any{}}},
		{"type": "host_tool_result", "id": "host_7", "result": "done"},
		{"type": "host_tool_update", "id": "host_7"},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
	frames := b.runPrompt("still serving [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames))
}

func TestHostTools(t *testing.T) {
	forEachTransport(t, hostTools)
}

func hostTools(t *testing.T, transport string) {
	b := startBridge(t, "--transport", transport)
	resp := b.call(map[string]any{"type": "set_host_tools", "tools": []any{map[string]any{
		"name": "echo_host", "label": "Echo Host", "description": "Echo a value from the embedding host",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []any{"message"}},
	}}})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.Equal(t, []any{"echo_host"}, resp.Get("data.toolNames").Value())

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__echo_host:{"message":"hello"}]]`}).Get("success").Bool())
	frames := b.until(30*time.Second, isType("host_tool_call"))
	call := frames[len(frames)-1]
	start := last(frames, "tool_execution_start", "")
	require.True(t, start.Exists(), "tool_execution_start before host_tool_call, as omp")
	assert.Equal(t, "echo_host", start.Get("toolName").String())
	assert.Equal(t, "echo_host", call.Get("toolName").String())
	assert.Equal(t, "hello", call.Get("arguments.message").String())
	assert.NotEmpty(t, call.Get("toolCallId").String())
	id := call.Get("id").String()
	b.sendJSON(map[string]any{"type": "host_tool_update", "id": id, "partialResult": map[string]any{"content": []any{map[string]any{"type": "text", "text": "working"}}}})
	b.sendJSON(map[string]any{"type": "host_tool_result", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "host says hi"}}}})
	frames = b.until(30*time.Second, isType("agent_end"))
	update := last(frames, "tool_execution_update", "")
	assert.Equal(t, call.Get("toolCallId").String(), update.Get("toolCallId").String())
	// Shown by its own name, as omp shows a host's tool: in every frame
	// and in the messages.
	assert.Equal(t, "echo_host", update.Get("toolName").String())
	assert.Equal(t, "echo_host", last(frames, "tool_execution_end", "").Get("toolName").String())
	assert.Equal(t, "echo_host", last(frames, "message_end", "toolResult").Get("message.toolName").String())
	assert.Equal(t, "working", update.Get("partialResult.content.0.text").String())
	assert.Equal(t, "tool said: host says hi", last(frames, "message_end", "assistant").Get("message.content.0.text").String())
	// The model gets the tool itself (alwaysLoad), with its schema, not a
	// placeholder behind the CLI's tool search.
	var offered gjson.Result
	for _, tool := range gjson.GetBytes(b.srv.MessagesRequests()[0].Body, "tools").Array() {
		if tool.Get("name").String() == "mcp__host__echo_host" {
			offered = tool
		}
	}
	require.True(t, offered.Exists(), "the model was offered the tool itself")
	assert.Equal(t, "string", offered.Get("input_schema.properties.message.type").String())
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "host says hi", "the result reached the API")
}

func TestAbortDuringHostToolCall(t *testing.T) {
	forEachTransport(t, abortDuringHostToolCall)
}

func abortDuringHostToolCall(t *testing.T, transport string) {
	b := startBridge(t, "--transport", transport)
	require.True(t, b.call(map[string]any{"type": "set_host_tools", "tools": []any{map[string]any{"name": "slow_host"}}}).Get("success").Bool())
	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__slow_host:{}]]`}).Get("success").Bool())
	frames := b.until(30*time.Second, isType("host_tool_call"))
	id := frames[len(frames)-1].Get("id").String()
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	frames = b.until(15*time.Second, isResponse("abort"))
	var cancelled bool
	for _, f := range frames {
		cancelled = cancelled || f.Get("type").String() == "host_tool_cancel" && f.Get("targetId").String() == id
	}
	if !cancelled { // it may follow the abort's answer
		frames = b.until(5*time.Second, isType("host_tool_cancel"))
		assert.Equal(t, id, frames[len(frames)-1].Get("targetId").String())
	}
	r := b.call(map[string]any{"type": "host_tool_result", "id": id, "result": map[string]any{"content": []any{}}})
	assert.False(t, r.Get("success").Bool(), "a late result finds nothing waiting: %s", r.Raw)
	frames = b.runPrompt("next [[say:fine]]")
	assert.Equal(t, "fine", deltaText(frames))
}

func TestSetHostToolsErrors(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	for _, bad := range []map[string]any{
		{"type": "set_host_tools"},
		{"type": "set_host_tools", "tools": "echo"},
		{"type": "set_host_tools", "tools": []any{map[string]any{"name": "has space"}}},
		{"type": "set_host_tools", "tools": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}},
		{"type": "set_host_tools", "tools": []any{map[string]any{"name": "p", "parameters": "object"}}},
		{"type": "set_host_tools", "tools": []any{5}},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
}

// TestHostURIs: omp's host URIs. The host serves db:// (writable); the
// model reads and writes it through host_uri_read and host_uri_write, each
// call a host_uri_request the host answers with host_uri_result; a scheme
// the host does not serve, a write to a read-only scheme and the host's
// error come back to the model as tool errors; a request the run no longer
// waits for is withdrawn with host_uri_cancel.
func TestHostURIs(t *testing.T) {
	t.Parallel()
	for _, tp := range []string{"stream", "pipe"} {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			hostURIs(t, tp)
		})
	}
}

func hostURIs(t *testing.T, transport string) {
	b := startBridge(t, "--transport", transport)
	resp := b.call(map[string]any{"type": "set_host_uri_schemes", "schemes": []any{
		map[string]any{"scheme": "DB", "description": "the app's database", "writable": true},
		map[string]any{"scheme": "notes"},
	}})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.Equal(t, []any{"db", "notes"}, resp.Get("data.schemes").Value())

	// answer waits for the next host_uri_request and answers it with result.
	answer := func(result map[string]any) gjson.Result {
		t.Helper()
		frames := b.until(30*time.Second, isType("host_uri_request"))
		req := frames[len(frames)-1]
		result["type"], result["id"] = "host_uri_result", req.Get("id").String()
		b.sendJSON(result)
		return req
	}
	reply := func() string {
		t.Helper()
		return last(b.until(30*time.Second, isType("agent_end")), "message_end", "assistant").Get("message.content.0.text").String()
	}

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__host_uri_read:{"url":"db://users/1"}]]`}).Get("success").Bool())
	req := answer(map[string]any{"content": "Ada Lovelace", "contentType": "text/plain", "notes": []any{"cached"}})
	assert.Equal(t, "read", req.Get("operation").String())
	assert.Equal(t, "db://users/1", req.Get("url").String())
	assert.False(t, req.Get("content").Exists())
	assert.Equal(t, "tool said: Ada Lovelace\n\n[cached]", reply())
	var offered []string
	for _, tool := range gjson.ParseBytes(b.srv.MessagesRequests()[0].Body).Get("tools").Array() {
		offered = append(offered, tool.Get("name").String())
	}
	assert.Contains(t, offered, "mcp__host__host_uri_read", "the model gets the tool itself")
	assert.Contains(t, offered, "mcp__host__host_uri_write")

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__host_uri_write:{"url":"db://users/1","content":"Grace"}]]`}).Get("success").Bool())
	req = answer(map[string]any{})
	assert.Equal(t, "write", req.Get("operation").String())
	assert.Equal(t, "Grace", req.Get("content").String())
	assert.Equal(t, "tool said: Wrote db://users/1", reply())

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__host_uri_read:{"url":"db://gone"}]]`}).Get("success").Bool())
	answer(map[string]any{"isError": true, "error": "no such row"})
	assert.Equal(t, "tool said: no such row", reply())

	for prompt, want := range map[string]string{
		`[[tool:mcp__host__host_uri_read:{"url":"ftp://x/y"}]]`:                "serves no ftp:// URLs",
		`[[tool:mcp__host__host_uri_write:{"url":"notes://a","content":"x"}]]`: "read-only",
		`[[tool:mcp__host__host_uri_read:{"url":"not a url"}]]`:                "is not a URL",
	} {
		frames := b.runPrompt(prompt)
		assert.Contains(t, last(frames, "message_end", "assistant").Get("message.content.0.text").String(), want, prompt)
		for _, f := range frames {
			assert.NotEqual(t, "host_uri_request", f.Get("type").String(), "%s: the host is not asked", prompt)
		}
	}

	// Withdrawn: an abort while the host has not answered.
	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__host_uri_read:{"url":"db://slow"}]]`}).Get("success").Bool())
	frames := b.until(30*time.Second, isType("host_uri_request"))
	id := frames[len(frames)-1].Get("id").String()
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	withdrawn := func(f gjson.Result) bool {
		return f.Get("type").String() == "host_uri_cancel" && f.Get("targetId").String() == id
	}
	if frames = b.until(15*time.Second, isResponse("abort")); !slices.ContainsFunc(frames, withdrawn) {
		b.until(5*time.Second, withdrawn)
	}
	r := b.call(map[string]any{"type": "host_uri_result", "id": id, "content": "late"})
	assert.False(t, r.Get("success").Bool(), "a late result finds nothing waiting: %s", r.Raw)

	for _, bad := range []map[string]any{
		{"type": "set_host_uri_schemes"},
		{"type": "set_host_uri_schemes", "schemes": "db"},
		{"type": "set_host_uri_schemes", "schemes": []any{map[string]any{"scheme": ""}}},
		{"type": "set_host_uri_schemes", "schemes": []any{map[string]any{"scheme": "1db"}}},
		{"type": "set_host_uri_schemes", "schemes": []any{map[string]any{"scheme": "https"}}},
		{"type": "set_host_tools", "tools": []any{map[string]any{"name": "host_uri_read"}}},
		{"type": "host_uri_result", "id": "uri_99"},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
	frames = b.runPrompt("still serving [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames))
}
