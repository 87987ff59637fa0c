package bridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/transform"
)

// fakeCLIEnv makes the test binary a stand-in CLI instead of running
// tests (TestMain): "mute" writes its pid to the file fakePidEnv names and
// then answers nothing for a minute, stdin's end or not, as a CLI stuck
// in its start-up. A Go program, so the tests that use it run on Windows.
const (
	fakeCLIEnv = "BRIDGE_FAKE_CLI"
	fakePidEnv = "BRIDGE_FAKE_CLI_PID"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeCLIEnv); mode != "" {
		os.Exit(fakeCLI(mode))
	}
	// An event the bridge or its translator makes without an encoding
	// fails the test that made it (the binary writes its type alone).
	transform.OnUnknownEvent = func(typ string) {
		panic(fmt.Sprintf("bridge test: event type %q has no encoding in transform (Encoder.event, Event.MarshalJSON)", typ))
	}
	goleak.VerifyTestMain(m) // what no test's own check saw (tests without the rig)
}

func fakeCLI(mode string) int {
	if mode != "mute" {
		return 2
	}
	file := os.Getenv(fakePidEnv)
	if os.WriteFile(file+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644) != nil || os.Rename(file+".tmp", file) != nil {
		return 1
	}
	time.Sleep(time.Minute)
	return 0
}

// muteCLI is a CLI config running the test binary as a CLI that never
// answers, and the file its pid goes to.
func muteCLI(t *testing.T) (claudecli.Config, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	pidFile := filepath.Join(t.TempDir(), "pid")
	return claudecli.Config{Path: exe, Env: append(os.Environ(), fakeCLIEnv+"=mute", fakePidEnv+"="+pidFile)}, pidFile
}

// startedPid waits for the fake CLI to write its pid.
func startedPid(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || len(b) == 0 {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	}, waitFor, 10*time.Millisecond, "the fake CLI did not start")
	return pid
}

// TestShutdownDuringQuery: stdin ends while get_available_models waits for
// a query process that does not answer (infoTimeout: 30 s). Serve returns
// at once: the query is cancelled, its process ended, and the command
// answered as failed.
func TestShutdownDuringQuery(t *testing.T) {
	cli, pidFile := muteCLI(t)
	opts := Options{CLI: cli, query: claudecli.Query}
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, opts)
	id := r.sendf(`{"type":"get_available_models"}`)
	pid := startedPid(t, pidFile)
	assert.Less(t, serveReturns(t, r, time.Minute), 2*time.Second)
	assert.True(t, processGone(pid), "the query process %d is left running", pid)
	res := r.answer(id)
	assert.False(t, res.Get("success").Bool(), res.Raw)
	assert.Contains(t, res.Get("error").String(), "the bridge is shutting down")
}

// TestServeContextEndsWhileInputBlocks: Serve's context ends while its
// reader waits for the host's next line (stdin neither written nor
// closed). Serve returns, the read under way ends with it (an io.Pipe
// is closed; os.Stdin's ends with the process), and no goroutine is left.
func TestServeContextEndsWhileInputBlocks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := rigOptions(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	go func() {
		done <- Serve(ctx, inR, outW, opts)
		_ = outW.Close()
	}()
	out := bufio.NewScanner(outR)
	_, err := io.WriteString(inW, `{"type":"get_state","id":"s"}`+"\n")
	require.NoError(t, err)
	for out.Scan() && gjson.Get(out.Text(), "id").String() != "s" {
	}
	// The reader has handed on the line and waits for the next.
	cancel()
	go func() { _, _ = io.Copy(io.Discard, outR) }() // what shutdown writes
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Serve did not return after its context ended")
	}
	_, err = io.WriteString(inW, `{"type":"get_state"}`+"\n")
	assert.ErrorIs(t, err, errShutdown, "Serve closed the pipe it read")
	goleak.VerifyNone(t, before)
}

// serveReturns closes the rig's stdin and returns how long Serve took to
// return, failing the test after within.
func serveReturns(t *testing.T, r *rig, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, r.in.Close())
	select {
	case err := <-r.done:
		r.done <- err // for the rig's cleanup
	case <-time.After(within):
		t.Fatalf("Serve did not return within %v of stdin's end", within)
	}
	took := time.Since(start)
	t.Logf("Serve returned %v after stdin ended", took.Round(time.Millisecond))
	return took
}

