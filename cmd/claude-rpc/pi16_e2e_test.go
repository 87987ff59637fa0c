//go:build linux

package main

import "testing"

// TestPi16Client is TestPi15Client through pi 1.6.0's RpcClient, its
// frames compared with what pi 1.6.0 itself wrote (testdata/pi16).
func TestPi16Client(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tp string) {
		runs, srv := runPiClient(t, pi16, []string{"--transport", tp, "--message-updates", "delta"},
			append(append([]string{}, pi15Recorded...), pi15Methods...)...)
		checkPiClient(t, pi16, runs, srv, tp, "delta")
	})
}
