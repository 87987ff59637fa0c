//go:build linux

package main

// The benchmarks of issue 20's goals (F1–F6), each a scripts/bench row. They
// drive claude-rpc built as the npm packages build it (releaseBinary) on
// the real CLI and the fake API, and report medians and ratios of runs
// alternated within each round.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

var release struct {
	once sync.Once
	path string
	err  error
}

// releaseBinary builds claude-rpc once per test binary as the npm packages
// build it (scripts/npm-pack: static, CGO_ENABLED=0, -trimpath -s -w).
func releaseBinary(b *testing.B) string {
	b.Helper()
	test := binary(b)
	release.once.Do(func() {
		// Beside the test build, which TestMain removes.
		release.path = filepath.Join(filepath.Dir(test), "claude-rpc-release")
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", release.path, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			release.err = fmt.Errorf("building claude-rpc as released: %v\n%s", err, out)
		}
	})
	if release.err != nil {
		b.Fatal(release.err)
	}
	return release.path
}

// goalFrame is one line claude-rpc wrote: its start (up to the bridge's
// head limit), its whole length and when it was read.
type goalFrame struct {
	head []byte
	n    int
	at   time.Time
}

func (f goalFrame) get(path string) string { return gjson.GetBytes(f.head, path).String() }

// typ is the frame's type; "response:<command>" for a response.
func (f goalFrame) typ() string {
	t := f.get("type")
	if t == "response" {
		return "response:" + f.get("command")
	}
	return t
}

// event is a message_update's assistantMessageEvent type, when it is in
// the head.
func (f goalFrame) event() string { return f.get("assistantMessageEvent.type") }

// goalBridge is a claude-rpc process whose frames a goroutine reads, as they
// come, with the time each was read.
type goalBridge struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	frames chan goalFrame
	stderr *lockedBuffer
	mu     sync.Mutex // one writer of stdin at a time
}

// startGoalBridge starts bin --mode rpc with args; each frame's head is cut
// at headMax bytes.
func startGoalBridge(b *testing.B, bin, cli, dir string, env []string, headMax int, args ...string) *goalBridge {
	b.Helper()
	cmd := exec.Command(bin, append([]string{"--mode", "rpc", "--claude-path", cli, "--cwd", dir}, args...)...)
	cmd.Env, cmd.Dir = env, dir
	stdin, stdout := pipes(b, cmd)
	gb := &goalBridge{cmd: cmd, stdin: stdin, frames: make(chan goalFrame, 1<<16), stderr: &lockedBuffer{}}
	cmd.Stderr = gb.stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(gb.frames)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadSlice('\n')
			f := goalFrame{head: bytes.Clone(line[:min(len(line), headMax)]), n: len(line)}
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				if len(f.head) < headMax {
					f.head = append(f.head, line[:min(len(line), headMax-len(f.head))]...)
				}
				f.n += len(line)
			}
			f.at = time.Now()
			if f.n > 0 {
				gb.frames <- f
			}
			if err != nil {
				return
			}
		}
	}()
	return gb
}

// send writes one command line and returns when it was written.
func (gb *goalBridge) send(format string, args ...any) time.Time {
	gb.mu.Lock()
	defer gb.mu.Unlock()
	t := time.Now()
	_, _ = fmt.Fprintf(gb.stdin, format+"\n", args...)
	return t
}

// until reads frames until one satisfies stop and returns it; each frame
// read, that one included, goes to each first when each is not nil.
func (gb *goalBridge) until(b *testing.B, timeout time.Duration, stop func(goalFrame) bool, each func(goalFrame)) goalFrame {
	b.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-gb.frames:
			if !ok {
				b.Fatalf("claude-rpc exited; stderr: %s", tail(gb.stderr.String(), 2000))
			}
			if each != nil {
				each(f)
			}
			if stop(f) {
				return f
			}
		case <-deadline:
			b.Fatalf("no awaited frame within %s; stderr: %s", timeout, tail(gb.stderr.String(), 2000))
		}
	}
}

