//go:build linux

package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// raceEnabled is set by race_test.go: the binary under test is then built
// with the race detector too.
var raceEnabled bool

// binPath is the claude-rpc binary built once for the package's end-to-end
// tests; empty when they do not run (claudetest.EndToEndOn is false).
var binPath string

// TestMain builds the binary for the end-to-end tests when they run. When
// they do not (no claudetest.CLIEnvVar), it builds and installs nothing and
// prints claudetest.EndToEndHint once: the unit tests in this package run,
// and every end-to-end test skips through claudetest.EndToEnd (which
// startBridge and newRPCProc call) without repeating it. Under CI the
// end-to-end tests must run: the package fails at once, saying why.
func TestMain(m *testing.M) {
	runAsLingeringCLI()
	if !claudetest.EndToEndOn() {
		claudetest.PrintEndToEndHint()
		if claudetest.InCI() {
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "claude-rpc-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "claude-rpc")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building claude-rpc:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // best effort
	os.Exit(code)
}

// binary returns binPath, after claudetest.EndToEnd: every use of the
// binary is an end-to-end test.
func binary(t testing.TB) string {
	t.Helper()
	claudetest.EndToEnd(t)
	return binPath
}

// transports are the --transport values every end-to-end test runs on:
// every one claudecli.New accepts.
var transports = claudecli.Transports()

// forEachTransport runs test once per transport, in parallel: a test of
// what differs between transports (how the CLI is started, fed, read and
// ended; the host in the loop; what a turn's process keeps or loses).
func forEachTransport(t *testing.T, test func(t *testing.T, transport string)) {
	t.Helper()
	forTransports(t, transports, test)
}

// kindTransports are one transport of each kind: stream (one CLI process
// for the session) and pipe (one per prompt).
var kindTransports = []string{claudecli.TransportStream, claudecli.TransportPipe}

// forStreamAndPipe runs test on stream and pipe, in parallel: a test of
// what the bridge does above the CLI's process (sessions, models,
// settings, todos, coalescing, what pi's clients see). pty is a per-turn
// transport as pipe is, the same code above claudecli's Transport; it
// differs in how the CLI is started and read (a terminal), which the tests
// on every transport cover. A pty leg costs such a test a cold CLI start
// per prompt, ~0.6 s of a core each (201 of the suite's 853 CLI starts
// were pty legs, 124 of them in these tests).
func forStreamAndPipe(t *testing.T, test func(t *testing.T, transport string)) {
	t.Helper()
	forTransports(t, kindTransports, test)
}

func forTransports(t *testing.T, tps []string, test func(t *testing.T, transport string)) {
	t.Helper()
	claudetest.EndToEnd(t)
	t.Parallel()
	for _, tp := range tps {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			test(t, tp)
		})
	}
}

