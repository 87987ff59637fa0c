//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// userEnv is the environment of a user with home and path and nothing of
// ours, the CLI's or Anthropic's, plus more.
func userEnv(home, path string, more ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "PATH" || k == "CLAUDECODE" || k == "CLAUDE_CONFIG_DIR" || strings.HasPrefix(k, "ANTHROPIC_") ||
			strings.HasPrefix(k, "CLAUDE_CODE_") || strings.HasPrefix(k, "CLAUDE_RPC_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+home, "PATH="+path), more...)
}

// fakeCLI writes an executable shell script standing in for the CLI.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	cli := claudetest.CLI(t)
	const sysPath = "/usr/bin:/bin"
	onPath := t.TempDir()
	require.NoError(t, os.Symlink(cli, filepath.Join(onPath, "claude")))
	const secret = "sk-ant-doctor-SECRET-value"
	for _, tc := range []struct {
		name string
		// setup returns the arguments and environment, given a home.
		setup    func(t *testing.T, home string) ([]string, []string)
		exit     int
		has      []string
		hasNot   []string
		problems int
	}{
		{
			name: "all well, API key in the environment",
			setup: func(t *testing.T, home string) ([]string, []string) {
				return []string{"--claude-path", cli}, userEnv(home, sysPath, "ANTHROPIC_API_KEY="+secret)
			},
			has: []string{"ok    Claude CLI      " + cli + " (--claude-path)", "ok    CLI version     2.1.328 (Claude Code)",
				"ok    transport       stream (these work here: stream, pipe, pty)", "--    Git Bash        not needed on linux",
				"ok    authentication  ANTHROPIC_API_KEY set in the environment",
				"claude-rpc/cli-info, 0 entries: at start get_state, get_available_models and get_commands answer from what the CLI said last time",
				"ok    test turn       one prompt through claude-rpc and the CLI (--transport stream)", "All checks passed."},
			hasNot: []string{secret},
		},
		{
			name: "pipe transport, a saved login, another server",
			setup: func(t *testing.T, home string) ([]string, []string) {
				require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(`{"token":"`+secret+`"}`), 0o600))
				return []string{"--claude-path", cli, "--transport", "pipe"}, userEnv(home, sysPath, "ANTHROPIC_BASE_URL=http://127.0.0.1:9/"+secret)
			},
			has: []string{"ok    authentication  a saved login in " + "HOME/.claude/.credentials.json; ANTHROPIC_BASE_URL set",
				"(--transport pipe)", "All checks passed."},
			hasNot: []string{secret},
		},
		{
			name: "pty transport, CLAUDE_RPC_ environment, found on PATH, no authentication",
			setup: func(t *testing.T, home string) ([]string, []string) {
				return nil, userEnv(home, onPath+":"+sysPath, "CLAUDE_RPC_TRANSPORT=pty")
			},
			has: []string{"ok    Claude CLI      " + onPath + "/claude (PATH)",
				"warn  authentication  no ANTHROPIC_API_KEY", "HOME/.claude/.credentials.json: unless the CLI is logged in",
				"(--transport pty)", "All checks passed."},
		},
		{
			name: "found in ~/.local/bin, not on PATH (the native installer)",
			setup: func(t *testing.T, home string) ([]string, []string) {
				require.NoError(t, os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755))
				require.NoError(t, os.Symlink(cli, filepath.Join(home, ".local", "bin", "claude")))
				return nil, userEnv(home, sysPath)
			},
			has: []string{"ok    Claude CLI      HOME/.local/bin/claude (the native installer's ~/.local/bin)", "All checks passed."},
		},
		{
			name: "no CLI anywhere",
			setup: func(t *testing.T, home string) ([]string, []string) {
				return nil, userEnv(home, sysPath, "XDG_CACHE_HOME="+t.TempDir())
			},
			exit: 1, problems: 2,
			has: []string{"FAIL  Claude CLI      claude CLI not found: not on PATH (/usr/bin:/bin) nor in HOME/.local/bin/claude,",
				"`curl -fsSL https://claude.ai/install.sh | bash` or `npm install -g @anthropic-ai/claude-code`, or pass --claude-path",
				"FAIL  test turn       not run: there is no CLI to run"},
		},
		{
			name: "--claude-path to nothing",
			setup: func(t *testing.T, home string) ([]string, []string) {
				return []string{"--claude-path", "/nonexistent/claude"}, userEnv(home, onPath+":"+sysPath)
			},
			exit: 1, problems: 2,
			has: []string{`FAIL  Claude CLI      claude CLI not found: --claude-path "/nonexistent/claude": no such file`},
		},
		{
			name: "a CLI that fails every turn",
			setup: func(t *testing.T, home string) ([]string, []string) {
				p := fakeCLI(t, "if [ \"$1\" = --version ]; then echo '2.1.328 (Claude Code)'; exit 0; fi\necho 'claude: cannot read its settings' >&2\nexit 3\n")
				return []string{"--claude-path", p}, userEnv(home, sysPath)
			},
			exit: 1, problems: 1,
			has: []string{"ok    CLI version     2.1.328", "FAIL  test turn       the CLI failed:", "exit status 3", "claude: cannot read its settings"},
		},
		{
			name: "a CLI whose --version fails",
			setup: func(t *testing.T, home string) ([]string, []string) {
				p := fakeCLI(t, "echo 'error while loading shared libraries: libstdc++.so.6' >&2\nexit 127\n")
				return []string{"--claude-path", p}, userEnv(home, sysPath)
			},
			exit: 1, problems: 2,
			has: []string{"FAIL  CLI version     `", " --version` failed (exit status 127): error while loading shared libraries: libstdc++.so.6; reinstall the CLI"},
		},
		{
			name: "another CLI version works, with a warning",
			setup: func(t *testing.T, home string) ([]string, []string) {
				p := fakeCLI(t, "if [ \"$1\" = --version ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\nexec '"+cli+"' \"$@\"\n")
				return []string{"--claude-path", p}, userEnv(home, sysPath)
			},
			has: []string{"warn  CLI version     9.9.9 (Claude Code): newer than the newest tested, " + claudecli.NewestTested + "; it runs as usual (claude-rpc is tested with 2.1.328",
				"ok    transport       stream (these work here", "ok    test turn", "All checks passed."},
		},
		{
			name: "an older CLI: what it lacks is turned off, and said",
			setup: func(t *testing.T, home string) ([]string, []string) {
				p := fakeCLI(t, "if [ \"$1\" = --version ]; then echo '2.1.200 (Claude Code)'; exit 0; fi\nexec '"+cli+"' \"$@\"\n")
				return []string{"--claude-path", p, "--ask"}, userEnv(home, sysPath)
			},
			has: []string{"warn  CLI version     2.1.200 (Claude Code): older than the supported range (the supported range is " + claudecli.OldestSupported + " to " + claudecli.NewestTested + "; claude-rpc is tested with 2.1.328); claude-rpc turns off what it lacks: update it (npm install -g @anthropic-ai/claude-code@2.1.328)",
				"--    CLI lacks       command_lifecycle (steering mid-turn) (since 2.1.206): the stream transport is replaced by pipe",
				"ok    transport       pipe, not stream: the CLI 2.1.200 lacks what stream needs",
				"(--transport pipe)", "All checks passed."},
			hasNot: []string{"--ask"}, // pipe asks too (the relay)
		},
		{
			name: "a CLI too old to run prompts",
			setup: func(t *testing.T, home string) ([]string, []string) {
				p := fakeCLI(t, "if [ \"$1\" = --version ]; then echo '0.2.9 (Claude Code)'; exit 0; fi\nexec '"+cli+"' \"$@\"\n")
				return []string{"--claude-path", p}, userEnv(home, sysPath)
			},
			exit: 1, problems: 1,
			has: []string{"FAIL  CLI version     0.2.9 (Claude Code): older than the supported range", "prompts cannot run on it",
				"--    CLI lacks       stream-json input (since "},
		},
		{
			name: "bad settings",
			setup: func(t *testing.T, home string) ([]string, []string) {
				return []string{"--claude-path", cli, "--cwd", "/nonexistent"}, userEnv(home, sysPath)
			},
			exit: 1, problems: 2,
			has: []string{"FAIL  settings        --cwd: stat /nonexistent: no such file or directory", "FAIL  test turn       not run: the settings above are wrong"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			args, env := tc.setup(t, home)
			marker := "CLAUDE_RPC_TEST_MARKER=" + newMarker()
			cmd := exec.Command(binary(t), append([]string{"doctor"}, args...)...)
			cmd.Env = append(env, marker)
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			text := strings.ReplaceAll(string(out), home, "HOME")
			t.Logf("claude-rpc doctor:\n%s", text)
			assert.Equal(t, tc.exit, cmd.ProcessState.ExitCode(), "%v", err)
			assert.Empty(t, stderr.String(), "doctor reports on stdout")
			for _, s := range tc.has {
				assert.Contains(t, text, s)
			}
			for _, s := range tc.hasNot {
				assert.NotContains(t, text, s)
			}
			if tc.problems > 0 {
				assert.Contains(t, text, "\n"+string(rune('0'+tc.problems))+" problem(s), marked FAIL above.\n")
				assert.Equal(t, tc.problems, strings.Count(text, "\nFAIL  "))
			}
			assert.Empty(t, processesWithEnv(marker), "doctor left processes running")
			entries, err := os.ReadDir(home)
			require.NoError(t, err)
			for _, e := range entries {
				assert.Contains(t, []string{".claude", ".local"}, e.Name(), "doctor's test turn wrote to the user's home")
			}
		})
	}
}

