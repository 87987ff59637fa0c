//go:build linux

package main

// The benchmarks of issue 36 (idle sessions: --release-idle), each a
// scripts/bench row: what a session costs a host in memory, busy, idle
// and released (BenchmarkIdleMemory, M1–M3), and what its first prompt
// after a release costs in time (BenchmarkRelease, M4, M5), beside the raw
// CLI's own first turn in a warm process (also F1's limit).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// treePids is pid and every process under it (children of any of their
// threads, recursively).
func treePids(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, file := range files {
			data, _ := os.ReadFile(file)
			for _, f := range strings.Fields(string(data)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// sessionPSS is a session's memory as a host sees it, in MiB: the PSS of
// the bridge and of every process under it (its watchdog, the CLI and
// what the CLI started).
func sessionPSS(pid int) float64 {
	var kib int64
	for _, p := range treePids(pid) {
		kib += procPSS(p)
	}
	return float64(kib) / 1024
}

// hasCLI reports whether a bridge runs a CLI process.
func hasCLI(pid int) bool {
	for _, p := range treePids(pid)[1:] {
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if bytes.Contains(args, []byte("stream-json")) {
			return true
		}
	}
	return false
}

// rawCLI is the CLI run as the stream transport runs it, driven directly:
// started, initialized, then given user lines.
type rawCLI struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startRawCLI starts the CLI and waits for its answer to initialize.
func startRawCLI(b *testing.B, cli, dir string, env []string) *rawCLI {
	b.Helper()
	cfg := claudecli.Config{PermissionMode: "default"}
	cmd := exec.Command(cli, cfg.TurnArgs(claudecli.Session{})...)
	cmd.Env, cmd.Dir = env, dir
	stdin, stdout := pipes(b, cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &rawCLI{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	_, _ = io.WriteString(stdin, `{"type":"control_request","request_id":"init","request":{"subtype":"initialize","hooks":null}}`+"\n")
	r.until(b, `"type":"control_response"`)
	return r
}

// until reads lines up to one containing marker.
func (r *rawCLI) until(b *testing.B, marker string) {
	b.Helper()
	for {
		line, err := r.out.ReadString('\n')
		if strings.Contains(line, marker) {
			return
		}
		if err != nil {
			b.Fatalf("the raw CLI ended before a %s line: %v", marker, err)
		}
	}
}

// turn times one user line → its result line.
func (r *rawCLI) turn(b *testing.B, msg string) time.Duration {
	start := time.Now()
	_, _ = r.stdin.Write(claudecli.UserLine(msg, nil))
	r.until(b, `"type":"result"`)
	return time.Since(start)
}

func (r *rawCLI) close() {
	_ = r.stdin.Close()
	_, _ = io.Copy(io.Discard, r.out)
	_ = r.cmd.Wait()
}

// rawWarmFirst times the raw CLI's first turn in a process started and
// initialized wait before it (the limit of a bridge's first prompt: F1).
func rawWarmFirst(b *testing.B, cli, dir string, env []string, wait time.Duration) time.Duration {
	r := startRawCLI(b, cli, dir, env)
	defer r.close()
	time.Sleep(wait)
	return r.turn(b, benchPrompt)
}

// BenchmarkRelease (M4, M5): the first prompt after --release-idle ended
// a session's CLI process. Each round, alternating the order, it times
// prompt → agent_end on a released bridge (--release-idle 1s, one turn
// run before, then left until its CLI is gone): once with get_state (the
// return signal) sent 0.5 s before the prompt (signal-ms) and once without
// (nosignal-ms); beside them, the raw CLI's first turn in a process
// started and initialized 0.5 s before (raw-warm-ms: the limit), and a
// pipe bridge's second prompt (pipe-cold-ms: a cold turn that resumes a
// session, as the released bridge's does). It reports each median and
// signal/raw-warm, nosignal/pipe-cold.
//
//	scripts/bench   (or: go test -run '^$' -bench Release -benchtime 5x ./cmd/claude-rpc)
func BenchmarkRelease(b *testing.B) {
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir, home := claudetest.CLI(b), b.TempDir(), b.TempDir()
	env := srv.CLIEnv(home)
	// The home's first CLI run sets it up: not measured.
	warmup := startGoalBridge(b, bin, cli, dir, env, 4096)
	warmup.prompt(b, benchPrompt)
	warmup.close()

	released := func(signal bool) time.Duration {
		// Longer than the signal's 0.5 s before the prompt: the process
		// the signal starts rests again from its start, and with 300 ms a
		// CLI that started in less was released before the prompt came
		// (as it should be), which made the prompt a cold one in some
		// rounds (the full run at 1fd17a3: a median of 360 ms against
		// 80-100 when warm).
		gb := startGoalBridge(b, bin, cli, dir, env, 4096, "--release-idle", "1s")
		defer gb.close()
		gb.prompt(b, benchPrompt)
		for deadline := time.Now().Add(30 * time.Second); hasCLI(gb.cmd.Process.Pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the bridge's CLI was not released")
			}
		}
		if signal {
			gb.send(`{"type":"get_state","id":"back"}`)
		}
		time.Sleep(500 * time.Millisecond)
		return gb.prompt(b, benchPrompt)
	}
	cases := []struct {
		name string
		f    func() time.Duration
	}{
		{"signal", func() time.Duration { return released(true) }},
		{"nosignal", func() time.Duration { return released(false) }},
		{"raw-warm", func() time.Duration { return rawWarmFirst(b, cli, dir, env, 500*time.Millisecond) }},
		{"pipe-cold", func() time.Duration {
			gb := startGoalBridge(b, bin, cli, dir, env, 4096, "--transport", "pipe")
			defer gb.close()
			gb.prompt(b, benchPrompt)
			return gb.prompt(b, benchPrompt)
		}},
	}
	samples := map[string][]time.Duration{}
	round := 0
	for b.Loop() {
		for i := range alternated(len(cases), round) {
			samples[cases[i].name] = append(samples[cases[i].name], cases[i].f())
		}
		round++
	}
	med := reportMedians(b, samples)
	b.ReportMetric(med["signal"]/med["raw-warm"], "signal/raw-warm")
	b.ReportMetric(med["nosignal"]/med["pipe-cold"], "nosignal/pipe-cold")
}

// BenchmarkIdleMemory (M1–M3): what sessions cost a host in memory, as it
// sees it: the PSS of each session's processes summed (the bridge, its
// watchdog, the CLI and the CLI's children), per session, for 1, 10 and 50
// sessions (1 and 2 with -short) on the stream transport with
// --release-idle 5s, read in three states:
//
//   - busy: while every session streams a reply ([[slow]], read once each
//     has shown a delta);
//   - warm: idle, a second after the turns ended (the CLI kept);
//   - released: idle, once every session's CLI was released, a second
//     later; also the bridge's own PSS (bridge-MiB) and its watchdog's
//     (watchdog-MiB) then.
//
// It stops adding sessions while MemAvailable is below sessionsReserve and
// reports how many it reached (nN-reached).
//
//	scripts/bench   (or: go test -run '^$' -bench IdleMemory -benchtime 1x ./cmd/claude-rpc)
func BenchmarkIdleMemory(b *testing.B) {
	ns := []int{1, 10, 50}
	if testing.Short() {
		ns = []int{1, 2}
	}
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir := claudetest.CLI(b), b.TempDir()
	env := srv.CLIEnv(b.TempDir())
	for b.Loop() {
		var bridges []*goalBridge
		defer func() { closeBridges(bridges) }()
		perSession := func() float64 {
			sum := 0.0
			for _, gb := range bridges {
				sum += sessionPSS(gb.cmd.Process.Pid)
			}
			return sum / float64(len(bridges))
		}
		for _, n := range ns {
			for len(bridges) < n && memAvailable() >= sessionsReserve {
				bridges = append(bridges, startUpBridge(b, bin, cli, dir, env, "--release-idle", "5s"))
			}
			p := fmt.Sprintf("n%d-", n)
			b.ReportMetric(float64(len(bridges)), p+"reached")
			// Busy: every session streams a reply at once.
			for _, gb := range bridges {
				gb.send(`{"type":"prompt","message":"[[slow:100]]"}`)
			}
			for _, gb := range bridges {
				gb.until(b, 2*time.Minute, func(f goalFrame) bool { return f.event() == "text_delta" }, nil)
			}
			b.ReportMetric(perSession(), p+"busy-MiB")
			for _, gb := range bridges {
				gb.until(b, 5*time.Minute, isFrame("agent_end"), nil)
				gb.settle(b)
			}
			time.Sleep(time.Second)
			b.ReportMetric(perSession(), p+"warm-MiB")
			for _, gb := range bridges {
				for deadline := time.Now().Add(2 * time.Minute); hasCLI(gb.cmd.Process.Pid); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatal("a session's CLI was not released")
					}
				}
			}
			time.Sleep(time.Second)
			b.ReportMetric(perSession(), p+"released-MiB")
			var own, watch float64
			for _, gb := range bridges {
				pids := treePids(gb.cmd.Process.Pid)
				own += float64(procPSS(pids[0])) / 1024
				for _, c := range pids[1:] {
					watch += float64(procPSS(c)) / 1024
				}
			}
			k := float64(len(bridges))
			b.ReportMetric(own/k, p+"bridge-MiB")
			b.ReportMetric(watch/k, p+"watchdog-MiB")
		}
	}
}
