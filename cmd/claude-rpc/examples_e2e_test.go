//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// The examples under scripts/examples, run as a user would, against the
// fake API and the real CLI: a prompt streamed to the terminal, a steering
// message while it streams, a prompt aborted, then get_state.
var exampleArgs = []string{"first [[slow:15]]", "steer [[say:steered reply]]", "long [[slow:300]]"}

// runExample runs an example program with env added to its environment
// and checks what it printed and what reached the API.
func runExample(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	srv := claudetest.Start(t)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, exampleArgs...)...)
	cmd.Dir = dir
	cmd.Env = append(append(srv.CLIEnv(home), env...),
		"CLAUDE_RPC_ARGS=--claude-path "+claudetest.CLI(t)+" --cwd "+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, tail(stderr.String(), 3000))
	text := string(out)
	for _, want := range []string{
		"[user] first [[slow:15]]", "word word word", // streamed
		"[user] steer [[say:steered reply]]", "steered reply", // steered within the run
		"[user] long [[slow:300]]", "[assistant done: aborted]",
		"[state] session ", "6 messages",
	} {
		assert.Contains(t, text, want)
	}
	assert.Len(t, requestsEndingWith(srv.MessagesRequests(), "steer [[say:steered reply]]"), 1, "the steer reached the API")
}

func TestPythonExample(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the Python example")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	runExample(t, t.TempDir(), []string{"CLAUDE_RPC_BIN=" + binPath}, python, filepath.Join(root, "scripts", "examples", "python", "example.py"))
}

// TestNodeExample drives claude-rpc through pi's own RpcClient (the pinned
// @mariozechner/pi-coding-agent, installed by scripts/install-pi).
func TestNodeExample(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the Node example")
	// The example as a user has it: its files, and node_modules holding pi.
	dir := t.TempDir()
	copyNodeExample(t, dir)
	require.NoError(t, os.Symlink(filepath.Join(installPi(t), "node_modules"), filepath.Join(dir, "node_modules")))
	runExample(t, dir, []string{"CLAUDE_RPC_BIN=" + binPath}, "node", "example.mjs")
}

// installPi installs pi's npm package (scripts/install-pi, cached outside
// the repository) and returns the folder whose node_modules holds it.
func installPi(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pi, err := exec.Command("bash", filepath.Join(root, "scripts", "install-pi")).Output()
	require.NoError(t, err, "scripts/install-pi")
	return strings.TrimSpace(string(pi))
}

// copyNodeExample copies the Node example's files into dir.
func copyNodeExample(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"example.mjs", "claude-rpc-launcher.mjs", "package.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "examples", "node", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
}