// prompt sends a prompt and returns the time from writing it to reading its
// agent_end.
func (gb *goalBridge) prompt(b *testing.B, msg string) time.Duration {
	start := gb.send(`{"type":"prompt","message":%q}`, msg)
	end := gb.until(b, 2*time.Minute, isFrame("agent_end"), nil)
	gb.settle(b)
	return end.at.Sub(start)
}

// settle reads up to the end of the run's frames (session_settled).
func (gb *goalBridge) settle(b *testing.B) {
	gb.until(b, time.Minute, isFrame("session_settled"), nil)
}

func isFrame(typ string) func(goalFrame) bool {
	return func(f goalFrame) bool { return f.typ() == typ }
}

// close closes stdin and waits for the process to exit (killing it after
// 20 s).
func (gb *goalBridge) close() {
	_ = gb.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range gb.frames {
		}
		_ = gb.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = gb.cmd.Process.Kill()
		<-done
	}
}

// startUpBridge starts a bridge and returns once its CLI is up: its
// get_available_models, answered by that CLI, came.
func startUpBridge(b *testing.B, bin, cli, dir string, env []string, args ...string) *goalBridge {
	gb := startGoalBridge(b, bin, cli, dir, env, 4096, args...)
	gb.send(`{"type":"get_available_models","id":"up"}`)
	gb.until(b, 2*time.Minute, func(f goalFrame) bool { return f.get("id") == "up" }, nil)
	return gb
}

// closeBridges closes bridges, all at once.
func closeBridges(bridges []*goalBridge) {
	var wg sync.WaitGroup
	for _, gb := range bridges {
		wg.Add(1)
		go func() { defer wg.Done(); gb.close() }()
	}
	wg.Wait()
}

// reportMedians reports each sample set's median in ms (its name-ms) and
// returns them.
func reportMedians(b *testing.B, samples map[string][]time.Duration) map[string]float64 {
	med := map[string]float64{}
	for k, v := range samples {
		med[k] = ms(median(v))
		b.ReportMetric(med[k], k+"-ms")
	}
	return med
}

