//go:build linux

package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// samePid checks, on the stream transport, that the bridge still runs the
// one CLI process it ran before (pid): a change applied live, not by a
// new process.
func (b *rpcProc) samePid(transport string, pid int) {
	b.t.Helper()
	if transport != "stream" {
		return
	}
	assert.Equal(b.t, []int{pid}, b.turnPids(), "the stream transport's CLI process is the one that ran before")
	// The CLI's report of a mode the bridge set is not a turn of its own.
	assert.NotContains(b.t, b.stderr.String(), "claude began a turn by itself")
}

// onePid is the stream transport's one CLI process (0 elsewhere); a query
// process asking the CLI for its models and commands (turnPids), which a
// loaded machine may still run then, is none of it.
func (b *rpcProc) onePid(transport string) int {
	b.t.Helper()
	if transport != "stream" {
		return 0
	}
	pids := b.turnPids()
	require.Len(b.t, pids, 1)
	return pids[0]
}

// mcpToolsOffered are the MCP tools the API request offered the model.
func mcpToolsOffered(req gjson.Result) []string {
	var names []string
	for _, t := range req.Get("tools").Array() {
		if n := t.Get("name").String(); strings.HasPrefix(n, "mcp__") {
			names = append(names, n)
		}
	}
	return names
}

// TestSetPermissionMode: set_permission_mode takes effect from the next
// turn, in the running CLI process on the stream transport: with asking
// off, a Write is refused in the default mode, goes through in
// acceptEdits and is refused again in plan mode. get_state and
// permission_mode_changed say the mode; a mode the CLI does not have is
// refused, naming those it has.
func TestSetPermissionMode(t *testing.T) {
	forStreamAndPipe(t, func(t *testing.T, tp string) {
		b := startBridge(t, "--transport", tp, "--ask=false")
		assert.Equal(t, "default", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())
		write := func(name string) bool {
			prompt, path := b.writePrompt(name)
			b.runPrompt(prompt)
			_, err := os.Stat(path)
			return err == nil
		}
		assert.False(t, write("default.txt"), "default mode: the Write needs permission, and asking is off")
		pid := b.onePid(tp)

		r := b.call(map[string]any{"type": "set_permission_mode", "mode": "acceptEdits"})
		require.True(t, r.Get("success").Bool(), r.Raw)
		require.NotEmpty(t, b.held, "permission_mode_changed before the answer")
		assert.Equal(t, "permission_mode_changed", b.held[0].Get("type").String())
		assert.Equal(t, "acceptEdits", b.held[0].Get("mode").String())
		b.held = nil
		assert.Equal(t, "acceptEdits", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())
		assert.True(t, write("accept.txt"), "acceptEdits: the Write goes through")
		b.samePid(tp, pid)

		require.True(t, b.call(map[string]any{"type": "set_permission_mode", "mode": "plan"}).Get("success").Bool())
		b.held = nil
		assert.False(t, write("plan.txt"), "plan mode: the Write is refused")
		b.samePid(tp, pid)
		assert.Equal(t, "plan", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())

		for _, bad := range []map[string]any{{"mode": "sideways"}, {"mode": ""}, {}} {
			bad["type"] = "set_permission_mode"
			r := b.call(bad)
			assert.False(t, r.Get("success").Bool(), r.Raw)
			assert.NotEmpty(t, r.Get("error").String())
		}
		r = b.call(map[string]any{"type": "set_permission_mode", "mode": "sideways"})
		assert.Contains(t, r.Get("error").String(), "acceptEdits, auto, bypassPermissions, default, dontAsk, manual, plan")
		assert.Equal(t, "plan", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String(), "a refused mode changes nothing")
	})
}