func TestDemo(t *testing.T) { forEachTransport(t, testDemo) }

// testDemo runs the demo as a newcomer would: no API key, and an
// environment that would send the CLI elsewhere if the demo did not.
func testDemo(t *testing.T, tp string) {
	cli := claudetest.CLI(t)
	b := newRPCProc(t, nil, t.TempDir(), t.TempDir())
	tmp := t.TempDir()
	b.start(userEnv(b.home, os.Getenv("PATH"), "TMPDIR="+tmp, "ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_AUTH_TOKEN=nope"),
		"demo", "--claude-path", cli, "--cwd", b.dir, "--transport", tp)

	events := b.runPrompt("Say hi")
	end := events[len(events)-1]
	msgs := end.Get("messages").Array()
	require.Len(t, msgs, 2, "%s", end.Raw)
	assert.Equal(t, "echo: Say hi", msgs[1].Get("content.0.text").String())
	assert.Equal(t, "stop", msgs[1].Get("stopReason").String())
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Get("type").String())
	}
	assert.Subset(t, kinds, []string{"agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end"})
	events = b.runPrompt("[[think:Let me look.]] [[bash:echo demo-$((6*7))]]")
	var tool gjson.Result
	for _, e := range events {
		if e.Get("type").String() == "tool_execution_end" {
			tool = e
		}
	}
	assert.Contains(t, tool.Raw, "demo-42", "the CLI ran Bash for the fake API's tool call")
	st := b.call(map[string]any{"type": "get_state"})
	assert.Equal(t, int64(6), st.Get("data.messageCount").Int(), "%s", st.Raw)

	code, rest := b.closeAndWait(30 * time.Second)
	assert.Equal(t, 0, code)
	assert.Empty(t, rest)
	assert.Contains(t, b.stderr.String(), "claude-rpc demo: the Claude CLI ("+cli+") talks to a fake Anthropic API\non http://127.0.0.1:")
	assert.Contains(t, b.stderr.String(), `{"type":"prompt","message":"Say hi"}`)
	left, err := filepath.Glob(filepath.Join(tmp, "claude-rpc-demo-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the demo's scratch folder is removed")
	home, err := os.ReadDir(b.home)
	require.NoError(t, err)
	assert.Empty(t, home, "the demo leaves the user's home alone")
}

