package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// latencyPrompt makes a turn with every kind of CLI line: thinking, text in
// 20-byte deltas, a Bash call and its result, and a second model call.
const latencyPrompt = "[[think:Let me check the date.]][[say:" +
	"I will run a command to see what it prints, then tell you what it said, line by line.]]" +
	"[[chunk:20]][[bash:echo latency]]"

// BenchmarkLineToFrame times, for every frame the bridge writes, the time
// from reading the CLI line that made it to writing the frame to stdout (a
// pipe read by the benchmark), with Options' trace (bridge.SetTrace). It runs the bridge in
// process on the real CLI (stream transport, one prompt per iteration) and
// reports percentiles: with --coalesce 0 over every frame (the bridge's own
// cost), and with the default window over the frames coalescing did not
// hold (message_end, tool events and the like: never delayed).
//
//	scripts/bench   (or: go test -run '^$' -bench LineToFrame -benchtime 20x ./bridge)
func BenchmarkLineToFrame(b *testing.B) {
	for _, tc := range []struct {
		name     string
		coalesce time.Duration
	}{{"coalesce=0", 0}, {"coalesce=default", bridge.DefaultCoalesce}} {
		b.Run(tc.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			frames := 0
			trace := func(read, written time.Time, held bool) {
				if held {
					return // delayed on purpose, by up to the window
				}
				mu.Lock()
				lat = append(lat, written.Sub(read))
				mu.Unlock()
			}
			srv := claudetest.Start(b)
			home, dir := b.TempDir(), b.TempDir()
			for _, kv := range srv.CLIEnv(home) {
				k, v, _ := strings.Cut(kv, "=")
				b.Setenv(k, v)
			}
			inR, inW := io.Pipe()
			outR, outW, err := os.Pipe() // a real pipe, as stdout is
			if err != nil {
				b.Fatal(err)
			}
			opts := bridge.Options{CLI: claudecli.Config{Path: claudetest.CLI(b), Dir: dir, PermissionMode: "default"},
				Transport: claudecli.TransportStream, Coalesce: tc.coalesce}
			bridge.SetTrace(&opts, trace)
			done := make(chan error, 1)
			go func() { done <- bridge.Serve(context.Background(), inR, outW, opts); _ = outW.Close() }()
			r := bufio.NewReaderSize(outR, 1<<20)
			turn := func() {
				fmt.Fprintf(inW, "{\"type\":\"prompt\",\"message\":%q}\n", latencyPrompt)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						b.Fatalf("bridge stdout: %v", err)
					}
					frames++
					if strings.HasPrefix(line, `{"type":"agent_end"`) {
						if !strings.Contains(line, "tool said: latency") {
							b.Fatalf("the turn did not run the tool: %.300s", line)
						}
						return
					}
				}
			}
			turn() // the CLI starts: not measured
			mu.Lock()
			lat, frames = lat[:0], 0
			mu.Unlock()
			for b.Loop() {
				turn()
			}
			_ = inW.Close()
			go func() { _, _ = io.Copy(io.Discard, r) }()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(lat) == 0 {
				b.Fatal("no frame was traced")
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(pct(1), "max-ms")
			b.ReportMetric(float64(len(lat))/float64(b.N), "traced-frames/op")
			b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
		})
	}
}
