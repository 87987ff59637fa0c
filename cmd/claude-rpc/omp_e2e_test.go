//go:build linux

package main

import (
	"context"
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
				binPath, "--claude-path", claudetest.CLI(t), "--cwd", t.TempDir(), "--transport", tp, "--message-updates", "delta")
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