// TestPermissionModeFollowsTheCLI: the CLI leaves plan mode by itself
// (ExitPlanMode, allowed by the host) and enters it (EnterPlanMode): the
// bridge follows, tells the host (permission_mode_changed during the
// turn) and get_state says the CLI's mode; the process stays.
func TestPermissionModeFollowsTheCLI(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	b.runPrompt("hi [[say:ok]]")
	pid := b.onePid("stream")
	require.True(t, b.call(map[string]any{"type": "set_permission_mode", "mode": "plan"}).Get("success").Bool())
	// The status the host set shows: before or after the command's
	// answer, as the runner writes it.
	setFrames := b.until(10*time.Second, func(f gjson.Result) bool {
		return f.Get("method").String() == "setStatus" && f.Get("statusKey").String() == "claude.permissionMode"
	})

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:ExitPlanMode:{"plan":"do it"}]]`}).Get("success").Bool())
	frames := b.until(30*time.Second, func(f gjson.Result) bool {
		return f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "select"
	})
	ask := frames[len(frames)-1]
	var status []string
	for _, f := range append(setFrames, frames...) {
		if f.Get("method").String() == "setStatus" && f.Get("statusKey").String() == "claude.permissionMode" {
			status = append(status, f.Get("statusText").String())
		}
	}
	assert.Equal(t, []string{"permission mode: plan"}, status, "the mode the host set shows in the status line")
	assert.Equal(t, "Allow ExitPlanMode?", ask.Get("title").String())
	b.sendJSON(map[string]any{"type": "extension_ui_response", "id": ask.Get("id").String(), "value": "Allow once"})
	frames = b.until(30*time.Second, isType("agent_end"))
	changed := last(frames, "permission_mode_changed", "")
	assert.Equal(t, "default", changed.Get("mode").String(), "the CLI left plan mode")
	cleared := last(frames, "extension_ui_request", "")
	assert.Equal(t, "setStatus", cleared.Get("method").String(), "the status line follows the CLI")
	assert.False(t, cleared.Get("statusText").Exists(), "default: the status entry is cleared")
	assert.Equal(t, "default", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())

	frames = b.runPrompt("[[tool:EnterPlanMode:{}]]")
	assert.Equal(t, "plan", last(frames, "permission_mode_changed", "").Get("mode").String(), "the CLI entered plan mode")
	assert.Equal(t, "plan", b.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())
	b.samePid("stream", pid)

	// The host's mode after the CLI's own change reaches the CLI.
	require.True(t, b.call(map[string]any{"type": "set_permission_mode", "mode": "acceptEdits"}).Get("success").Bool())
	prompt, path := b.writePrompt("after.txt")
	frames = b.runPrompt(prompt)
	for _, f := range frames {
		assert.NotEqual(t, "select", f.Get("method").String(), "acceptEdits: no dialog for the Write")
	}
	_, err := os.Stat(path)
	assert.NoError(t, err)
	b.samePid("stream", pid)
}

// TestHostToolsLive: set_host_tools changes the tools of the running CLI
// process: a tool added is offered in the next API request and its call
// reaches the host; a tool removed is refused by the CLI without reaching
// the host; the first tool of a session started without any adds the
// host's server. The process stays.
func TestHostToolsLive(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	b.runPrompt("hi [[say:ok]]")
	pid := b.onePid("stream")
	assert.Empty(t, mcpToolsOffered(b.lastRequest()))

	setTools := func(names ...string) {
		tools := []any{}
		for _, n := range names {
			tools = append(tools, map[string]any{"name": n, "description": "the host's " + n})
		}
		r := b.call(map[string]any{"type": "set_host_tools", "tools": tools})
		require.True(t, r.Get("success").Bool(), r.Raw)
	}
	// callTool prompts a call of the host's tool name and answers it when
	// it comes; it reports whether it came.
	callTool := func(name string) (called bool, frames []gjson.Result) {
		first := len(b.srv.MessagesRequests())
		require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[tool:mcp__host__" + name + ":{}]]"}).Get("success").Bool())
		for {
			f := b.next(30 * time.Second)
			frames = append(frames, f)
			switch f.Get("type").String() {
			case "host_tool_call":
				assert.Equal(t, name, f.Get("toolName").String())
				called = true
				b.sendJSON(map[string]any{"type": "host_tool_result", "id": f.Get("id").String(),
					"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": name + " ran"}}}})
			case "agent_end":
				reqs := b.srv.MessagesRequests()
				require.Greater(t, len(reqs), first)
				return called, frames
			}
		}
	}
	offered := func(n int) []string {
		reqs := b.srv.MessagesRequests()
		return mcpToolsOffered(gjson.ParseBytes(reqs[n].Body))
	}

	setTools("alpha")
	n := len(b.srv.MessagesRequests())
	called, _ := callTool("alpha")
	assert.True(t, called, "the first tool, added to a running process, reaches the host")
	assert.Contains(t, offered(n), "mcp__host__alpha")
	b.samePid("stream", pid)

	setTools("alpha", "beta")
	n = len(b.srv.MessagesRequests())
	called, frames := callTool("beta")
	assert.True(t, called, "a tool added reaches the host")
	assert.Subset(t, offered(n), []string{"mcp__host__alpha", "mcp__host__beta"})
	assert.Equal(t, "tool said: beta ran", last(frames, "message_end", "assistant").Get("message.content.0.text").String())
	b.samePid("stream", pid)

	setTools("gamma")
	n = len(b.srv.MessagesRequests())
	called, frames = callTool("alpha")
	assert.False(t, called, "a tool removed does not reach the host")
	// CLI 2.1.328 and 2.1.332 keep it in the model's list and refuse its
	// call; the host gets pi 1.6.0's words for a tool it does not know.
	assert.Equal(t, "Tool alpha not found", last(frames, "tool_execution_end", "").Get("result.content.0.text").String())
	assert.Equal(t, "Tool alpha not found", last(frames, "message_end", "toolResult").Get("message.content.0.text").String())
	assert.Contains(t, offered(n), "mcp__host__gamma")
	called, _ = callTool("gamma")
	assert.True(t, called)
	b.samePid("stream", pid)
	assert.True(t, slices.Contains(offered(len(b.srv.MessagesRequests())-1), "mcp__host__gamma"))
}

// TestLiveChangeTimes measures, on the stream transport, the time from a
// change sent by the host (set_host_tools' first tool, set_permission_mode,
// set_host_tools changing the tools) to the API request of the prompt sent
// right behind it, and checks that no CLI process was started for it and
// that the request has what changed. A prompt after no change is the
// baseline. docs/performance.md has the figures (-count 5 -v).
func TestLiveChangeTimes(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	b.runPrompt("warm [[say:ok]]")
	pid := b.onePid("stream")
	tools := func(names ...string) map[string]any {
		list := []any{}
		for _, n := range names {
			list = append(list, map[string]any{"name": n})
		}
		return map[string]any{"type": "set_host_tools", "tools": list}
	}
	for _, c := range []struct {
		name   string
		change map[string]any
		check  func(req gjson.Result)
	}{
		{"none", nil, func(gjson.Result) {}},
		{"first host tool", tools("alpha"), func(req gjson.Result) {
			assert.Contains(t, mcpToolsOffered(req), "mcp__host__alpha")
		}},
		{"permission mode", map[string]any{"type": "set_permission_mode", "mode": "plan"}, func(req gjson.Result) {
			assert.Contains(t, req.Get("messages").Raw, "Plan mode is active", "the CLI runs the turn in plan mode")
		}},
		{"host tools changed", tools("alpha", "beta"), func(req gjson.Result) {
			assert.Contains(t, mcpToolsOffered(req), "mcp__host__beta")
		}},
	} {
		n := len(b.srv.MessagesRequests())
		sent := time.Now()
		if c.change != nil {
			c.change["id"] = "change"
			b.sendJSON(c.change)
		}
		b.sendJSON(map[string]any{"type": "prompt", "id": "prompt", "message": "next [[say:ok]]"})
		for len(b.srv.MessagesRequests()) == n {
			time.Sleep(200 * time.Microsecond)
		}
		took := time.Since(sent)
		b.until(60*time.Second, isType("agent_end"))
		pids := b.cliPids()
		t.Logf("%s: %.1f ms from the command to the next prompt's API request; CLI processes %v (before: %d)", c.name, float64(took.Microseconds())/1000, pids, pid)
		assert.Equal(t, []int{pid}, pids, "%s: no new CLI process", c.name)
		c.check(gjson.ParseBytes(b.srv.MessagesRequests()[n].Body))
	}
}
