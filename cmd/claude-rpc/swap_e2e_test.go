package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// A lingering CLI is the test binary, copied under the name lingerName,
// run by the bridge as its CLI (--claude-path): it runs the real CLI
// (lingerEnv says where) with its arguments, on its own stdin, stdout and
// stderr, and when that was a turn's process (stream-json), it lingers
// for a while after the CLI exited (after its stdin closed): a process
// that takes seconds to exit (a slow disk, an antivirus scanning what it
// wrote). It notes "lingers" and "exits" in a log file as it does. A
// copy, not the test binary itself, so that the bridge, which has the
// same environment, never takes itself for one.
const (
	lingerName = "lingering-claude"
	lingerEnv  = "CLAUDE_RPC_TEST_LINGER"
)

// lingerSpec is lingerEnv's value, JSON. A turn's process lingers until
// the file Release exists, or Linger has passed.
type lingerSpec struct {
	CLI     string
	Linger  time.Duration
	Log     string
	Release string
}

// runAsLingeringCLI runs the lingering CLI and exits, when this process
// is one; else it returns. TestMain calls it first.
func runAsLingeringCLI() {
	if !strings.HasPrefix(filepath.Base(os.Args[0]), lingerName) {
		return
	}
	var spec lingerSpec
	if err := json.Unmarshal([]byte(os.Getenv(lingerEnv)), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", lingerName, lingerEnv, err)
		os.Exit(2)
	}
	cmd := exec.Command(spec.CLI, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", lingerName, err)
			os.Exit(127)
		}
		code = exit.ExitCode()
	}
	if slices.Contains(os.Args[1:], "stream-json") {
		note := func(what string) {
			if f, err := os.OpenFile(spec.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				_, _ = fmt.Fprintf(f, "%s %d\n", what, os.Getpid())
				_ = f.Close()
			}
		}
		note("lingers")
		for end := time.Now().Add(spec.Linger); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(spec.Release); err == nil {
				break
			}
		}
		note("exits")
	}
	os.Exit(code)
}

// releaseLingering lets the lingering CLIs whose log is log exit (at once,
// from now on).
func releaseLingering(t *testing.T, log string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(log), "release"), nil, 0o644))
}

// lingeringCLI makes a lingering CLI running cli that lingers for linger
// (or until releaseLingering):
// its path (the bridge's --claude-path), the environment entry the bridge
// needs (it hands the CLI its own), and its log.
func lingeringCLI(t *testing.T, cli string, linger time.Duration) (path, env, log string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	path = filepath.Join(dir, lingerName+map[bool]string{true: ".exe"}[runtime.GOOS == "windows"])
	in, err := os.Open(self)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
	log = filepath.Join(dir, "linger.log")
	spec, err := json.Marshal(lingerSpec{CLI: cli, Linger: linger, Log: log, Release: filepath.Join(dir, "release")})
	require.NoError(t, err)
	return path, lingerEnv + "=" + string(spec), log
}

// swapHost is what answeredDuringSwap needs of a bridge under test: the
// Linux harness (rpcProc) and the Windows one (winBridge) both have it.
type swapHost struct {
	send   func(v map[string]any)
	next   func(timeout time.Duration) gjson.Result
	prompt func(msg string) []gjson.Result // a prompt's frames through agent_end
}

// swapLinger is the longest the lingering CLI of the swap tests takes to
// exit: the test releases it once it has seen what it checks while the
// old process lingers, so that a slow machine cannot let it exit first.
const swapLinger = time.Minute

// answeredDuringSwap checks, on a bridge whose CLI lingers (lingeringCLI,
// logging to log), that commands are answered while the next prompt's
// turn waits for the previous CLI process to exit: after a first prompt,
// set_model (the stream transport replaces its process: the old one exits
// first; a per-turn transport's next process waits for the last one to
// exit, which has written its transcript then), then a prompt and, right
// behind it, set_thinking_level, get_state, get_messages,
// get_session_stats and abort. Each must be answered before the old
// process has exited, and the queries before the new turn's first event
// (an assistant message); the abort after the run's agent_end, as pi.
// Then a prompt runs as usual.
func answeredDuringSwap(t *testing.T, h swapHost, log string) {
	first := h.prompt("first")
	assert.Equal(t, "agent_end", first[len(first)-1].Get("type").String())
	exits := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "exits ")
	}
	before := exits()

	h.send(map[string]any{"type": "set_model", "id": "model", "provider": "anthropic", "modelId": "sonnet"})
	for f := h.next(30 * time.Second); f.Get("id").String() != "model"; f = h.next(30 * time.Second) {
	}
	h.send(map[string]any{"type": "prompt", "id": "prompt", "message": "second"})
	sent := time.Now()
	queries := []string{"set_thinking_level", "get_state", "get_messages", "get_session_stats"}
	for _, q := range queries {
		h.send(map[string]any{"type": q, "id": q, "level": "high"}) // level: set_thinking_level's; the others ignore it
	}
	h.send(map[string]any{"type": "abort", "id": "abort"})

	answered := map[string]time.Duration{}
	turnBegun, agentEnd := false, false
	for len(answered) < len(queries)+1 {
		f := h.next(60 * time.Second)
		switch id := f.Get("id").String(); {
		case f.Get("type").String() == "response" && (slices.Contains(queries, id) || id == "abort"):
			answered[id] = time.Since(sent)
			assert.True(t, f.Get("success").Bool(), f.Raw)
			assert.Equal(t, before, exits(), "%s answered after the old CLI process exited", id)
			if id == "abort" {
				assert.True(t, agentEnd, "abort answered before the run's agent_end")
			} else {
				assert.False(t, turnBegun, "%s answered after the new turn began", id)
			}
		case f.Get("type").String() == "agent_end":
			agentEnd = true
		case f.Get("type").String() == "message_start" && f.Get("message.role").String() == "assistant":
			turnBegun = true
		}
	}
	t.Logf("answered during the swap (after the prompt was sent; the old CLI lingers until released): %v", answered)
	releaseLingering(t, log)

	// The run was aborted before its turn began; the bridge goes on.
	frames := h.prompt("third [[say:still here]]")
	var reply string
	for _, f := range frames {
		if f.Get("type").String() == "message_end" && f.Get("message.role").String() == "assistant" {
			reply = ""
			for _, c := range f.Get("message.content").Array() {
				reply += c.Get("text").String()
			}
			assert.Equal(t, "stop", f.Get("message.stopReason").String(), f.Raw)
		}
	}
	assert.Equal(t, "still here", reply)
}
