//go:build linux

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
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
// it, nothing says it was aborted); when it ends, the CLI runs a turn of
// its own about it, whose lines come with the next prompt, before the
// prompt's own turn, which alone ends that run. On pipe the CLI holds the
// turn's result until the sub-agent ended, and answers it in the same run
// (pty alike).
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
		first := b.runPrompt("[[agentbg:look around {{bash:sleep 1; echo from-sub}}]]")
		if tp != "stream" { // a process per turn
			assert.Equal(t, []string{"started", "completed"}, lifecycle(first))
			return
		}
		assert.Equal(t, []string{"started"}, lifecycle(first), "it goes on after the run")
		running := b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents")
		require.Len(t, running.Array(), 1, running.Raw)
		assert.Equal(t, "running", running.Get("0.status").String())
		time.Sleep(2500 * time.Millisecond) // it ends, and the CLI answers its notification by itself
		next := b.runPrompt("next [[say:fine]]")
		assert.Equal(t, []string{"completed"}, lifecycle(next))
		last := last(next, "message_end", "assistant")
		assert.Equal(t, "fine", last.Get("message.content.0.text").String(), "the run ends with the prompt's own reply")
		assert.JSONEq(t, `[]`, b.call(map[string]any{"type": "get_subagents"}).Get("data.subagents").Raw)
		assert.Equal(t, "again", deltaText(b.runPrompt("[[say:again]]")), "the next prompt's reply is its own")
	})
}
