//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestAnsweredDuringSwap: commands sent while the next turn waits for a
// CLI process that takes seconds to exit are answered before it has
// (answeredDuringSwap), on every transport.
func TestAnsweredDuringSwap(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp string) {
		cli, env, log := lingeringCLI(t, claudetest.CLI(t), swapLinger)
		b := startBridgeWith(t, bridgeOpts{cli: cli, env: []string{env}}, "--transport", tp)
		answeredDuringSwap(t, swapHost{
			send:   func(v map[string]any) { b.sendJSON(v) },
			next:   func(d time.Duration) gjson.Result { return b.next(d) },
			prompt: b.runPrompt,
		}, log)
	})
}
