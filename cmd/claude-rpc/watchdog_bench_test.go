//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// memRollup is what /proc/PID/smaps_rollup says of a process, in KiB.
type memRollup struct {
	rss, pss, uss int64 // uss: Private_Clean + Private_Dirty
}

// readRollup reads pid's smaps_rollup; ok is false when it cannot be read.
func readRollup(pid int) (m memRollup, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m, false
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, found := strings.Cut(l, ":")
		if !found {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "Rss":
			m.rss = n
		case "Pss":
			m.pss = n
		case "Private_Clean", "Private_Dirty":
			m.uss += n
		}
	}
	return m, true
}

// watchdogOf returns the pid of the bridge pid's watchdog: 0 when it has
// none.
func watchdogOf(pid int) int {
	for _, p := range treePids(pid)[1:] {
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if bytes.Contains(args, []byte("\x00"+claudecli.WatchdogArg+"\x00")) {
			return p
		}
	}
	return 0
}

// BenchmarkWatchdog: what a bridge's watchdog (claudecli.StartWatchdog)
// costs, against the bridge itself. It starts 1, then 10 bridges (2 with
// -short; the release build, stream transport, default flags, the fake API), each up
// once get_available_models is answered, waits until they are idle and
// reports, with the prefix nN-, the means over the bridges from
// /proc/PID/smaps_rollup in MiB: bridge-pss, bridge-uss
// (Private_Clean+Private_Dirty), watchdog-rss, watchdog-pss and
// watchdog-uss. PSS counts the binary's pages shared between processes
// (the watchdog is the bridge's own executable) once over all of them;
// USS is what ending the process would give back.
//
//	scripts/bench   (or: go test -run '^$' -bench Watchdog -benchtime 1x ./cmd/claude-rpc)
func BenchmarkWatchdog(b *testing.B) {
	ns := []int{1, 10}
	if testing.Short() {
		ns = []int{1, 2}
	}
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir := claudetest.CLI(b), b.TempDir()
	env := srv.CLIEnv(b.TempDir())
	for b.Loop() {
		for _, n := range ns {
			bridges := make([]*goalBridge, n)
			var wg sync.WaitGroup
			for i := range bridges {
				gb := startGoalBridge(b, bin, cli, dir, env, 4096)
				bridges[i] = gb
				wg.Add(1)
				go func() {
					defer wg.Done()
					gb.send(`{"type":"get_available_models","id":"up"}`)
					gb.until(b, 2*time.Minute, func(f goalFrame) bool { return f.get("id") == "up" }, nil)
				}()
			}
			wg.Wait()
			time.Sleep(2 * time.Second) // idle: start-up's garbage collected and released
			var bridge, dog memRollup
			for _, gb := range bridges {
				pid := gb.cmd.Process.Pid
				wd := watchdogOf(pid)
				bm, ok1 := readRollup(pid)
				wm, ok2 := readRollup(wd)
				if wd == 0 || !ok1 || !ok2 {
					b.Fatalf("bridge %d: no watchdog or no smaps_rollup (watchdog %d)", pid, wd)
				}
				bridge.pss += bm.pss
				bridge.uss += bm.uss
				dog.rss += wm.rss
				dog.pss += wm.pss
				dog.uss += wm.uss
			}
			for _, gb := range bridges {
				gb.close()
			}
			p, k := fmt.Sprintf("n%d-", n), float64(n)*1024
			b.ReportMetric(float64(bridge.pss)/k, p+"bridge-pss-MiB")
			b.ReportMetric(float64(bridge.uss)/k, p+"bridge-uss-MiB")
			b.ReportMetric(float64(dog.rss)/k, p+"watchdog-rss-MiB")
			b.ReportMetric(float64(dog.pss)/k, p+"watchdog-pss-MiB")
			b.ReportMetric(float64(dog.uss)/k, p+"watchdog-uss-MiB")
		}
	}
}