// TestDemoWithoutCLI: no CLI, none in the cache, and no npm to fetch one
// with (TestDemoFetchesTheCLI has npm): demo says what is missing and how
// to get it, and serves nothing.
func TestDemoWithoutCLI(t *testing.T) {
	t.Parallel()
	home, path := t.TempDir(), t.TempDir()
	cmd := exec.Command(binary(t), "demo")
	cmd.Env = userEnv(home, path, "XDG_CACHE_HOME="+t.TempDir()) // no scripts/install-cli cache either
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
	assert.Empty(t, out)
	assert.Contains(t, stderr.String(), "claude-rpc demo: no Claude CLI is installed (claude CLI not found: not on PATH ("+path+")")
	assert.Contains(t, stderr.String(), "npm install -g @anthropic-ai/claude-code")
	assert.Contains(t, stderr.String(), "claude-rpc demo: npm is not on PATH, and demo fetches the pinned Claude CLI "+claudecli.TestedVersion+" with it: install Node.js (it brings npm) and run demo again")
}

// TestBinaryHasNoTesting: doctor and demo serve the fake API (fakeapi) from
// the binary, which must pull neither the testing package (and its flags)
// nor the test helpers (claudetest) in.
func TestBinaryHasNoTesting(t *testing.T) {
	t.Parallel()
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		require.NoError(t, err)
		deps := strings.Fields(string(out))
		assert.Contains(t, deps, "github.com/claude-rpc/claude-rpc/claudecli/fakeapi")
		assert.NotContains(t, deps, "github.com/claude-rpc/claude-rpc/claudecli/claudetest", "GOOS=%s", goos)
		assert.NotContains(t, deps, "testing", "GOOS=%s", goos)
	}
}