// procStatus returns a field of /proc/pid/status in KiB (VmRSS, VmHWM).
func procStatus(pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// procPSS returns a process's proportional set size in KiB: its private
// pages and its share of the pages it shares (the binary's, with the
// other bridges).
func procPSS(pid int) int64 {
	m, _ := readRollup(pid)
	return m.pss
}

// procCPU returns the CPU time (user and system) a process has used.
func procCPU(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the whole line, in clock ticks (100 a
	// second on Linux).
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	k, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// childPids returns the pids of a process's children (of any of its
// threads: Go starts a process from whichever thread runs), the bridge's
// watchdog aside: what it costs is not the CLI's.
func childPids(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(data)) {
			args, _ := os.ReadFile("/proc/" + f + "/cmdline")
			if bytes.Contains(args, []byte("\x00"+claudecli.WatchdogArg+"\x00")) {
				continue
			}
			if n, err := strconv.Atoi(f); err == nil && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// memAvailable returns the system's MemAvailable in KiB.
func memAvailable() int64 {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "MemAvailable:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// transcriptCount counts the session files under home.
func transcriptCount(home string) int {
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	return len(files)
}

// BenchmarkFirstPrompt (F1, F2): a host's first prompt against its later
// ones. Each round starts two bridges on the stream transport at once, one
// with the default flags (the CLI pre-warmed) and one with
// --prewarm=false, waits 3 s (a host that started its bridge and then
// prompted; 1.5 s with -short), then times, on each (which one goes first
// alternates), the first prompt and two later ones (one with -short),
// prompt → agent_end,
// after a bridge ran the home's first turn (not with -short). It reports the
// medians, first ÷ later for each, and what the warm-up did before the
// first prompt: requests to the fake API and transcripts written (F2: none).
// Beside the bridges each round starts the raw CLI as the stream transport
// does and initializes it, and times its first turn after the same wait,
// first or last as the bridges alternate (raw-warm-ms): what a pre-warmed
// first prompt cannot beat, the CLI's own first query in its process; F1
// is prewarm-first/raw-warm.
//
//	scripts/bench   (or: go test -run '^$' -bench FirstPrompt -benchtime 10x ./cmd/claude-rpc)
func BenchmarkFirstPrompt(b *testing.B) {
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir, home := claudetest.CLI(b), b.TempDir(), b.TempDir()
	env := srv.CLIEnv(home)
	later, wait := 2, 3*time.Second
	if testing.Short() {
		later, wait = 1, 1500*time.Millisecond // a figure, not the goal
	} else {
		// The home's first CLI run sets it up: not measured.
		warmup := startGoalBridge(b, bin, cli, dir, env, 4096)
		warmup.prompt(b, benchPrompt)
		warmup.close()
	}

	variants := []struct{ name, flag string }{{"prewarm", "--prewarm=true"}, {"cold", "--prewarm=false"}}
	samples := map[string][]time.Duration{}
	var requests, transcripts int
	round := 0
	for b.Loop() {
		before, files := len(srv.Requests()), transcriptCount(home)
		bridges := make([]*goalBridge, len(variants))
		for i, v := range variants {
			bridges[i] = startGoalBridge(b, bin, cli, dir, env, 4096, v.flag)
		}
		raw := startRawCLI(b, cli, dir, env) // F1's limit: the CLI's own first turn, warm
		time.Sleep(wait)
		requests = max(requests, len(srv.Requests())-before)
		transcripts = max(transcripts, transcriptCount(home)-files)
		if round%2 == 0 {
			samples["raw-warm"] = append(samples["raw-warm"], raw.turn(b, benchPrompt))
		}
		for i := range alternated(len(variants), round) {
			name := variants[i].name
			samples[name+"-first"] = append(samples[name+"-first"], bridges[i].prompt(b, benchPrompt))
			for range later {
				samples[name+"-later"] = append(samples[name+"-later"], bridges[i].prompt(b, benchPrompt))
			}
		}
		if round%2 == 1 {
			samples["raw-warm"] = append(samples["raw-warm"], raw.turn(b, benchPrompt))
		}
		raw.close()
		for _, gb := range bridges {
			gb.close()
		}
		round++
	}
	med := reportMedians(b, samples)
	for _, v := range variants {
		b.ReportMetric(med[v.name+"-first"]/med[v.name+"-later"], v.name+"-first/later")
	}
	b.ReportMetric(med["prewarm-first"]/med["raw-warm"], "prewarm-first/raw-warm")
	b.ReportMetric(float64(requests), "warm-api-requests")
	b.ReportMetric(float64(transcripts), "warm-transcripts")
}

// BenchmarkWire (F3): what a reply costs on stdout. A 200,000-character
// reply (50,000 with -short) in 10-character deltas goes through one bridge with
// --message-updates delta and one with full (the default), default
// coalescing, alternated; from the prompt to its agent_end, it reports per
// byte of the reply: all stdout bytes; the message_update frames' bytes;
// and those of its delta frames alone (text_delta: the frames that stream
// the reply, whose count coalescing sets), with their count. pi's own frame
// set carries the whole reply four more times, whatever the mode: in the
// text_end message_update (its content) and in message_end, turn_end and
// agent_end. So all of stdout is at least ~5 bytes per reply byte and the
// message_update frames at least ~2; the delta frames are what the mode and
// coalescing change (their floor is 1).
//
//	scripts/bench   (or: go test -run '^$' -bench Wire -benchtime 3x ./cmd/claude-rpc)
func BenchmarkWire(b *testing.B) {
	size := 200_000
	if testing.Short() {
		size = 50_000
	}
	bin := releaseBinary(b)
	cli, dir, env := benchSetup(b)
	modes := []string{"delta", "full"}
	bridges := map[string]*goalBridge{}
	for _, m := range modes {
		bridges[m] = startGoalBridge(b, bin, cli, dir, env, 512, "--message-updates", m)
		if !testing.Short() {
			bridges[m].prompt(b, benchPrompt) // the CLI's first turn, not measured
		}
		defer bridges[m].close()
	}
	samples := map[string][]float64{}
	round := 0
	for b.Loop() {
		for i := range alternated(len(modes), round) {
			m := modes[i]
			var all, updates, deltas, frames int
			bridges[m].send(`{"type":"prompt","message":"[[huge:%d]][[chunk:10]]"}`, size)
			bridges[m].until(b, 2*time.Minute, isFrame("agent_end"), func(f goalFrame) {
				all += f.n
				if f.typ() == "message_update" {
					updates += f.n
					if strings.HasSuffix(f.event(), "_delta") {
						deltas += f.n
						frames++
					}
				}
			})
			bridges[m].settle(b)
			for k, v := range map[string]float64{
				"stdout/reply-byte":  float64(all) / float64(size),
				"updates/reply-byte": float64(updates) / float64(size),
				"deltas/reply-byte":  float64(deltas) / float64(size),
				"delta-frames":       float64(frames),
			} {
				samples[m+"-"+k] = append(samples[m+"-"+k], v)
			}
		}
		round++
	}
	for k, v := range samples {
		b.ReportMetric(median(v), k)
	}
}

// BenchmarkGetStateDuringReply (F4): commands answered while a reply
// streams. On each transport (stream and pipe, default flags, one bridge
// each, alternated), a 2 MB reply in 10-byte deltas (100 KB with -short)
// streams while get_state is sent every 20 ms from the prompt to its
// agent_end; each probe's time is from writing it to reading its response.
// It reports, per transport, the median and the slowest probe of all
// rounds, the 99th percentile, and the stdout bytes per reply byte up to
// agent_end (BenchmarkRelay's figure, with the probes).
//
//	scripts/bench   (or: go test -run '^$' -bench GetStateDuringReply -benchtime 3x ./cmd/claude-rpc)
func BenchmarkGetStateDuringReply(b *testing.B) {
	size := 2_000_000
	if testing.Short() {
		size = 100_000
	}
	bin := releaseBinary(b)
	cli, dir, env := benchSetup(b)
	tps := []string{"stream", "pipe"}
	bridges := map[string]*goalBridge{}
	for _, tp := range tps {
		bridges[tp] = startGoalBridge(b, bin, cli, dir, env, 256, "--transport", tp)
		defer bridges[tp].close()
		// The first get_state of a fresh start waits (at most 2 s) for the
		// CLI to say which model it runs (hapi reads it only there); F4 is
		// about answers during a reply, so that one is not measured.
		bridges[tp].send(`{"type":"get_state","id":"first"}`)
		bridges[tp].until(b, 10*time.Second, func(f goalFrame) bool { return f.typ() == "response:get_state" }, nil)
		if tp == "stream" && !testing.Short() {
			bridges[tp].prompt(b, benchPrompt) // the CLI's first turn, not measured
		}
	}
	probes := map[string][]time.Duration{}
	bytes := map[string][]float64{}
	round := 0
	for b.Loop() {
		for i := range alternated(len(tps), round) {
			tp := tps[i]
			lat, n := probeDuringReply(b, bridges[tp], size)
			probes[tp] = append(probes[tp], lat...)
			bytes[tp] = append(bytes[tp], float64(n)/float64(size))
		}
		round++
	}
	for _, tp := range tps {
		p := probes[tp]
		if len(p) == 0 {
			b.Fatalf("%s: no probe answered", tp)
		}
		slices.Sort(p)
		b.ReportMetric(ms(p[len(p)/2]), tp+"-p50-ms")
		b.ReportMetric(ms(p[min(len(p)-1, len(p)*99/100)]), tp+"-p99-ms")
		b.ReportMetric(ms(p[len(p)-1]), tp+"-max-ms")
		b.ReportMetric(float64(len(p))/float64(b.N), tp+"-probes/reply")
		b.ReportMetric(median(bytes[tp]), tp+"-stdout/reply-byte")
	}
}

// probeDuringReply runs one reply of size bytes in 10-byte deltas, sending
// get_state every 20 ms until its agent_end, and returns each probe's time
// to its response and the bytes written up to agent_end.
func probeDuringReply(b *testing.B, gb *goalBridge, size int) ([]time.Duration, int) {
	var mu sync.Mutex
	sent := map[string]time.Time{}
	stop := make(chan struct{})
	ticking := make(chan struct{})
	gb.send(`{"type":"prompt","message":"[[huge:%d]][[chunk:10]]"}`, size)
	go func() {
		defer close(ticking)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("probe-%d", k)
			mu.Lock()
			sent[id] = gb.send(`{"type":"get_state","id":%q}`, id)
			mu.Unlock()
		}
	}()
	var lat []time.Duration
	written := 0
	answer := func(f goalFrame) {
		written += f.n
		if f.typ() != "response:get_state" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if t, ok := sent[f.get("id")]; ok {
			lat = append(lat, f.at.Sub(t))
			delete(sent, f.get("id"))
		}
	}
	gb.until(b, 3*time.Minute, isFrame("agent_end"), answer)
	n := written
	close(stop)
	<-ticking
	// The probes in flight at agent_end are answered too.
	settled := false
	gb.until(b, time.Minute, func(f goalFrame) bool {
		settled = settled || f.typ() == "session_settled"
		mu.Lock()
		defer mu.Unlock()
		return settled && len(sent) == 0
	}, answer)
	return lat, n
}

// abortCases are the states BenchmarkAbort aborts a run in: the prompt,
// and the frame after which the run is in that state.
var abortCases = []struct{ name, prompt string }{
	// Text deltas every 50 ms.
	{"text", "[[slow:400]]"},
	// A Bash call running (the CLI refuses one long sleep, not short ones).
	{"tool", "[[bash:" + strings.Repeat("sleep 1.5; ", 10) + "echo never]]"},
	// Thinking deltas every 50 ms.
	{"thinking", "[[think:" + strings.Repeat("hmm ", 500) + "]][[slow:400]]"},
}

// abortedIn tells whether f shows the run in the state of case name.
func abortedIn(name string, f goalFrame) bool {
	switch name {
	case "text":
		return f.event() == "text_delta"
	case "thinking":
		return f.event() == "thinking_delta"
	default:
		return f.typ() == "tool_execution_start"
	}
}

// BenchmarkAbort (F5): abort → agent_end. On each transport (one bridge
// each, default flags), a run is aborted during text, during a Bash call
// and during thinking: 100 ms after the first frame that shows that state
// (a text_delta, tool_execution_start, a thinking_delta), abort is sent;
// the time is from writing it to reading agent_end. Each round runs every
// transport and case once (the transports' order alternates); it reports
// the median and the slowest of the rounds for each. With -short, the
// transports run at once, for a figure each.
//
//	scripts/bench   (or: go test -run '^$' -bench Abort -benchtime 10x ./cmd/claude-rpc)
func BenchmarkAbort(b *testing.B) {
	bin := releaseBinary(b)
	cli, dir, env := benchSetup(b)
	tps := []string{"stream", "pipe", "pty"}
	bridges := map[string]*goalBridge{}
	for _, tp := range tps {
		bridges[tp] = startGoalBridge(b, bin, cli, dir, env, 16<<10, "--transport", tp)
		if tp == "stream" { // the home's first CLI run sets it up
			bridges[tp].prompt(b, benchPrompt)
		}
		defer bridges[tp].close()
	}
	var mu sync.Mutex
	samples := map[string][]time.Duration{}
	run := func(tp string) {
		gb := bridges[tp]
		for _, c := range abortCases {
			gb.send(`{"type":"prompt","message":%q}`, c.prompt)
			gb.until(b, time.Minute, func(f goalFrame) bool { return abortedIn(c.name, f) }, nil)
			time.Sleep(100 * time.Millisecond)
			start := gb.send(`{"type":"abort","id":"abort"}`)
			end := gb.until(b, time.Minute, isFrame("agent_end"), nil)
			mu.Lock()
			samples[tp+"-"+c.name] = append(samples[tp+"-"+c.name], end.at.Sub(start))
			mu.Unlock()
			gb.until(b, time.Minute, func(f goalFrame) bool { return f.get("id") == "abort" }, nil)
		}
	}
	round := 0
	for b.Loop() {
		if testing.Short() {
			// Figures, not goals: the transports at once (a pipe or pty
			// run starts its CLI, a second or two on a busy machine).
			var wg sync.WaitGroup
			for _, tp := range tps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run(tp)
				}()
			}
			wg.Wait()
			continue
		}
		for i := range alternated(len(tps), round) {
			run(tps[i])
		}
		round++
	}
	for k, v := range samples {
		b.ReportMetric(ms(median(v)), k+"-p50-ms")
		b.ReportMetric(ms(slices.Max(v)), k+"-max-ms")
	}
}

// sessionsReserve is the memory BenchmarkSessions leaves the machine: it
// starts no further bridge (each with its CLI, ~200 MB and growing with
// its turns) while MemAvailable is below it.
const sessionsReserve = 2 << 20 // KiB

// sessionsTurn is the turn each bridge of BenchmarkSessions runs: a 20 KB
// reply in 10-byte deltas (2,000 CLI lines), so the bridges relay.
const sessionsTurn = "[[huge:20000]][[chunk:10]]"

// BenchmarkSessions (F6): many sessions on one machine, as a host running
// N bridges (stream transport, default flags, one HOME and folder). It
// first times one bridge alone, then starts bridges one at a time (each
// pre-warms its CLI; the next starts once get_available_models, answered
// by that CLI, says it is up) up to each N of 10, 25 and 50 (2 with
// -short). It stops adding bridges while MemAvailable is below
// sessionsReserve, and reports how many it reached. At each N, every
// bridge runs two turns at once (one with -short), and it reports, with
// the prefix nN-:
//
//   - idle-MiB: the bridge's own resident memory (VmRSS; the CLI is a
//     process of its own), the largest over the bridges, read while no turn
//     runs: before the turns (idle-before-MiB) and a second after them
//     (idle-after-MiB), the larger of the two; pss-MiB: the mean
//     proportional set size (the binary's pages shared between bridges
//     counted once);
//   - relay-MiB: the largest peak RSS (VmHWM) over the bridges, turns
//     included;
//   - cpu-ms/turn: the bridges' CPU time during the turns per turn;
//     cli-cpu-ms/turn the same for their CLIs;
//   - turn-ms, turn-max-ms: the median and slowest turn, prompt →
//     agent_end, with all N running; failed: turns whose prompt_result is
//     not "completed" or whose assistant message_end misses the reply;
//   - cli-MiB: the mean RSS of a bridge's CLI, idle.
//
// alone-turn-ms and alone-cpu-ms/turn are the same turn with one bridge.
//
//	scripts/bench   (or: go test -run '^$' -bench Sessions -benchtime 1x ./cmd/claude-rpc)
func BenchmarkSessions(b *testing.B) {
	ns, turns := []int{10, 25, 50}, 2
	if testing.Short() {
		ns, turns = []int{2}, 1
	}
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir := claudetest.CLI(b), b.TempDir()
	env := srv.CLIEnv(b.TempDir())
	for b.Loop() {
		var bridges []*goalBridge
		defer func() { closeBridges(bridges) }()
		add := func() bool {
			if memAvailable() < sessionsReserve {
				return false
			}
			bridges = append(bridges, startUpBridge(b, bin, cli, dir, env))
			return true
		}
		// One bridge alone: the home's first turn (not measured; not with
		// -short), then the baseline.
		if !add() {
			b.Fatalf("MemAvailable %d MiB: no room for one bridge", memAvailable()>>10)
		}
		if !testing.Short() {
			bridges[0].prompt(b, sessionsTurn)
		}
		cpu0 := procCPU(bridges[0].cmd.Process.Pid)
		var alone []time.Duration
		for range turns {
			alone = append(alone, bridges[0].prompt(b, sessionsTurn))
		}
		b.ReportMetric(ms(median(alone)), "alone-turn-ms")
		b.ReportMetric(ms(procCPU(bridges[0].cmd.Process.Pid)-cpu0)/float64(turns), "alone-cpu-ms/turn")

		for _, n := range ns {
			for len(bridges) < n && add() {
			}
			p := fmt.Sprintf("n%d-", n)
			b.ReportMetric(float64(len(bridges)), p+"reached")
			if len(bridges) < n {
				b.Logf("N=%d: stopped at %d bridges, MemAvailable %d MiB", n, len(bridges), memAvailable()>>10)
			}
			time.Sleep(time.Second) // the last CLI settles
			idle := func() (rss, pss, cliRSS float64) {
				for _, gb := range bridges {
					pid := gb.cmd.Process.Pid
					rss = max(rss, float64(procStatus(pid, "VmRSS"))/1024)
					pss += float64(procPSS(pid)) / 1024
					for _, c := range childPids(pid) {
						cliRSS += float64(procStatus(c, "VmRSS")) / 1024
					}
				}
				k := float64(len(bridges))
				return rss, pss / k, cliRSS / k
			}
			rssBefore, pss, cliRSS := idle()
			cpu := func() (own, clis time.Duration) {
				for _, gb := range bridges {
					own += procCPU(gb.cmd.Process.Pid)
					for _, c := range childPids(gb.cmd.Process.Pid) {
						clis += procCPU(c)
					}
				}
				return own, clis
			}
			own0, clis0 := cpu()
			var mu sync.Mutex
			var lat []time.Duration
			failed := 0
			var wg sync.WaitGroup
			for _, gb := range bridges {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range turns {
						start := gb.send(`{"type":"prompt","message":%q}`, sessionsTurn)
						reply := 0
						end := gb.until(b, 5*time.Minute, isFrame("agent_end"), func(f goalFrame) {
							if f.typ() == "message_end" && f.get("message.role") == "assistant" {
								reply = f.n
							}
						})
						result := gb.until(b, time.Minute, isFrame("prompt_result"), nil)
						ok := reply > 20000 && result.get("status") == "completed"
						gb.settle(b)
						mu.Lock()
						lat = append(lat, end.at.Sub(start))
						if !ok {
							failed++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			own1, clis1 := cpu()
			time.Sleep(time.Second)
			rssAfter, _, _ := idle()
			relay := 0.0
			for _, gb := range bridges {
				relay = max(relay, float64(procStatus(gb.cmd.Process.Pid, "VmHWM"))/1024)
			}
			done := float64(len(lat))
			b.ReportMetric(max(rssBefore, rssAfter), p+"idle-MiB")
			b.ReportMetric(rssBefore, p+"idle-before-MiB")
			b.ReportMetric(rssAfter, p+"idle-after-MiB")
			b.ReportMetric(pss, p+"pss-MiB")
			b.ReportMetric(cliRSS, p+"cli-MiB")
			b.ReportMetric(relay, p+"relay-MiB")
			b.ReportMetric(ms(own1-own0)/done, p+"cpu-ms/turn")
			b.ReportMetric(ms(clis1-clis0)/done, p+"cli-cpu-ms/turn")
			b.ReportMetric(ms(median(lat)), p+"turn-ms")
			b.ReportMetric(ms(slices.Max(lat)), p+"turn-max-ms")
			b.ReportMetric(float64(failed), p+"failed")
		}
	}
}
