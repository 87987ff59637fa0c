//go:build linux

package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// notifiedStatus is the status the model was told of task id in the fake
// API's last request (the CLI's <task-notification> block), "" when none.
func (b *rpcProc) notifiedStatus(id string) string {
	b.t.Helper()
	re := regexp.MustCompile(`<task-id>` + regexp.QuoteMeta(id) + `</task-id>[\s\S]*?<status>(\w+)</status>`)
	for _, m := range b.lastRequest().Get("messages").Array() {
		for _, c := range m.Get("content").Array() {
			if sub := re.FindStringSubmatch(c.Get("text").String()); sub != nil {
				return sub[1]
			}
		}
	}
	return ""
}

// TestStopSubagent (stream): a background sub-agent stopped by the id the
// host saw (subagent_lifecycle, get_subagents) while it runs: stop_task
// answers stopped, its subagent_lifecycle aborted follows, and the CLI
// tells the model in a turn of its own (a run of its own for the host)
// whose request carries the notification. Asked again, the task had ended;
// get_task_output points to its transcript; an unknown id fails.
func TestStopSubagent(t *testing.T) {
	b := startBridge(t, "--transport", "stream")
	t.Parallel()
	require.True(t, b.call(map[string]any{"type": "set_subagent_subscription", "level": "progress"}).Get("success").Bool())
	first := b.runPrompt("[[agentbg:look around {{bash:echo sub-one; sleep 30; echo sub-done}}]] [[notified:{{say:noted the stop}}]] start it")
	var id string
	for _, f := range first {
		if f.Get("type").String() == "subagent_lifecycle" && f.Get("payload.status").String() == "started" {
			id = f.Get("payload.id").String()
		}
	}
	require.NotEmpty(t, id, "the sub-agent started")
	running := b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents")
	require.Equal(t, id, running.Get("0.id").String(), running.Raw)

	out := b.call(map[string]any{"type": "get_task_output", "taskId": id})
	assert.False(t, out.Get("success").Bool(), out.Raw)
	assert.Contains(t, out.Get("error").String(), "get_subagent_messages", "a sub-agent's output is its transcript")

	asked := time.Now()
	stop := b.call(map[string]any{"type": "stop_task", "taskId": id})
	require.True(t, stop.Get("success").Bool(), stop.Raw)
	assert.JSONEq(t, `{"stopped":true}`, stop.Get("data").Raw)

	frames := b.until(15*time.Second, func(f gjson.Result) bool {
		return f.Get("type").String() == "subagent_lifecycle" && f.Get("payload.id").String() == id
	})
	t.Logf("the sub-agent's end came %v after stop_task", time.Since(asked))
	assert.Equal(t, "aborted", frames[len(frames)-1].Get("payload.status").String(), frames[len(frames)-1].Raw)
	own := b.until(15*time.Second, isType("agent_end"))
	assert.Equal(t, "noted the stop", last(own, "message_end", "assistant").Get("message.content.0.text").String(),
		"the CLI's own turn about the stop")
	b.until(10*time.Second, isType("session_settled"))
	assert.Equal(t, "killed", b.notifiedStatus(id), "the model is told the task was stopped")
	assert.JSONEq(t, `[]`, b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents").Raw)

	again := b.call(map[string]any{"type": "stop_task", "taskId": id})
	require.True(t, again.Get("success").Bool(), again.Raw)
	assert.JSONEq(t, `{"stopped":false}`, again.Get("data").Raw, "it had ended")

	for _, bad := range []map[string]any{
		{"type": "stop_task", "taskId": "a0000000000000000"},
		{"type": "get_task_output", "taskId": "bnosuch00"},
		{"type": "stop_task", "taskId": ""},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.Contains(t, r.Get("error").String(), "Unknown task", r.Raw)
	}
	r := b.call(map[string]any{"type": "stop_task"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Contains(t, r.Get("error").String(), "taskId", r.Raw)
}

// bashTaskID is the id of a background Bash task, from the tool's result
// the host saw.
var bashTaskID = regexp.MustCompile(`running in background with ID: (\w+)`)

// TestStopBackgroundBash (stream): a Bash command the model ran in the
// background, by the id in its tool result: its output so far, stopped
// while it runs, the CLI's notification to the model in a turn of its own,
// and the output once it ended (the CLI marks it killed). get_task_output
// is the CLI's from 2.1.328: an older one refuses it, and the host is told.
func TestStopBackgroundBash(t *testing.T) {
	b := startBridge(t, "--transport", "stream")
	t.Parallel()
	first := b.runPrompt(`[[tool:Bash:{"command":"echo tick-one; sleep 30; echo tick-done","description":"ticks","run_in_background":true}]] [[notified:{{say:noted the bash stop}}]] go`)
	var id string
	for _, f := range first {
		if m := bashTaskID.FindStringSubmatch(f.Get("result.content.0.text").String()); f.Get("type").String() == "tool_execution_end" && m != nil {
			id = m[1]
		}
	}
	require.NotEmpty(t, id, "the tool result names the task")

	hasOutput := cliVersion(t).Compare(claudecli.Version{Major: 2, Minor: 1, Patch: 328}) >= 0
	out := b.call(map[string]any{"type": "get_task_output", "taskId": id})
	if !hasOutput {
		assert.False(t, out.Get("success").Bool(), out.Raw)
		assert.Contains(t, out.Get("error").String(), "Unsupported control request subtype: get_task_output", "the CLI's refusal, passed on")
	} else {
		require.True(t, out.Get("success").Bool(), out.Raw)
		assert.True(t, out.Get("data.running").Bool(), out.Raw)
		assert.Equal(t, "tick-one\n", out.Get("data.output").String(), out.Raw)
	}

	stop := b.call(map[string]any{"type": "stop_task", "taskId": id})
	require.True(t, stop.Get("success").Bool(), stop.Raw)
	assert.JSONEq(t, `{"stopped":true}`, stop.Get("data").Raw)
	for _, f := range b.held { // the CLI runs no turn about it while idle
		assert.Equal(t, "claude.backgroundTasks", f.Get("statusKey").String(), "only the background tasks' status: %s", f.Raw)
	}

	out = b.call(map[string]any{"type": "get_task_output", "taskId": id})
	if hasOutput {
		require.True(t, out.Get("success").Bool(), out.Raw)
		assert.False(t, out.Get("data.running").Bool(), out.Raw)
		t.Logf("its output once stopped: %q", out.Get("data.output").String())
		assert.Contains(t, out.Get("data.output").String(), "tick-one\n", out.Raw)
		assert.NotContains(t, out.Get("data.output").String(), "tick-done", "stopped before its end")
	}

	next := b.runPrompt("next [[say:fine]]")
	assert.Equal(t, "fine", last(next, "message_end", "assistant").Get("message.content.0.text").String())
	assert.Equal(t, "killed", b.notifiedStatus(id), "the model is told the task was stopped, with the next prompt")
}

// TestTaskCommandsNeedTheStreamTransport: on pipe and pty the CLI's
// process, and its tasks, end with the turn: the commands say so.
func TestTaskCommandsNeedTheStreamTransport(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp string) {
		if tp == "stream" {
			return
		}
		b := startBridge(t, "--transport", tp)
		for _, c := range []map[string]any{
			{"type": "stop_task", "taskId": "bsomething"},
			{"type": "get_task_output", "taskId": "bsomething"},
			{"type": "background_tasks"},
		} {
			r := b.call(c)
			assert.False(t, r.Get("success").Bool(), r.Raw)
			assert.Contains(t, r.Get("error").String(), "needs the stream transport", r.Raw)
		}
	})
}

// TestBackgroundRunningBash (stream): a foreground Bash command that is
// running, moved to the background by its tool call's id: the tool's
// result says it runs in the background, and the run ends without waiting
// for it; stopped then by the id in that result. An id that names no
// foreground call: backgrounded false.
func TestBackgroundRunningBash(t *testing.T) {
	b := startBridge(t, "--transport", "stream")
	t.Parallel()
	start := time.Now()
	resp := b.call(map[string]any{"type": "prompt", "message": "[[bash:echo fg-one; sleep 30; echo fg-done]] go"})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	call := b.until(30*time.Second, isType("tool_execution_start"))
	callID := call[len(call)-1].Get("toolCallId").String()
	require.NotEmpty(t, callID)

	none := b.call(map[string]any{"type": "background_tasks", "toolCallId": "toolu_nosuch"})
	require.True(t, none.Get("success").Bool(), none.Raw)
	assert.JSONEq(t, `{"backgrounded":false}`, none.Get("data").Raw)
	// The host sees the call before the CLI runs it as a task: asked
	// before, it is no foreground task yet.
	var bg gjson.Result
	for tries := 0; tries < 50; tries++ {
		if bg = b.call(map[string]any{"type": "background_tasks", "toolCallId": callID}); !bg.Get("success").Bool() || bg.Get("data.backgrounded").Bool() {
			t.Logf("backgrounded at try %d, %v after the prompt", tries+1, time.Since(start))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, bg.Get("success").Bool(), bg.Raw)
	assert.JSONEq(t, `{"backgrounded":true}`, bg.Get("data").Raw)

	run := b.until(20*time.Second, isType("agent_end"))
	assert.Less(t, time.Since(start), 25*time.Second, "the run did not wait for the command")
	var id string
	for _, f := range run {
		if f.Get("type").String() == "tool_execution_end" && f.Get("toolCallId").String() == callID {
			text := f.Get("result.content.0.text").String()
			t.Logf("its result: %s", text)
			if m := regexp.MustCompile(`backgrounded by user with ID: (\w+)`).FindStringSubmatch(text); m != nil {
				id = m[1]
			}
		}
	}
	require.NotEmpty(t, id, "the result names the task it became")
	b.until(10*time.Second, isType("session_settled"))
	stop := b.call(map[string]any{"type": "stop_task", "taskId": id})
	require.True(t, stop.Get("success").Bool(), stop.Raw)
	assert.JSONEq(t, `{"stopped":true}`, stop.Get("data").Raw)
}
