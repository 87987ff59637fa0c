//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// median returns the median of samples (the upper one of an even count).
func median[T int64 | float64 | time.Duration](samples []T) T {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// alternated yields 0 … n-1 in round's order: forward in even rounds,
// backward in odd ones, so that no side of a side-by-side benchmark keeps
// one place in every round.
func alternated(n, round int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if round%2 == 1 {
				i = n - 1 - i
			}
			if !yield(i) {
				return
			}
		}
	}
}

// BenchmarkSDK compares a bridge turn with one query() turn of the
// TypeScript Agent SDK (npm @anthropic-ai/claude-agent-sdk, pinned by
// scripts/install-sdk) on the same CLI binary (its
// pathToClaudeCodeExecutable), prompt and fake API, alternated within each
// round. Measured, medians of b.N rounds:
//
//   - bridge-cold: spawn claude-rpc (stream, pipe) → agent_end of its first
//     prompt: a host's first turn, the CLI started cold.
//
//   - sdk-cold: spawn node running query() (scripts/bench-sdk.mjs) → the
//     result message: the same for a host on the SDK.
//
//   - sdk-query: query() in a node process that has imported the SDK
//     already → the result message (each query() starts the CLI).
//
//   - bridge-later: a later prompt in a running bridge (stream) → agent_end.
//
//     scripts/bench   (or: go test -run '^$' -bench SDK -benchtime 10x ./cmd/claude-rpc)
func BenchmarkSDK(b *testing.B) {
	cli, dir, env := benchSetup(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatalf("node is needed to run the Agent SDK: %v", err)
	}
	sdkDir := os.Getenv("CLAUDE_AGENT_SDK_DIR")
	if sdkDir == "" {
		out, err := exec.Command("bash", "../../scripts/install-sdk").Output()
		if err != nil {
			b.Fatalf("scripts/install-sdk: %v", err)
		}
		sdkDir = strings.TrimSpace(string(out))
	}
	script, err := filepath.Abs("../../scripts/bench-sdk.mjs")
	if err != nil {
		b.Fatal(err)
	}
	sdkEnv := append(slices.Clone(env), "CLAUDE_AGENT_SDK_DIR="+sdkDir, "CLAUDE_RPC_TEST_CLI="+cli, "CLAUDE_RPC_BENCH_CWD="+dir)

	// One node process kept up, as a host on the SDK runs.
	warmSDK := exec.Command(node, script)
	warmSDK.Env, warmSDK.Dir = sdkEnv, dir
	sdkIn, sdkOut := pipes(b, warmSDK)
	var sdkErr bytes.Buffer
	warmSDK.Stderr = &sdkErr
	if err := warmSDK.Start(); err != nil {
		b.Fatal(err)
	}
	sdkLines := bufio.NewReader(sdkOut)
	sdkTurn := func() time.Duration {
		start := time.Now()
		fmt.Fprintln(sdkIn, benchPrompt)
		line, err := sdkLines.ReadString('\n')
		if err != nil || gjson.Get(line, "result").String() != "ok" {
			b.Fatalf("bench-sdk: %q %v; stderr: %s", line, err, sdkErr.String())
		}
		return time.Since(start)
	}
	sdkTurn() // the import and the first query() warm node up
	defer func() {
		_ = sdkIn.Close()
		_ = warmSDK.Wait()
	}()

	warm := startBenchBridge(b, cli, dir, env, "stream")
	warm.prompt(b, benchPrompt)
	defer warm.close()

	samples := map[string][]time.Duration{}
	steps := []func(){
		func() {
			f, _ := timeBridgeTurn(b, cli, dir, env, "stream")
			samples["bridge-stream-cold"] = append(samples["bridge-stream-cold"], f)
		},
		func() {
			f, _ := timeProcess(b, exec.Command(node, script), sdkEnv, dir, benchPrompt+"\n", `"result":"ok"`)
			samples["sdk-cold"] = append(samples["sdk-cold"], f)
		},
		func() {
			f, _ := timeBridgeTurn(b, cli, dir, env, "pipe")
			samples["bridge-pipe-cold"] = append(samples["bridge-pipe-cold"], f)
		},
		func() { samples["sdk-query"] = append(samples["sdk-query"], sdkTurn()) },
		func() { samples["bridge-later"] = append(samples["bridge-later"], warm.prompt(b, benchPrompt)) },
	}
	round := 0
	for b.Loop() {
		for i := range alternated(len(steps), round) {
			steps[i]()
		}
		round++
	}
	med := map[string]float64{}
	for k, v := range samples {
		med[k] = ms(median(v))
		b.ReportMetric(med[k], k+"-ms")
	}
	best := min(med["bridge-stream-cold"], med["bridge-pipe-cold"])
	b.ReportMetric(best/med["sdk-cold"], "bridge-cold/sdk-cold")
	b.ReportMetric(best/med["sdk-query"], "bridge-cold/sdk-query")
	b.ReportMetric(med["bridge-later"]/med["sdk-query"], "bridge-later/sdk-query")
}