// TestBinaryHasNoHTTPServer: the fake API in the binary serves HTTP
// itself; net/http's Server (with its HTTP/2 and TLS paths) would link
// crypto/tls and x509 in, and every bridge would map them. net/http stays
// imported (viper's afero imports it), so crypto/tls's package init stays,
// and the String methods of its enums (types net/http's Request holds);
// any other crypto/tls code, or net/http.(*Server), means the server came
// back.
func TestBinaryHasNoHTTPServer(t *testing.T) {
	t.Parallel()
	sym := regexp.MustCompile(`^\s*[0-9a-fA-F]*\s+([A-Za-z])\s+(.+)$`)
	for _, goos := range []string{"linux", "windows", "darwin"} {
		bin := filepath.Join(t.TempDir(), "claude-rpc")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Env = append(os.Environ(), "GOOS="+goos)
		out, err := build.CombinedOutput()
		require.NoError(t, err, "GOOS=%s: %s", goos, out)
		out, err = exec.Command("go", "tool", "nm", bin).Output()
		require.NoError(t, err, "GOOS=%s", goos)
		var found []string
		tls := 0
		for _, line := range strings.Split(string(out), "\n") {
			m := sym.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			kind, name := m[1], m[2]
			if strings.HasPrefix(name, "crypto/tls.") {
				tls++
			}
			switch {
			case strings.HasPrefix(name, "net/http.(*Server)"):
			case strings.HasPrefix(name, "crypto/tls.") && (kind == "T" || kind == "t") &&
				name != "crypto/tls.init" && !strings.HasSuffix(name, ".String"):
			default:
				continue
			}
			found = append(found, name)
		}
		require.NotZero(t, tls, "GOOS=%s: no crypto/tls symbol at all: is the symbol table read?", goos)
		if len(found) > 0 {
			t.Errorf("GOOS=%s: the HTTP server or TLS is linked in: %d symbols, such as %v",
				goos, len(found), found[:min(len(found), 8)])
		}
	}
}

// TestVersionLine: --version, as hosts run `pi --version` (T3 Code within
// 4 s, then the first x.y.z of stdout and stderr): on stdout one line,
// pi's version with claude-rpc's as build metadata; on stderr, for
// people, claude-rpc's version, commit, Go and platform.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "--version")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Run())
	assert.Less(t, time.Since(start), 4*time.Second)
	assert.Regexp(t, `^1\.6\.0\+claude-rpc\.[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*\n$`, stdout.String())
	assert.Equal(t, "1.6.0", regexp.MustCompile(`\b(\d+\.\d+\.\d+)\b`).FindStringSubmatch(stdout.String() + "\n" + stderr.String())[1])
	assert.Regexp(t, `^claude-rpc \S+ \((commit [0-9a-f]{12}.*, )?`+runtime.Version()+`, `+runtime.GOOS+"/"+runtime.GOARCH+`\), speaking pi 1\.6\.0's RPC protocol and flags\n$`, stderr.String())
}

func TestHelpNamesTheSubcommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"doctor", "--help"}, {"demo", "-h"}} {
		out, err := runBinary(t, nil, args...)
		require.NoError(t, err, "%v", args)
		assert.Contains(t, out, "claude-rpc demo [flags]", "%v", args)
		assert.Contains(t, out, "claude-rpc doctor [flags]", "%v", args)
		assert.Contains(t, out, "--claude-path string", "%v", args)
	}
	// On stdout, as pi's, with pi's flags each on a line of its own: pi-web
	// reads `pi --help` for --approve.
	out, err := exec.Command(binary(t), "--help").Output()
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^  --approve, -a +accepted`, string(out))
	assert.Regexp(t, `(?m)^  --list-models \[search\] +print the CLI's models`, string(out))
}
