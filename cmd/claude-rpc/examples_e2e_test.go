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

// runExample runs an example program with env added to its environment,
// checks what it printed and what reached the API, and returns what it
// printed.
func runExample(t *testing.T, dir string, env []string, name string, args ...string) string {
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
	return text
}

func TestPythonExample(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the Python example")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := runExample(t, t.TempDir(), []string{"CLAUDE_RPC_BIN=" + binary(t)}, python, filepath.Join(root, "scripts", "examples", "python", "example.py"))
	// It waits for agent_settled, as pi 1.5.2's docs say: once per prompt.
	assert.Equal(t, []string{"[settled]", "[settled: aborted]"}, settledLines(out))
}

// settledLines lists the lines an example printed for agent_settled.
func settledLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[settled") {
			got = append(got, l)
		}
	}
	return got
}

// TestNodeExample drives claude-rpc through pi 0.73.1's own RpcClient (the
// pinned @mariozechner/pi-coding-agent, installed by scripts/install-pi).
func TestNodeExample(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	_, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the Node example")
	// The example as a user has it: its files, and node_modules holding pi.
	dir := t.TempDir()
	copyNodeExample(t, dir)
	require.NoError(t, os.Symlink(filepath.Join(installPi(t), "node_modules"), filepath.Join(dir, "node_modules")))
	runExample(t, dir, []string{"CLAUDE_RPC_BIN=" + binary(t)}, "node", "example.mjs")
}

// TestNodeExamplePi15 runs the Node example for pi 1.5 hosts: pi 1.5.2's
// own RpcClient (@earendil-works/pi-coding-agent, pinned, installed by
// scripts/install-pi15), --message-updates delta, waiting for agent_settled.
func TestNodeExamplePi15(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	_, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the Node example")
	dir := t.TempDir()
	copyNodeExample(t, dir)
	require.NoError(t, os.Symlink(filepath.Join(installPi15(t), "node_modules"), filepath.Join(dir, "node_modules")))
	out := runExample(t, dir, []string{"CLAUDE_RPC_BIN=" + binary(t)}, "node", "example-pi15.mjs")
	assert.Contains(t, out, "[steer queued]", "steer() returns the disposition")
	assert.Contains(t, out, "[queue] 1 steering, 0 follow-up", "queue_update when the steer is queued")
	assert.Contains(t, out, "[queue] 0 steering, 0 follow-up", "and when it is delivered")
	assert.Equal(t, []string{"[settled]", "[settled: aborted]"}, settledLines(out), "agent_settled once per prompt")
	// The abort answered after agent_settled {aborted:true}: the state is read after it.
	assert.Less(t, strings.Index(out, "[settled: aborted]"), strings.Index(out, "[state]"))
}

// installPi installs pi's npm package (scripts/install-pi, cached outside
// the repository) and returns the folder whose node_modules holds it.
func installPi(t *testing.T) string {
	t.Helper()
	return runInstaller(t, "install-pi")
}

// copyNodeExample copies the Node example's files into dir.
func copyNodeExample(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"example.mjs", "example-pi15.mjs", "claude-rpc-launcher.mjs", "package.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "examples", "node", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
}

// TestReadmeHost runs the README's Node host snippet (the ```js block under
// "A host in a dozen lines") as a reader would paste it: claude-rpc on PATH,
// the CLI found through CLAUDE_RPC_CLAUDE_PATH, against the fake API. It
// prints the reply and exits once claude-rpc, its stdin closed, has exited.
func TestReadmeHost(t *testing.T) {
	t.Parallel()
	claudetest.EndToEnd(t)
	_, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the README's host")
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## A host in a dozen lines\n")
	require.True(t, ok, "README.md has no section \"A host in a dozen lines\"")
	_, block, ok := strings.Cut(section, "\n```js\n")
	require.True(t, ok, "the section has no ```js block")
	code, _, ok := strings.Cut(block, "\n```\n")
	require.True(t, ok, "the ```js block does not end")

	dir, bin := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host.mjs"), []byte(code+"\n"), 0o644))
	require.NoError(t, os.Symlink(binary(t), filepath.Join(bin, "claude-rpc")))
	srv := claudetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "host.mjs", "hello [[say:Hi from the README\u2028host]]")
	cmd.Dir = dir
	cmd.Env = append(srv.CLIEnv(t.TempDir()),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CLAUDE_RPC_CLAUDE_PATH="+claudetest.CLI(t), "CLAUDE_RPC_CWD="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, tail(stderr.String(), 3000))
	// The reply whole, U+2028 inside it: the snippet splits frames on LF only.
	assert.Equal(t, "Hi from the README\u2028host", string(out))
	assert.Len(t, requestsEndingWith(srv.MessagesRequests(), "hello [[say:Hi from the README\u2028host]]"), 1, "the prompt reached the API")
}