// TestShutdownDuringRename: stdin ends while set_session_name's CLI
// process (pipe and pty: one of its own) has not answered. The name is
// owed to the transcript, so the process gets FlushWait, as a CLI
// process writing its transcript does, not its 30 s timeout; then it is
// ended.
func TestShutdownDuringRename(t *testing.T) {
	cli, pidFile := muteCLI(t)
	opts := Options{CLI: cli, flushWait: 500 * time.Millisecond}
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, opts)
	st := r.call(map[string]any{"type": "get_state"}).Get("data")
	file := st.Get("sessionFile").String()
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"user","uuid":"u1","sessionId":"`+st.Get("sessionId").String()+`","message":{"role":"user","content":"hi"}}`+"\n"), 0o644))
	require.True(t, r.call(map[string]any{"type": "set_session_name", "name": "n"}).Get("success").Bool())
	pid := startedPid(t, pidFile)
	took := serveReturns(t, r, time.Minute)
	assert.GreaterOrEqual(t, took, opts.flushWait, "the name owed to the transcript gets FlushWait")
	assert.Less(t, took, opts.flushWait+2*time.Second)
	assert.True(t, processGone(pid), "the rename process %d is left running", pid)
}

// TestShutdownWhileAskingHost: stdin ends while a permission request
// waits for the host's answer, from a CLI that does not withdraw it when
// interrupted. The request is answered (denied) and withdrawn from the
// host at once, and Serve returns.
func TestShutdownWhileAskingHost(t *testing.T) {
	rec := recording(t, "text")
	answered := make(chan any, 1)
	ask := func(turn *claudetest.Turn) {
		turn.Emit(rec.Lines[:6]...)
		req := claudecli.ControlRequest{ID: "r1", Subtype: "can_use_tool",
			Request: gjson.Parse(`{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}`)}
		a, _ := turn.Ask(context.Background(), req)
		answered <- a
		turn.Emit(resultLine(t))
		<-turn.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{ask}}, Options{Ask: true})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	asked := r.event("extension_ui_request")
	serveReturns(t, r, waitFor)
	select {
	case a := <-answered:
		assert.Equal(t, "deny", a.(map[string]any)["behavior"], "the request is answered as denied")
	default:
		t.Error("the CLI's request was not answered")
	}
	cancel := r.event("extension_ui_request")
	assert.Equal(t, "cancel", cancel.Get("method").String(), cancel.Raw)
	assert.Equal(t, asked.Get("id").String(), cancel.Get("targetId").String())
}

// TestShutdownDuringBash: stdin ends while the bash command runs. It is
// stopped (its process group) by the shutdown, as by abort_bash, and
// answered cancelled.
func TestShutdownDuringBash(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}, Options{})
	id := r.sendf(`{"type":"bash","command":"echo $$; sleep 30"}`)
	pid, err := strconv.Atoi(strings.TrimSpace(r.event("bash_execution_update").Get("delta").String()))
	require.NoError(t, err)
	assert.Less(t, serveReturns(t, r, waitFor), 2*time.Second)
	res := r.answer(id)
	assert.True(t, res.Get("data.cancelled").Bool(), res.Raw)
	assert.True(t, processGone(pid), "the bash command %d is left running", pid)
}

// TestExportHTMLStops: export_html whose context has ended (the bridge
// shuts down) fails with the cause and writes nothing.
func TestExportHTMLStops(t *testing.T) {
	dir := t.TempDir()
	s := &server{st: newState("", stateEnv{cwd: dir}), cwd: dir}
	s.st.f.messages = []transform.Message{{Role: "user", Content: []transform.Content{transform.TextContent("hi")}}}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errShutdown)
	_, err := s.exportHTML(&call{ctx: ctx, typ: "export_html"})
	require.ErrorIs(t, err, errShutdown)
	assert.EqualError(t, err, "export_html: the bridge is shutting down")
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "no page, no temp file")
}