// BenchmarkRelay relays a 2 MB reply streamed in 10-byte deltas (200,000
// CLI lines; 200 KB with -short) through claude-rpc processes with their
// default flags, built two ways, alternated: with a plain `go build` (the
// goal's build: on a machine with a C compiler, cgo, so libc is mapped
// too) and as the npm packages build it (release-, scripts/npm-pack:
// static, CGO_ENABLED=0, -trimpath -s -w). It reports medians of: the
// bridge's own peak RSS (VmHWM, read from /proc before it exits; the CLI is
// another process) and, of that, the file pages mapped at the reply's end
// (RssFile: the binary's and libraries' code and data, shared with every
// other process running them), the CPU it used (user and system), the
// bytes it wrote per byte of the reply, and the time to agent_end. Set
// CLAUDE_RPC_BENCH_OTHER to other plain builds (e.g. main's) to run them
// too, alternated (otherBuilds).
//
//	scripts/bench   (or: go test -run '^$' -bench Relay -benchtime 3x ./cmd/claude-rpc)
func BenchmarkRelay(b *testing.B) {
	size := 2_000_000
	if testing.Short() {
		size = 200_000
	}
	cli, dir, env := benchSetup(b)
	builds := append([]benchBuild{{"", plainBinary(b)}, {"release-", releaseBinary(b)}}, otherBuilds()...)
	hwm, file, cpu := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var perByte []float64
	var wall []time.Duration
	relay := func(bd benchBuild) {
		prefix, bin := bd.prefix, bd.bin
		cmd := exec.Command(bin, "--mode", "rpc", "--claude-path", cli, "--cwd", dir)
		cmd.Env = env
		stdin, stdout := pipes(b, cmd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(stdin, "{\"type\":\"prompt\",\"message\":\"[[huge:%d]][[chunk:10]]\"}\n", size)
		n, err := readUntil(bufio.NewReaderSize(stdout, 64<<10), `{"type":"agent_end"`)
		if err != nil {
			b.Fatalf("claude-rpc: %v; stderr: %s", err, stderr.String())
		}
		kb, err := vmHWM(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		hwm[prefix] = append(hwm[prefix], float64(kb)/1024)
		file[prefix] = append(file[prefix], float64(procStatus(cmd.Process.Pid, "RssFile"))/1024)
		cpu[prefix] = append(cpu[prefix], ms(procCPU(cmd.Process.Pid)))
		if prefix == "" {
			wall = append(wall, time.Since(start))
			perByte = append(perByte, float64(n)/float64(size))
		}
		finish(cmd, stdin, stdout)
	}
	eachAlternated(b, builds, relay)
	for _, bd := range builds {
		b.ReportMetric(median(hwm[bd.prefix]), bd.prefix+"vmhwm-MiB")
		b.ReportMetric(slices.Max(hwm[bd.prefix]), bd.prefix+"max-vmhwm-MiB")
		b.ReportMetric(median(file[bd.prefix]), bd.prefix+"file-MiB")
		b.ReportMetric(median(cpu[bd.prefix]), bd.prefix+"cpu-ms")
	}
	b.ReportMetric(median(perByte), "bytes/reply-byte")
	b.ReportMetric(ms(median(wall)), "reply-ms")
}

// benchBuild is a claude-rpc binary a side-by-side benchmark runs; its
// figures' names begin with prefix.
type benchBuild struct{ prefix, bin string }

// plainBinary builds claude-rpc with a plain `go build`.
func plainBinary(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "claude-rpc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// otherBuilds are the binaries CLAUDE_RPC_BENCH_OTHER lists (separated by
// colons), to run beside this tree's: the first's figures prefixed
// other-, the next ones' other2-, other3- ….
func otherBuilds() []benchBuild {
	var builds []benchBuild
	for i, bin := range filepath.SplitList(os.Getenv("CLAUDE_RPC_BENCH_OTHER")) {
		prefix := "other-"
		if i > 0 {
			prefix = fmt.Sprintf("other%d-", i+1)
		}
		builds = append(builds, benchBuild{prefix, bin})
	}
	return builds
}

// eachAlternated runs step with every build in each of b's rounds, in
// the order alternated gives.
func eachAlternated(b *testing.B, builds []benchBuild, step func(benchBuild)) {
	round := 0
	for b.Loop() {
		for i := range alternated(len(builds), round) {
			step(builds[i])
		}
		round++
	}
}

// finish closes a bridge's stdin, reads what it still writes and waits
// for it to exit.
func finish(cmd *exec.Cmd, stdin io.Closer, stdout io.Reader) {
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
}

// readUntil reads lines, of any length, until one starts with prefix, and
// returns the bytes read.
func readUntil(r *bufio.Reader, prefix string) (int64, error) {
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		head := string(line[:min(len(line), len(prefix))])
		for err == bufio.ErrBufferFull {
			n += int64(len(line))
			line, err = r.ReadSlice('\n')
		}
		n += int64(len(line))
		if err != nil {
			return n, err
		}
		if head == prefix {
			return n, nil
		}
	}
}

// vmHWM returns a process's peak resident set size in KiB.
func vmHWM(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// BenchmarkPeakPerSize relays one long reply, or one long tool result, per
// round through a new bridge (a plain `go build`, --message-updates delta)
// and reports, for replies and Bash outputs of 2, 8 and 32 MB (1 MB with
// -short), the bridge's peak RSS (VmHWM) less its RSS idle before the
// prompt, and that growth ÷ the size (issue 44's goal: ≤ 1.3 at 8 and 32
// MB). The reply streams in deltas of 1,000 bytes (the fake API's
// default); the tool's output is one line of x's. Set
// CLAUDE_RPC_BENCH_OTHER to other claude-rpc binaries (e.g. main's) to run
// them too, alternated with this tree's in every round (otherBuilds).
//
//	go test -run '^$' -bench PeakPerSize -benchtime 2x ./cmd/claude-rpc
func BenchmarkPeakPerSize(b *testing.B) {
	sizes := []int{2_000_000, 8_000_000, 32_000_000}
	if testing.Short() {
		sizes = []int{1_000_000}
	}
	cli, dir, env := benchSetup(b)
	builds := append([]benchBuild{{"", plainBinary(b)}}, otherBuilds()...)
	for _, kind := range []string{"reply", "tool"} {
		for _, size := range sizes {
			prompt := fmt.Sprintf("[[huge:%d]]", size)
			if kind == "tool" {
				prompt = fmt.Sprintf("[[bash:head -c %d /dev/zero | tr -c x x]]", size)
			}
			b.Run(fmt.Sprintf("%s-%dMB", kind, size/1_000_000), func(b *testing.B) {
				idle, grow := map[string][]float64{}, map[string][]float64{}
				relay := func(bd benchBuild) {
					prefix, bin := bd.prefix, bd.bin
					cmd := exec.Command(bin, "--mode", "rpc", "--claude-path", cli, "--cwd", dir, "--message-updates", "delta")
					cmd.Env = env
					stdin, stdout := pipes(b, cmd)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					out := bufio.NewReaderSize(stdout, 64<<10)
					fmt.Fprintln(stdin, `{"type":"get_state"}`)
					if _, err := readUntil(out, `{"type":"response"`); err != nil {
						b.Fatalf("claude-rpc: %v; stderr: %s", err, stderr.String())
					}
					time.Sleep(500 * time.Millisecond) // the CLI pre-warmed
					rss := float64(procStatus(cmd.Process.Pid, "VmRSS")) / 1024
					fmt.Fprintf(stdin, "{\"type\":\"prompt\",\"message\":%q}\n", prompt)
					if kind == "tool" { // the bridge asks before Bash runs a pipeline
						if _, err := readUntil(out, `{"type":"extension_ui_request"`); err != nil {
							b.Fatalf("claude-rpc: %v; stderr: %s", err, stderr.String())
						}
						fmt.Fprintln(stdin, `{"type":"extension_ui_response","id":"ui_1","value":"Allow once"}`)
					}
					if _, err := readUntil(out, `{"type":"agent_end"`); err != nil {
						b.Fatalf("claude-rpc: %v; stderr: %s", err, stderr.String())
					}
					kb, err := vmHWM(cmd.Process.Pid)
					if err != nil {
						b.Fatal(err)
					}
					idle[prefix] = append(idle[prefix], rss)
					grow[prefix] = append(grow[prefix], float64(kb)/1024-rss)
					finish(cmd, stdin, stdout)
				}
				eachAlternated(b, builds, relay)
				for _, bd := range builds {
					b.ReportMetric(median(idle[bd.prefix]), bd.prefix+"idle-MiB")
					b.ReportMetric(median(grow[bd.prefix]), bd.prefix+"grow-MiB")
					b.ReportMetric(median(grow[bd.prefix])*(1<<20)/float64(size), bd.prefix+"grow/size")
				}
			})
		}
	}
}
