package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// demo is `claude-rpc demo`: --mode rpc with the real CLI talking to the
// fake Anthropic API the tests use, served on 127.0.0.1, so someone without
// an API key sees real frames. Commands come on stdin as in --mode rpc; the
// flags are --mode rpc's. The CLI keeps its settings and transcripts in a
// scratch folder removed at exit, so the user's own are neither read nor
// written.
func demo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, code := subcommandConfig("demo", args, stdout, stderr)
	if cfg == nil {
		return code
	}
	log, err := newLogger(stderr, cfg.GetString("log-level"))
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc demo: %v\n", err)
		return 2
	}
	// The CLI claude-rpc would use; without one, the pinned one in
	// scripts/install-cli's cache, fetched there first when missing.
	// Without any there is nothing to show: say so now, not per prompt.
	cli, err := demoCLI(cfg.GetString("claude-path"), claudecli.Find, pinned(), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc demo: %v\n", err)
		return 1
	}
	cfg.Set("claude-path", cli.Path)
	opts, err := bridgeOptions(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc demo: %v\n", err)
		return exitStatus(err)
	}
	srv, err := fakeapi.New()
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc demo: %v\n", err)
		return 1
	}
	defer srv.Close()
	// The fake API keeps every request for tests to inspect; the demo reads
	// none, so a long session would only grow.
	stopForgetting := make(chan struct{})
	defer close(stopForgetting)
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				srv.Forget()
			case <-stopForgetting:
				return
			}
		}
	}()
	scratch, err := os.MkdirTemp("", "claude-rpc-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(scratch) // best effort
	opts.CLI.Env = fakeAPIEnv(os.Environ(), srv.Env(), scratch)
	opts.InfoCache = nil // a scratch config's answers: nothing to keep
	if opts.SessionDir == "" {
		// The demo's pi session files go with its transcripts, in the
		// scratch folder: the user's own pi sessions stay as they are.
		opts.SessionDir = filepath.Join(scratch, "pi-sessions")
	}
	fmt.Fprintf(stderr, demoBanner, srv.URL, cli)
	return serve(opts, stdin, stdout)
}

const demoBanner = `claude-rpc demo: the Claude CLI (%[2]s) talks to a fake Anthropic API
on %[1]s instead of Anthropic's: no API key is used and no account is needed.
Type commands as JSON lines; frames come back on stdout. Try:
  {"type":"prompt","message":"Say hi"}
  {"type":"prompt","message":"[[think:Let me look.]] [[bash:ls]]"}
  {"type":"get_state"}
The fake API echoes your text; markers choose other replies: [[say:text]],
[[think:text]], [[bash:command]], [[slow:50]], [[error:529]], [[flaky:529:2]].
End with Ctrl-D (stdin closed).
`

// fakeAPIEnv is env pointed at a fake API (its variables in api): without
// what would send the CLI elsewhere or authenticate it (ANTHROPIC_*, the
// Bedrock/Vertex/Foundry switches, an OAuth token, CLAUDE_CONFIG_DIR), with
// configDir as the CLI's settings and transcripts folder, and its cache's.
func fakeAPIEnv(env, api []string, configDir string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		uk := strings.ToUpper(k) // Windows' keys have any case
		if strings.HasPrefix(uk, "ANTHROPIC_") || strings.HasPrefix(uk, "CLAUDE_CODE_USE_") ||
			uk == "CLAUDE_CODE_OAUTH_TOKEN" || uk == "CLAUDE_CONFIG_DIR" {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, api...)
	// The CLI keeps its MCP servers' logs (the relay's, on pipe and pty)
	// in its cache folder: XDG_CACHE_HOME's where it reads it (Linux).
	return append(out, "CLAUDE_CONFIG_DIR="+configDir, "XDG_CACHE_HOME="+filepath.Join(configDir, "cache"))
}
