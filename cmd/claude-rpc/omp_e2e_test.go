//go:build linux

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestOmpClient drives claude-rpc through omp 18.3.4's own RpcClient
// (under Bun, scripts/omp-host; installed pinned by scripts/install-omp)
// over the real CLI: start-up and protocol v2, prompt, promptAndWait,
// waitForSettled, a 2 MB reply through rpc_chunk frames, abort, steer,
// follow_up, host tools, getMessages (paged), an unknown command, omp's
// commands claude-rpc does not have (answered at once, not a hang), and a
// sub-agent (the CLI's Agent tool) seen through omp's subagent frames and
// commands.
// With --message-updates delta, as an omp host keeping long replies small
// would run it (the 2 MB reply's message_end and agent_end still go out as
// rpc_chunk frames).
func TestOmpClient(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "install-omp")).Output()
	require.NoError(t, err, "scripts/install-omp")
	omp := strings.TrimSpace(string(out))
	for _, tp := range []string{"stream", "pipe"} {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			scenarios := "start,prompt,prompt_and_wait,wait_for_settled,big_reply,abort,steer,follow_up,get_messages,unknown_command,omp_commands,subagents"
			if tp == "stream" {
				scenarios += ",host_tools" // the CLI calls host tools over its control protocol
			}
			srv := claudetest.Start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(omp, "node_modules", ".bin", "bun"), filepath.Join(root, "scripts", "omp-host", "host.ts"),
				"--scenario", scenarios, "--frames", "50", "--timeout-ms", "120000", "--",
				binary(t), "--claude-path", claudetest.CLI(t), "--cwd", t.TempDir(), "--transport", tp, "--message-updates", "delta")
			cmd.Env = append(srv.CLIEnv(t.TempDir()), "OMP_DIR="+omp)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			res := gjson.ParseBytes(out)
			require.True(t, res.Get("results").IsArray(), "no report: %v\n%s", err, tail(stderr.String(), 3000))
			for _, r := range res.Get("results").Array() {
				assert.True(t, r.Get("pass").Bool(), "%s: %s %s", r.Get("scenario").String(), r.Get("error").String(), r.Get("notes").Raw)
			}
			assert.EqualValues(t, len(strings.Split(scenarios, ",")), res.Get("passed").Int())
			require.NoError(t, err, "the host's exit status (0: every scenario passed)")
		})
	}
}

