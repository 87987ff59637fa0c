//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// The CLI starts each Bash command in a session of its own, out of reach of
// its process group and of the parent-death signal. These tests check that
// such a command ends with the CLI process that ran it, however that ends:
// SIGKILLed from outside, stopped by the bridge on an abort or when its
// stdin ends. Each fails without the bridge as child subreaper (the
// command is left running, adopted by pid 1).

// orphanBound is how long after its CLI ended a Bash command may still run.
const orphanBound = 5 * time.Second

// startBridgeRunningBash starts the bridge with user settings that let the
// CLI run any Bash command without asking (a project's settings count only
// in a workspace the user trusted).
func startBridgeRunningBash(t *testing.T, tp string) *rpcProc {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash"]}}`), 0o644))
	srv := claudetest.Start(t)
	return startBridgeWith(t, bridgeOpts{srv: srv, home: home}, "--transport", tp)
}

// startNeverEnding starts a prompt whose Bash tool call never ends on its
// own (cat on a FIFO nobody writes to) and waits until the command runs. It
// returns the FIFO's path, which is in the command line of the command's
// processes (the CLI's bash and cat).
func (b *rpcProc) startNeverEnding() string {
	b.t.Helper()
	// In the working folder: the CLI refuses to read a file outside it
	// without asking.
	fifo := filepath.Join(b.dir, "never-"+b.marker)
	require.NoError(b.t, syscall.Mkfifo(fifo, 0o600))
	require.True(b.t, b.call(map[string]any{"type": "prompt", "message": "[[bash:cat " + fifo + "]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	require.Eventually(b.t, func() bool { return len(b.running("cat "+fifo)) > 0 }, 10*time.Second, 20*time.Millisecond,
		"the Bash command runs")
	return fifo
}

// running lists the bridge's processes ("pid cmdline") whose command line
// holds s.
func (b *rpcProc) running(s string) []string {
	var out []string
	for _, p := range b.leftovers() {
		if strings.Contains(p, s) {
			out = append(out, p)
		}
	}
	return out
}

// requireGone waits up to orphanBound for no process of the bridge's with s
// in its command line to be left.
func (b *rpcProc) requireGone(s string) {
	b.t.Helper()
	var left []string
	start := time.Now()
	for deadline := start.Add(orphanBound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = b.running(s); len(left) == 0 {
			b.t.Logf("the command was gone %v after the test looked first", time.Since(start).Round(time.Millisecond))
			return
		}
	}
	b.t.Fatalf("still running %v after the CLI ended: %v", orphanBound, left)
}

// parent returns pid's parent process id, or 0.
func parent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// cliOf returns the CLI process that runs the command whose command line
// holds s: its nearest ancestor that is a CLI process.
func (b *rpcProc) cliOf(s string) int {
	b.t.Helper()
	procs := b.running(s)
	require.NotEmpty(b.t, procs)
	pid, _ := strconv.Atoi(strings.Fields(procs[0])[0])
	clis := b.cliPids()
	for p := parent(pid); p > 1; p = parent(p) {
		if contains(clis, p) {
			return p
		}
	}
	b.t.Fatalf("no CLI process among the ancestors of %q (CLI processes: %v)", procs[0], clis)
	return 0
}

func TestBashCommandEndsWithKilledCLI(t *testing.T) {
	forEachTransport(t, testBashCommandEndsWithKilledCLI)
}

func testBashCommandEndsWithKilledCLI(t *testing.T, tp string) {
	b := startBridgeRunningBash(t, tp)
	fifo := b.startNeverEnding()
	require.NoError(t, syscall.Kill(b.cliOf(fifo), syscall.SIGKILL))
	frames := b.until(15*time.Second, isType("agent_end"))
	end := last(frames, "message_end", "assistant").Get("message")
	assert.Equal(t, "error", end.Get("stopReason").String())
	assert.Contains(t, end.Get("errorMessage").String(), "killed")
	b.requireGone(fifo)

	frames = b.runPrompt("still there? [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames), "the next prompt works")
}

// The CLI, when it can, SIGKILLs its Bash commands itself on an interrupt
// and on SIGTERM (measured on 2.1.328, with a command that ignores SIGTERM
// too): an abort or the end of stdin leaves nothing behind then
// (TestAbortMidToolCall). It cannot when it is frozen (SIGSTOP): the
// bridge's stop ladder then SIGKILLs it, and its Bash command is left to
// the bridge.

func TestBashCommandEndsWithAbort(t *testing.T) {
	forEachTransport(t, testBashCommandEndsWithAbort)
}

func testBashCommandEndsWithAbort(t *testing.T, tp string) {
	b := startBridgeRunningBash(t, tp)
	fifo := b.startNeverEnding()
	require.NoError(t, syscall.Kill(b.cliOf(fifo), syscall.SIGSTOP))
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	b.until(20*time.Second, isResponse("abort"))
	b.requireGone(fifo)
	b.requireIdle(tp)
}

func TestBashCommandEndsWhenStdinCloses(t *testing.T) {
	forEachTransport(t, testBashCommandEndsWhenStdinCloses)
}

func testBashCommandEndsWhenStdinCloses(t *testing.T, tp string) {
	b := startBridgeRunningBash(t, tp)
	fifo := b.startNeverEnding()
	require.NoError(t, syscall.Kill(b.cliOf(fifo), syscall.SIGSTOP))
	code, _ := b.closeAndWait(20 * time.Second)
	assert.Equal(t, 0, code)
	b.requireGone(fifo)
}

// The bridge SIGKILLed: Linux ends its CLI processes (their parent-death
// signal) and gives their Bash commands to pid 1; the bridge's watchdog
// ends them.
func TestBashCommandEndsWithKilledBridge(t *testing.T) {
	forEachTransport(t, testBashCommandEndsWithKilledBridge)
}

func testBashCommandEndsWithKilledBridge(t *testing.T, tp string) {
	b := startBridgeRunningBash(t, tp)
	fifo := b.startNeverEnding()
	require.NoError(t, b.cmd.Process.Kill())
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("claude-rpc did not die of SIGKILL")
	}
	b.requireGone(fifo)
	b.requireNoLeftovers()
}
