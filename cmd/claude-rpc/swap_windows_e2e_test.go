//go:build windows

package main

import (
	"testing"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestWindowsAnsweredDuringSwap is TestAnsweredDuringSwap on Windows:
// commands sent while the next turn waits for a CLI process that takes
// seconds to exit are answered before it has (answeredDuringSwap).
func TestWindowsAnsweredDuringSwap(t *testing.T) {
	cli := winCLI(t)
	for _, tp := range winTransports {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			path, env, log := lingeringCLI(t, cli, swapLinger)
			srv := claudetest.Start(t)
			b := startRaw(t, srv, append(winEnv(srv, t.TempDir()), env),
				"--mode", "rpc", "--cwd", spacedDir(t), "--log-level", "debug", "--claude-path", path, "--transport", tp)
			answeredDuringSwap(t, swapHost{send: b.send, next: b.read, prompt: b.prompt}, log)
		})
	}
}