// TestOmpBadChunks: rpc_chunk frames from a host that break omp's rules
// (rpc-frame.ts), each answered with a parse error and none lost: a
// sequence cut short by another command (which is still answered), a chunk
// whose metadata is invalid, a chunk carrying more than 256 KiB, a
// sequence declaring a frame over 64 MiB, and a whole line over 64 MiB.
// After each the bridge takes a valid chunked command and keeps serving.
func TestOmpBadChunks(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	neg := b.call(map[string]any{"type": "negotiate_protocol", "protocolVersion": 2})
	require.True(t, neg.Get("success").Bool(), neg.Raw)

	// chunks cuts frame into omp's rpc_chunk lines of size bytes each.
	seq := 0
	chunks := func(frame []byte, size int) []string {
		seq++
		n := (len(frame) + size - 1) / size
		var out []string
		for i := range n {
			part := frame[i*size : min((i+1)*size, len(frame))]
			out = append(out, fmt.Sprintf(`{"type":"rpc_chunk","chunkId":"host-%d","index":%d,"count":%d,"byteLength":%d,"data":%q}`,
				seq, i, n, len(frame), base64.StdEncoding.EncodeToString(part)))
		}
		return out
	}
	// A valid command over 1 MiB (omp chunks nothing smaller): get_state
	// with padding.
	bigState := func(id string) []byte {
		return []byte(fmt.Sprintf(`{"type":"get_state","id":%q,"pad":%q}`, id, strings.Repeat("x", 1_300_000)))
	}
	parseError := func(want string) {
		t.Helper()
		f := b.next(10 * time.Second)
		require.Equal(t, "response", f.Get("type").String(), f.Raw)
		assert.False(t, f.Get("success").Bool(), f.Raw)
		assert.Contains(t, f.Get("error").String(), want, f.Raw)
	}
	stillServes := func(what string) {
		t.Helper()
		for _, c := range chunks(bigState("big-"+what), 256<<10) {
			b.send(c)
		}
		f := b.next(10 * time.Second)
		require.Equal(t, "big-"+what, f.Get("id").String(), "%s: the next chunked command: %.300s", what, f.Raw)
		assert.True(t, f.Get("success").Bool(), f.Raw)
	}
	stillServes("first")

	// Cut short: the sequence is lost, the command that cut it answered.
	cs := chunks(bigState("lost"), 256<<10)
	b.send(cs[0])
	b.send(`{"type":"get_state","id":"cutter"}`)
	parseError("interrupted")
	assert.Equal(t, "cutter", b.next(10*time.Second).Get("id").String())
	stillServes("after-cut")

	for _, bad := range []struct{ name, line, want string }{
		{"count 1", `{"type":"rpc_chunk","chunkId":"x","index":0,"count":1,"byteLength":1048576,"data":"eA=="}`, "invalid rpc chunk metadata"},
		{"index past count", `{"type":"rpc_chunk","chunkId":"x","index":5,"count":2,"byteLength":1048576,"data":"eA=="}`, "invalid rpc chunk metadata"},
		{"no chunkId", `{"type":"rpc_chunk","index":0,"count":5,"byteLength":1048576,"data":"eA=="}`, "invalid rpc chunk metadata"},
		{"not base64", `{"type":"rpc_chunk","chunkId":"x","index":0,"count":5,"byteLength":1048576,"data":"@@@@"}`, "invalid rpc chunk data"},
		{"over 256 KiB", fmt.Sprintf(`{"type":"rpc_chunk","chunkId":"x","index":0,"count":4,"byteLength":1048576,"data":%q}`,
			base64.StdEncoding.EncodeToString(make([]byte, 256<<10+1))), "exceeds the transport limit"},
		{"over 64 MiB", `{"type":"rpc_chunk","chunkId":"x","index":0,"count":256,"byteLength":67108865,"data":"eA=="}`, "invalid rpc chunk metadata"},
	} {
		b.send(bad.line)
		parseError(bad.want)
		stillServes(strings.ReplaceAll(bad.name, " ", "-"))
	}

	// One line over the 64 MiB a line may have: refused, not read whole.
	b.send(`{"type":"prompt","message":"` + strings.Repeat("y", 64<<20) + `"}`)
	parseError("too long")
	stillServes("after-huge-line")
	st := b.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("success").Bool(), st.Raw)
}

