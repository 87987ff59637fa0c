//go:build linux

package bridge

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

var soakTurns = flag.Int("soak", 0, "run TestSoak with this many turns per transport (scripts/soak)")

// footprint is what a long-running bridge must not grow.
type footprint struct {
	goroutines, fds, children int
	rssKiB, heapKiB           int
}

func (f footprint) String() string {
	return fmt.Sprintf("goroutines %d, open fds %d, child processes %d, heap in use %d KiB, RSS %d KiB",
		f.goroutines, f.fds, f.children, f.heapKiB, f.rssKiB)
}

// measure takes the footprint of this process. The fake API's record of
// requests (every body, system prompt included) is the test's, not the
// bridge's: it is dropped first.
func measure(t *testing.T, srv *claudetest.Server) footprint {
	t.Helper()
	srv.Forget()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var f footprint
	f.goroutines, f.fds, f.heapKiB = runtime.NumGoroutine(), len(fds), int(ms.HeapInuse>>10)
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f.rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	procs, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		if stat, err := os.ReadFile("/proc/" + p.Name() + "/stat"); err == nil {
			// pid (comm) state ppid ...: comm may hold spaces, so count from ")".
			if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 1 && fields[1] == self {
				f.children++
			}
		}
	}
	return f
}

// TestSoak runs many turns through one bridge per transport (in this
// process, so goroutines can be counted) and checks that nothing grows:
// goroutines, fds, child processes, memory. go test ./bridge -run TestSoak
// -soak 200 (scripts/soak).
func TestSoak(t *testing.T) {
	if *soakTurns == 0 {
		t.Skip("soak runs on demand: -soak N (scripts/soak)")
	}
	cli := claudetest.CLI(t)
	for _, tp := range claudecli.Transports() {
		t.Run(tp, func(t *testing.T) { soak(t, cli, tp, *soakTurns) })
	}
}

func soak(t *testing.T, cli, tp string, turns int) {
	srv := claudetest.Start(t)
	home := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	opts := Options{CLI: claudecli.Config{Path: cli, Dir: t.TempDir(), Env: srv.CLIEnv(home), PermissionMode: "default"},
		Transport: tp}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, outW, opts); _ = outW.Close() }()
	frames := bufio.NewScanner(outR)
	frames.Buffer(nil, 64<<20)
	turn := func(i int) {
		_, err := fmt.Fprintf(inW, `{"id":"p%d","type":"prompt","message":"turn %d [[say:ok %d]]"}`+"\n", i, i, i)
		require.NoError(t, err)
		for frames.Scan() {
			if gjson.Get(frames.Text(), "type").String() == "agent_end" {
				assert.Equal(t, fmt.Sprintf("ok %d", i), gjson.Get(frames.Text(), "messages.1.content.0.text").String())
				return
			}
		}
		t.Fatalf("turn %d: output ended: %v", i, frames.Err())
	}
	turn(0) // the first turn starts what lives for the session (a stream process)
	start := measure(t, srv)
	began := time.Now()
	for i := 1; i <= turns; i++ {
		turn(i)
	}
	elapsed := time.Since(began)
	end := measure(t, srv)
	t.Logf("%s: %d turns in %v (%v a turn)\n  start: %v\n  end:   %v", tp, turns, elapsed.Round(time.Millisecond),
		(elapsed / time.Duration(turns)).Round(time.Millisecond), start, end)
	assert.LessOrEqual(t, end.goroutines, start.goroutines+2, "goroutines")
	assert.LessOrEqual(t, end.fds, start.fds+2, "open fds")
	assert.LessOrEqual(t, end.children, start.children, "child processes")
	// What a session keeps: its messages (two small ones a turn here).
	assert.Less(t, end.heapKiB, start.heapKiB+8<<10, "heap grows by less than 8 MiB")
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
	for frames.Scan() { // drain what comes after stdin closed
	}
}
