//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// benchBridge drives a claude-rpc process for benchmarks.
type benchBridge struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startBenchBridge(b *testing.B, cli, dir string, env []string, transport string) *benchBridge {
	b.Helper()
	cmd := exec.Command(binary(b), "--mode", "rpc", "--claude-path", cli, "--cwd", dir, "--transport", transport)
	cmd.Env = env
	stdin, stdout := pipes(b, cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &benchBridge{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
}

// prompt sends a prompt and returns the time to its agent_end.
func (bb *benchBridge) prompt(b *testing.B, msg string) time.Duration {
	start := time.Now()
	fmt.Fprintf(bb.stdin, "{\"type\":\"prompt\",\"message\":%q}\n", msg)
	for {
		line, err := bb.out.ReadString('\n')
		if err != nil {
			b.Fatalf("bridge stdout: %v", err)
		}
		if strings.HasPrefix(line, `{"type":"agent_end"`) {
			return time.Since(start)
		}
	}
}

func (bb *benchBridge) close() {
	_ = bb.stdin.Close()
	_, _ = io.Copy(io.Discard, bb.out)
	_ = bb.cmd.Wait()
}

// BenchmarkTransports measures, alternated within each round so every
// variant sees the same machine: a raw CLI cold turn; a cold bridge turn on
// each transport (spawn to exit), and on pipe with --ask=false (no relay:
// the raw turn's command line); and a later turn on each transport in a
// bridge that already ran one (prompt to agent_end). It reports medians
// and the ratios the project's goals name.
//
//	scripts/bench   (or: go test -run '^$' -bench Transports -benchtime 10x ./cmd/claude-rpc)
func BenchmarkTransports(b *testing.B) {
	cli, dir, env := benchSetup(b)
	tps := []string{"pipe", "pty", "stream"}

	warm := map[string]*benchBridge{}
	for _, tp := range tps {
		warm[tp] = startBenchBridge(b, cli, dir, env, tp)
		warm[tp].prompt(b, benchPrompt) // the first turn; later ones are measured
	}
	defer func() {
		for _, bb := range warm {
			bb.close()
		}
	}()

	samples := map[string][]time.Duration{}
	raw := func() {
		_, exit := timeRawTurn(b, cli, dir, env)
		samples["cli-cold"] = append(samples["cli-cold"], exit)
	}
	round := 0
	for b.Loop() {
		// The raw CLI goes first in even rounds and last in odd ones, so
		// neither side gains from its place in the round.
		if round%2 == 0 {
			raw()
		}
		for _, tp := range tps {
			_, exit := timeBridgeTurn(b, cli, dir, env, tp)
			samples[tp+"-cold"] = append(samples[tp+"-cold"], exit)
			samples[tp+"-later"] = append(samples[tp+"-later"], warm[tp].prompt(b, benchPrompt))
		}
		// Without asking, pipe starts the CLI with the raw turn's command
		// line: no relay (its MCP servers and hooks).
		_, exit := timeBridgeTurn(b, cli, dir, env, "pipe", "--ask=false")
		samples["pipe-noask-cold"] = append(samples["pipe-noask-cold"], exit)
		if round%2 == 1 {
			raw()
		}
		round++
	}
	med := map[string]float64{}
	for k, v := range samples {
		med[k] = ms(median(v))
		b.ReportMetric(med[k], k+"-ms")
	}
	b.ReportMetric(med["pipe-cold"]/med["cli-cold"], "pipe-cold/cli")
	b.ReportMetric(med["pipe-noask-cold"]/med["cli-cold"], "pipe-noask-cold/cli")
	b.ReportMetric(med["pipe-cold"]/med["pipe-noask-cold"], "pipe-relay/pipe-noask")
	b.ReportMetric(med["pty-cold"]/med["cli-cold"], "pty-cold/cli")
	b.ReportMetric(med["stream-cold"]/med["cli-cold"], "stream-cold/cli")
	b.ReportMetric(med["stream-later"]/med["pipe-later"], "stream-later/pipe-later")
}