// TestBackgroundSubagent: a sub-agent the model starts in the background.
// On stream the CLI answers the turn at once and the sub-agent goes on in
// the process: the run ends with it still running (get_subagents lists
// it, nothing says it was aborted). What the CLI prints after that while
// idle (the sub-agent's lines, its end, the turn the CLI runs by itself
// about it) reaches the host as it happens, as a run of its own, within a
// second of the CLI printing it; the next prompt's run holds only its own
// turn. On pipe the CLI holds the turn's result until the sub-agent ended,
// and answers it in the same run (pty alike).
func TestBackgroundSubagent(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp string) {
		b := startBridge(t, "--transport", tp)
		require.True(t, b.call(map[string]any{"type": "set_subagent_subscription", "level": "progress"}).Get("success").Bool())
		lifecycle := func(frames []gjson.Result) (ss []string) {
			for _, f := range frames {
				if f.Get("type").String() == "subagent_lifecycle" {
					ss = append(ss, f.Get("payload.status").String())
				}
			}
			return ss
		}
		first := b.runPrompt("[[agentbg:look around {{bash:sleep 1; echo from-sub}}]] start it")
		if tp != "stream" { // a process per turn
			assert.Equal(t, []string{"started", "completed"}, lifecycle(first))
			return
		}
		assert.Equal(t, []string{"started"}, lifecycle(first), "it goes on after the run")
		running := b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents")
		require.Len(t, running.Array(), 1, running.Raw)
		assert.Equal(t, "running", running.Get("0.status").String())

		// The CLI's own run, with nothing sent: when the fake API finished
		// the reply of the CLI's own turn, and when its agent_end came.
		apiDone := watchLastReply(t, b.srv)
		own := b.until(15*time.Second, isType("agent_end"))
		ended := time.Now()
		settledOwn := b.until(10*time.Second, isType("session_settled"))
		var kinds []string
		cleared := false // the background tasks' status, cleared as the sub-agent ended
		for _, f := range own {
			switch k := f.Get("type").String(); {
			case k == "extension_ui_request" && f.Get("method").String() == "setStatus":
				cleared = cleared || f.Get("statusKey").String() == "claude.backgroundTasks" && !f.Get("statusText").Exists()
			case k != "message_update" && k != "subagent_progress":
				kinds = append(kinds, k)
			}
		}
		assert.True(t, cleared, "the background tasks' status cleared")
		assert.Equal(t, []string{"completed"}, lifecycle(own), "the sub-agent's end, as it comes (before the CLI's run or in it)")
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "subagent_lifecycle" })
		assert.Equal(t, []string{"agent_start", "turn_start", "message_start", "message_end", "turn_end", "agent_end"}, kinds,
			"the CLI's turn about it as a run of its own")
		assert.Empty(t, b.held, "nothing more")
		assert.Equal(t, []string{"agent_settled", "session_settled"}, shape(settledOwn), "no prompt_result: no prompt")
		for _, f := range own {
			if f.Get("type").String() == "message_start" {
				assert.NotEqual(t, "user", f.Get("message.role").String(), "no user message: the CLI began it")
			}
		}
		ownReply := last(own, "message_end", "assistant").Get("message.content.0.text").String()
		assert.NotEmpty(t, ownReply)
		lag := ended.Sub(apiDone())
		t.Logf("the CLI's own turn reached the host %v after the fake API finished its reply", lag)
		assert.Less(t, lag, time.Second, "live")
		assert.False(t, b.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool())

		next := b.runPrompt("next [[say:fine]]")
		assert.Empty(t, lifecycle(next))
		end := next[len(next)-1]
		msgs := end.Get("messages").Array()
		require.Len(t, msgs, 2, "only the prompt's own turn: %s", end.Raw)
		assert.Equal(t, "fine", msgs[1].Get("content.0.text").String())
		all := b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array()
		var order []string
		for _, m := range all {
			order = append(order, m.Get("role").String())
		}
		assert.Equal(t, []string{"user", "assistant", "toolResult", "assistant", "assistant", "user", "assistant"}, order,
			"the prompt's run, the CLI's own reply, the next prompt's run: in the order they happened")
		assert.Equal(t, ownReply, all[4].Get("content.0.text").String())
		assert.JSONEq(t, `[]`, b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents").Raw)
	})
}