// rpcProc is a running claude-rpc process under test.
type rpcProc struct {
	t      *testing.T
	srv    *claudetest.Server
	cli    string
	home   string
	dir    string
	marker string // in the environment of the bridge and every process it starts
	bin    string // the program start runs; binPath when empty
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	stdout *os.File // the read end of its stdout pipe

	frames chan []byte
	exited chan struct{}
	seen   [][]byte       // every frame read so far
	held   []gjson.Result // frames read by call while it waited for its response
	ready  chan struct{}  // closed when the ready frame came: the bridge serves
	check  *frameCheck    // every frame against the protocol reference (schema_e2e_test.go)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBridge starts claude-rpc --mode rpc on the real CLI against a fresh
// fake API, in a fresh home and working directory.
func startBridge(t *testing.T, args ...string) *rpcProc {
	t.Helper()
	return startBridgeWith(t, bridgeOpts{}, args...)
}

// bridgeOpts is how startBridgeWith starts a bridge; each field left zero
// is as startBridge has it.
type bridgeOpts struct {
	srv *claudetest.Server // the fake API; default a fresh one
	cli string             // --claude-path; default the real CLI
	// home and dir are its HOME and working folder; default fresh ones (a
	// second bridge on the first one's sessions passes the first's).
	home, dir string
	env       []string // added to its environment
}

// startBridgeWith starts claude-rpc --mode rpc as o says, with args.
func startBridgeWith(t *testing.T, o bridgeOpts, args ...string) *rpcProc {
	t.Helper()
	claudetest.EndToEnd(t)
	if o.cli == "" {
		o.cli = claudetest.CLI(t)
	}
	if o.srv == nil {
		o.srv = claudetest.Start(t)
	}
	if o.home == "" {
		o.home = t.TempDir()
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	b := newRPCProc(t, o.srv, o.home, o.dir)
	b.cli = o.cli
	all := append([]string{"--mode", "rpc", "--claude-path", o.cli, "--cwd", b.dir, "--log-level", "debug"}, args...)
	b.start(append(o.srv.CLIEnv(b.home), o.env...), all...)
	return b
}

// newRPCProc makes a claude-rpc process to start with HOME home in folder
// dir; srv is the fake API its CLI talks to, if the test serves it.
func newRPCProc(t *testing.T, srv *claudetest.Server, home, dir string) *rpcProc {
	t.Helper()
	claudetest.EndToEnd(t)
	return &rpcProc{t: t, srv: srv, home: home, dir: dir, marker: newMarker(),
		stderr: &lockedBuffer{}, frames: make(chan []byte, 1024), exited: make(chan struct{}), check: newFrameCheck(),
		ready: make(chan struct{})}
}

// start runs claude-rpc with args and env (plus the marker), reading its
// frames, and at the test's end closes its stdin and checks that it and
// everything it started have exited.
func (b *rpcProc) start(env []string, args ...string) {
	t := b.t
	t.Helper()
	bin := b.bin
	if bin == "" {
		bin = binPath
	}
	b.cmd = exec.Command(bin, args...)
	b.cmd.Env = append(env, "CLAUDE_RPC_TEST_MARKER="+b.marker)
	b.cmd.Stderr = b.stderr
	var err error
	b.stdin, err = b.cmd.StdinPipe()
	require.NoError(t, err)
	// An os.Pipe of our own, not StdoutPipe: Wait (run below as soon as
	// the process starts) closes a StdoutPipe when the process exits, which
	// can drop the last frames still in the pipe unread.
	stdout, pw, err := os.Pipe()
	require.NoError(t, err)
	b.stdout = stdout
	b.cmd.Stdout = pw
	require.NoError(t, b.cmd.Start())
	_ = pw.Close() // the child has it: EOF comes when it exits
	go func() {
		defer close(b.frames)
		defer close(b.check.done)
		defer stdout.Close()
		r := bufio.NewReaderSize(stdout, 1<<20)
		first := true
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				b.check.frame(line)
				typ := gjson.GetBytes(line, "type").String()
				if first && typ == "ready" {
					// The ready frame (omp's) comes first; the tests read
					// what follows it (TestOmpClient needs it).
					first = false
					close(b.ready)
					continue
				}
				if typ == "available_commands_update" {
					// omp's: sent when the pre-warmed CLI has listed its
					// commands, whenever that is, between any two frames;
					// checked against the reference above, and by
					// TestOmpClient.
					continue
				}
				first = false
				b.frames <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = b.cmd.Wait() // the exit status is read from ProcessState
		close(b.exited)
	}()
	t.Cleanup(func() {
		_ = b.stdin.Close()
		select {
		case <-b.exited:
		case <-time.After(20 * time.Second):
			_ = b.cmd.Process.Kill()
			t.Errorf("claude-rpc did not exit within 20s of its stdin closing")
		}
		// Every test: once the bridge has exited, nothing it started runs.
		var left []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if left = b.leftovers(); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("processes left running after claude-rpc exited: %v", left)
			for _, p := range left { // do not leave them to the next test
				pid, _ := strconv.Atoi(strings.Fields(p)[0])
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		b.check.report(t, b.frames)
		if t.Failed() {
			t.Logf("claude-rpc stderr:\n%s", tail(b.stderr.String(), 4000))
		}
	})
}

func newMarker() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// send writes one line (a newline is added).
func (b *rpcProc) send(line string) {
	b.t.Helper()
	_, err := io.WriteString(b.stdin, line+"\n")
	require.NoError(b.t, err)
}

// sendJSON writes v as one line.
func (b *rpcProc) sendJSON(v any) {
	b.t.Helper()
	line, err := json.Marshal(v)
	require.NoError(b.t, err)
	b.send(string(line))
}

// next returns the next frame, failing the test after timeout.
func (b *rpcProc) next(timeout time.Duration) gjson.Result {
	b.t.Helper()
	if len(b.held) > 0 {
		f := b.held[0]
		b.held = b.held[1:]
		return f
	}
	return b.read(timeout)
}

// read takes the next frame from stdout.
func (b *rpcProc) read(timeout time.Duration) gjson.Result {
	b.t.Helper()
	select {
	case f, ok := <-b.frames:
		if !ok {
			b.t.Fatalf("stdout closed while waiting for a frame")
		}
		require.True(b.t, bytes.HasSuffix(f, []byte("\n")), "a frame must be a whole line")
		require.True(b.t, gjson.ValidBytes(f), "a frame must be JSON: %.200q", f)
		b.seen = append(b.seen, f)
		return gjson.ParseBytes(f)
	case <-time.After(timeout):
		b.t.Fatalf("no frame within %v", timeout)
	}
	return gjson.Result{}
}

// until reads frames until one satisfies match and returns all of them, the
// match last.
func (b *rpcProc) until(timeout time.Duration, match func(gjson.Result) bool) []gjson.Result {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var out []gjson.Result
	for {
		f := b.next(time.Until(deadline))
		out = append(out, f)
		if match(f) {
			return out
		}
	}
}

func isType(typ string) func(gjson.Result) bool {
	return func(f gjson.Result) bool { return f.Get("type").String() == typ }
}

func isResponse(command string) func(gjson.Result) bool {
	return func(f gjson.Result) bool {
		return f.Get("type").String() == "response" && f.Get("command").String() == command
	}
}

// call sends a command with an id and returns its response, failing on any
// frame in between.
func (b *rpcProc) call(v map[string]any) gjson.Result {
	b.t.Helper()
	id := newMarker()
	v["id"] = id
	b.sendJSON(v)
	// Events of a running prompt (and answers to commands sent without
	// waiting) may come first: they are held for next.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := b.read(time.Until(deadline))
		if f.Get("type").String() == "response" && f.Get("id").String() == id {
			return f
		}
		b.held = append(b.held, f)
	}
}

// closeAndWait closes stdin and waits for the bridge to exit, returning its
// exit status and the frames it wrote meanwhile.
func (b *rpcProc) closeAndWait(timeout time.Duration) (int, []gjson.Result) {
	b.t.Helper()
	require.NoError(b.t, b.stdin.Close())
	var rest []gjson.Result
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-b.frames:
			if !ok {
				select {
				case <-b.exited:
				case <-deadline:
					b.t.Fatalf("claude-rpc did not exit within %v of stdin closing", timeout)
				}
				return b.cmd.ProcessState.ExitCode(), rest
			}
			rest = append(rest, gjson.ParseBytes(f))
		case <-deadline:
			b.t.Fatalf("claude-rpc did not exit within %v of stdin closing", timeout)
		}
	}
}

