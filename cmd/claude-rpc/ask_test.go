package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAskDefaults: asking is on by default on every transport (pipe and
// pty ask through the relay), off with --ask=false; the dialog's timeout
// defaults to DefaultAskTimeout.
func TestAskDefaults(t *testing.T) {
	isolateConfig(t)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		ask     bool
		timeout time.Duration
		err     string
	}{
		{name: "default", ask: true, timeout: DefaultAskTimeout},
		{name: "stream", args: []string{"--transport", "stream"}, ask: true, timeout: DefaultAskTimeout},
		{name: "off", args: []string{"--ask=false"}, ask: false, timeout: DefaultAskTimeout},
		{name: "off from the environment", env: map[string]string{"CLAUDE_RPC_ASK": "false"}, ask: false, timeout: DefaultAskTimeout},
		{name: "pipe", args: []string{"--transport", "pipe"}, ask: true, timeout: DefaultAskTimeout},
		{name: "pty", args: []string{"--transport", "pty"}, ask: true, timeout: DefaultAskTimeout},
		{name: "pipe and --ask", args: []string{"--transport", "pipe", "--ask"}, ask: true, timeout: DefaultAskTimeout},
		{name: "pipe and --ask=false", args: []string{"--transport", "pipe", "--ask=false"}, ask: false, timeout: DefaultAskTimeout},
		{name: "timeout", args: []string{"--ask-timeout", "5s"}, ask: true, timeout: 5 * time.Second},
		{name: "no timeout", args: []string{"--ask-timeout", "0"}, ask: true, timeout: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "pty" && runtime.GOOS == "windows" {
				t.Skip("Windows has no pty transport: --transport pty is refused there")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts, _, err, _ := piOptions(t, tc.args...)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ask, opts.Ask)
			assert.Equal(t, tc.timeout, opts.AskTimeout)
		})
	}
}