// watchLastReply notes, from now on, when the fake API finished writing
// each Messages reply; the returned function gives the time the last one
// finished (the CLI printed its lines then).
func watchLastReply(t *testing.T, srv *claudetest.Server) func() time.Time {
	var mu sync.Mutex
	var done []time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			reqs := srv.MessagesRequests()
			now := time.Now()
			mu.Lock()
			for len(done) < len(reqs) {
				done = append(done, time.Time{})
			}
			for i, r := range reqs {
				if r.Completed && done[i].IsZero() {
					done[i] = now
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		for i := len(done) - 1; i >= 0; i-- {
			if !done[i].IsZero() {
				return done[i]
			}
		}
		return time.Time{}
	}
}

// TestOwnRunCommands (stream): while the CLI runs a turn by itself (its
// answer to a background sub-agent's notification, made slow here), the
// bridge is busy with that run, as pi is during a run: a prompt is refused
// unless it says streamingBehavior; a followUp prompt runs as the next turn
// of that run and gets its prompt_result; a steer is handed to the CLI's
// turn; abort interrupts the CLI and ends the run aborted.
func TestOwnRunCommands(t *testing.T) {
	b := startBridge(t, "--transport", "stream")
	b.runPrompt("[[agentbg:{{say:bg done}}]] [[notified:{{slow:40}}]] start it")
	start := b.until(10*time.Second, isType("agent_start"))
	assert.NotContains(t, shape(start[:len(start)-1]), "agent_end")
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool())
	refused := b.call(map[string]any{"type": "prompt", "message": "now [[say:no]]"})
	assert.False(t, refused.Get("success").Bool())
	assert.Contains(t, refused.Get("error").String(), "Agent is already processing")
	queued := b.call(map[string]any{"type": "prompt", "message": "after it [[say:queued reply]]", "streamingBehavior": "followUp"})
	require.True(t, queued.Get("success").Bool(), queued.Raw)
	assert.Equal(t, "queued", queued.Get("data.disposition").String())
	run := b.until(20*time.Second, isType("agent_end"))
	end := run[len(run)-1]
	var texts []string
	for _, m := range end.Get("messages").Array() {
		texts = append(texts, m.Get("role").String()+":"+m.Get("content.0.text").String())
	}
	require.Len(t, texts, 3, "%v", texts)
	assert.True(t, strings.HasPrefix(texts[0], "assistant:word word"), texts[0])
	assert.Equal(t, []string{"user:after it [[say:queued reply]]", "assistant:queued reply"}, texts[1:],
		"the follow-up is the next turn of the CLI's run")
	assert.NotContains(t, shape(run), "agent_start", "one run")
	settled := b.until(10*time.Second, isType("session_settled"))
	assert.Equal(t, []string{"prompt_result", "agent_settled", "session_settled"}, shape(settled))
	assert.Equal(t, queued.Get("id").String(), settled[0].Get("id").String())

	// A steer during it is handed to the CLI's turn: the CLI runs it right
	// after its reply, in the same run.
	b.runPrompt("[[agentbg:{{say:bg done}}]] [[notified:{{slow:30}}]] once more")
	b.until(10*time.Second, isType("agent_start"))
	steer := b.call(map[string]any{"type": "steer", "message": "steered [[say:steer reply]]"})
	require.True(t, steer.Get("success").Bool(), steer.Raw)
	run = b.until(20*time.Second, isType("agent_end"))
	texts = texts[:0]
	for _, m := range run[len(run)-1].Get("messages").Array() {
		texts = append(texts, m.Get("role").String()+":"+m.Get("content.0.text").String())
	}
	require.Len(t, texts, 3, "%v", texts)
	assert.Equal(t, []string{"user:steered [[say:steer reply]]", "assistant:steer reply"}, texts[1:])
	assert.NotContains(t, shape(run), "agent_start", "one run")
	assert.Equal(t, []string{"agent_settled", "session_settled"}, shape(b.until(10*time.Second, isType("session_settled"))))

	// abort during such a run interrupts the CLI and ends it aborted.
	b.runPrompt("[[agentbg:{{say:bg done}}]] [[notified:{{slow:200}}]] again")
	b.until(10*time.Second, isType("agent_start"))
	b.until(10*time.Second, isType("message_update"))
	began := time.Now()
	abort := b.call(map[string]any{"type": "abort"})
	assert.True(t, abort.Get("success").Bool(), abort.Raw)
	t.Logf("abort answered in %v", time.Since(began))
	assert.Equal(t, []string{"agent_end", "agent_settled", "session_settled"}, shape(b.held[len(b.held)-3:]), "before abort's answer")
	assert.True(t, b.held[len(b.held)-2].Get("aborted").Bool())
	assert.Equal(t, "aborted", last(b.held, "message_end", "assistant").Get("message.stopReason").String())
	b.held = nil
	assert.False(t, b.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool())
	assert.Equal(t, "fine", deltaText(b.runPrompt("[[say:fine]]")), "the next prompt runs as usual, on the same process")
}