// leftovers lists the live processes carrying the bridge's marker: the
// bridge, its CLI processes and anything they started.
func (b *rpcProc) leftovers() []string {
	return processesWithEnv("CLAUDE_RPC_TEST_MARKER=" + b.marker)
}

// requireNoLeftovers waits up to 5s for every process the bridge started to
// be gone.
func (b *rpcProc) requireNoLeftovers(except ...int) {
	b.t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = nil
		for _, p := range b.leftovers() {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			if !contains(except, pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	b.t.Fatalf("processes left running: %v", left)
}

// requireIdle checks that, after an aborted turn, nothing runs but the
// bridge and, on the stream transport, the session's one CLI process (kept
// warm for the next prompt, no children).
func (b *rpcProc) requireIdle(transport string) {
	b.t.Helper()
	if transport != "stream" {
		b.requireNoLeftovers(b.cmd.Process.Pid)
		return
	}
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = nil
		for _, p := range b.leftovers() {
			if !strings.HasPrefix(p, strconv.Itoa(b.cmd.Process.Pid)+" ") {
				left = append(left, p)
			}
		}
		if len(left) == 0 || len(left) == 1 && strings.Contains(left[0], "--input-format stream-json") {
			return
		}
	}
	b.t.Fatalf("more than the session's CLI process left running: %v", left)
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// cliPids returns the pids of the running CLI processes the bridge started.
// A child the CLI forked (it runs git as it starts) shows the CLI's
// command line until it execs: it is not counted, nor is a descendant of
// one, nor a process gone since it was listed (a short-lived child whose
// parent can no longer be read).
func (b *rpcProc) cliPids() []int {
	return b.cliPidsWhere(func(string) bool { return true })
}

// turnPids is cliPids without the query processes (started with
// --no-session-persistence to ask the CLI for its models and commands: a
// get_state within firstModelWait of the start, before the CLI said its
// model, starts one on the pipe and pty transports).
func (b *rpcProc) turnPids() []int {
	return b.cliPidsWhere(func(cmdline string) bool { return !strings.Contains(cmdline, "--no-session-persistence") })
}

// cliPidsWhere is cliPids, of the processes whose command line passes keep.
func (b *rpcProc) cliPidsWhere(keep func(cmdline string) bool) []int {
	var found []int
	for _, p := range b.leftovers() {
		if strings.Contains(p, "--input-format stream-json") && keep(p) {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			found = append(found, pid)
		}
	}
	var pids []int
	for _, pid := range found {
		if parent(pid) > 0 && !descendsFrom(pid, found) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// descendsFrom says whether an ancestor of pid is one of pids.
func descendsFrom(pid int, pids []int) bool {
	for p := parent(pid); p > 1; p = parent(p) {
		if contains(pids, p) {
			return true
		}
	}
	return false
}

// processesWithEnv returns "pid cmdline" for each live (not zombie) process
// whose environment holds kv.
func processesWithEnv(kv string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(kv+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		if syscall.Kill(pid, 0) != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// runPrompt sends a prompt and returns its events through agent_end. The
// prompt's acknowledgement must come first.
func (b *rpcProc) runPrompt(msg string) []gjson.Result {
	b.t.Helper()
	resp := b.call(map[string]any{"type": "prompt", "message": msg})
	require.True(b.t, resp.Get("success").Bool(), "prompt refused: %s", resp.Raw)
	frames := b.until(60*time.Second, isType("agent_end"))
	if after := b.settled(frames[len(frames)-1]); after != nil {
		assert.Equal(b.t, settledTail[1:], shape(after), "after agent_end: the frames that say the bridge settled")
	}
	return frames // up to agent_end: the run's own frames
}

// settledTail is how the frames of a run the bridge does not follow with
// another end: agent_end, then the frames that say it settled.
var settledTail = []string{"agent_end", "prompt_result", "agent_settled", "session_settled"}

// settled reads, after an agent_end after which the bridge stops on its
// own (isTerminal), the frames that say so: prompt_result, agent_settled,
// session_settled.
func (b *rpcProc) settled(end gjson.Result) []gjson.Result {
	b.t.Helper()
	if !end.Get("isTerminal").Bool() {
		return nil
	}
	return b.until(10*time.Second, isType("session_settled"))
}

// transcript is the CLI's transcript of the session in use (get_state's
// sessionFile is its pi file).
func (b *rpcProc) transcript() string {
	b.t.Helper()
	id := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	require.NotEmpty(b.t, id)
	return sessions.TranscriptPath(filepath.Join(b.home, ".claude"), b.dir, id)
}
