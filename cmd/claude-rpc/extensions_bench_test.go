//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// BenchmarkExtensions: what pi extensions cost a bridge (issue 41), side by
// side in each round: a bridge without an extension ("none") and one with
// hapi's kind of extension ("ext": testdata/extensions/title.ts, a tool and
// a before_agent_start paragraph) run by pi 1.6.0's runtime on the pinned
// Node; stream transport, the release build, the fake API. Each round
// starts both, one after the other (alternated), sends get_state,
// get_commands and a prompt at once, and
// reports, medians over the rounds, with the prefix none- or ext-:
//
//   - first-answer-ms: start → get_state answered (the extensions load
//     beside it: nothing waits for them);
//   - commands-ms: start → get_commands answered (it waits for the load,
//     as pi loads its extensions before it reads a command);
//   - first-prompt-ms: start → the first prompt's agent_end;
//   - idle-pss-MiB: 2 s after, PSS of all the bridge's processes (bridge,
//     watchdog, CLI, extension host);
//
// and ext-host-pss-MiB, the extension host's own.
//
//	scripts/bench   (or: go test -run '^$' -bench Extensions -benchtime 3x ./cmd/claude-rpc)
func BenchmarkExtensions(b *testing.B) {
	bin := releaseBinary(b)
	srv := claudetest.Start(b)
	cli, dir := claudetest.CLI(b), b.TempDir()
	env := append(srv.CLIEnv(b.TempDir()), piNode(b)...) // the last PATH wins
	ext, err := filepath.Abs(filepath.Join("testdata", "extensions", "title.ts"))
	if err != nil {
		b.Fatal(err)
	}
	// One bridge first, untimed: the CLI's info cache (models, commands)
	// filled, so that neither side pays for it.
	warm := startGoalBridge(b, bin, cli, dir, env, 4096)
	warm.send(`{"type":"get_available_models","id":"up"}`)
	warm.until(b, 2*time.Minute, func(f goalFrame) bool { return f.get("id") == "up" }, nil)
	warm.close()
	figures := map[string][]float64{}
	add := func(k string, v float64) { figures[k] = append(figures[k], v) }
	sides := []string{"none", "ext"}
	for b.Loop() {
		slices.Reverse(sides) // alternated: neither always starts on what the other left warm
		for _, side := range sides {
			var args []string
			if side == "ext" {
				args = []string{"-e", ext}
			}
			start := time.Now()
			gb := startGoalBridge(b, bin, cli, dir, env, 4096, args...)
			gb.send(`{"type":"get_state","id":"st"}`)
			gb.send(`{"type":"get_commands","id":"cmds"}`)
			gb.send(`{"type":"prompt","id":"p","message":"hello [[say:hi]]"}`)
			var state, cmds time.Time
			end := gb.until(b, 2*time.Minute, isFrame("agent_end"), func(f goalFrame) {
				switch f.get("id") {
				case "st":
					state = f.at
				case "cmds":
					cmds = f.at
				}
			})
			gb.settle(b)
			if cmds.IsZero() {
				gb.until(b, time.Minute, func(f goalFrame) bool { return f.get("id") == "cmds" }, func(f goalFrame) { cmds = f.at })
			}
			ms := func(t time.Time) float64 { return float64(t.Sub(start).Microseconds()) / 1000 }
			add(side+"-first-answer-ms", ms(state))
			add(side+"-commands-ms", ms(cmds))
			add(side+"-first-prompt-ms", ms(end.at))
			time.Sleep(2 * time.Second) // idle: start-up's garbage collected and released
			var all, host int64
			for _, pid := range treePids(gb.cmd.Process.Pid) {
				m, ok := readRollup(pid)
				if !ok {
					continue
				}
				all += m.pss
				if args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(args), "exthost") {
					host += m.pss
				}
			}
			if side == "ext" && host == 0 {
				b.Fatalf("no extension host process under the bridge; stderr: %s", tail(gb.stderr.String(), 2000))
			}
			add(side+"-idle-pss-MiB", float64(all)/1024)
			if side == "ext" {
				add("ext-host-pss-MiB", float64(host)/1024)
			}
			gb.close()
		}
	}
	keys := make([]string, 0, len(figures))
	for k := range figures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := slices.Clone(figures[k])
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], k)
	}
}
