//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// versionedCLI is the real CLI behind a script that says it is version v
// when asked (claude-rpc reads a version from --version when the CLI's
// install does not tell it).
func versionedCLI(t *testing.T, v string) string {
	return fakeCLI(t, "if [ \"$1\" = --version ]; then echo '"+v+" (Claude Code)'; exit 0; fi\nexec '"+claudetest.CLI(t)+"' \"$@\"\n")
}

// TestOlderCLIDegrades: a CLI without command_lifecycle (2.1.200) runs on
// the pipe transport though stream was asked, without --ask, saying so once
// on stderr; prompts, a steer and an abort still work.
func TestOlderCLIDegrades(t *testing.T) {
	t.Parallel()
	b := startBridgeOn(t, claudetest.Start(t), versionedCLI(t, "2.1.200"), "--transport", "stream", "--ask")
	frames := b.runPrompt("[[say:still served]]")
	assert.Equal(t, "still served", deltaText(frames))
	b.requireNoLeftovers(b.cmd.Process.Pid) // pipe: no CLI process waits for the next prompt

	// A steer during a tool call waits for the end of the CLI's turn (on
	// a real 2.1.200 over stream, the run would never end).
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:sleep 1; echo slept]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	require.True(t, b.call(map[string]any{"type": "steer", "message": "then this [[say:steered]]"}).Get("success").Bool())
	frames = b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, "steered", last(frames, "message_end", "assistant").Get("message.content.0.text").String())

	// Without --ask, a tool that needs permission is refused, not asked.
	frames = b.runPrompt(`[[tool:Write:{"file_path":"` + filepath.Join(b.dir, "x.txt") + `","content":"x"}]]`)
	for _, f := range frames {
		assert.NotEqual(t, "extension_ui_request", f.Get("type").String())
	}
	assert.NoFileExists(t, filepath.Join(b.dir, "x.txt"))

	code, _ := b.closeAndWait(30 * time.Second)
	assert.Equal(t, 0, code)
	stderr := b.stderr.String()
	assert.Equal(t, 1, strings.Count(stderr, "the Claude CLI 2.1.200 lacks command_lifecycle (steering mid-turn) (since 2.1.206): running --transport pipe instead of stream"), stderr)
	assert.Equal(t, 1, strings.Count(stderr, "--ask is off: it needs the stream transport"), stderr)
	assert.Equal(t, 1, strings.Count(stderr, "the Claude CLI 2.1.200 is older than the supported range ("+claudecli.OldestSupported+" to "+claudecli.NewestTested+")"), stderr)
}

// TestNewerCLIRunsAsUsual: a version above the newest tested changes
// nothing: the stream transport keeps its process, and nothing is said at
// warn level.
func TestNewerCLIRunsAsUsual(t *testing.T) {
	t.Parallel()
	b := startBridgeOn(t, claudetest.Start(t), versionedCLI(t, "9.9.9"), "--transport", "stream")
	frames := b.runPrompt("[[say:as usual]]")
	assert.Equal(t, "as usual", deltaText(frames))
	assert.Len(t, b.cliPids(), 1, "the stream transport keeps its CLI process")
	code, _ := b.closeAndWait(30 * time.Second)
	assert.Equal(t, 0, code)
	assert.Contains(t, b.stderr.String(), "the Claude CLI 9.9.9 is newer than the newest tested, "+claudecli.NewestTested)
	assert.NotContains(t, b.stderr.String(), "WRN")
}

// TestDemoFromTheCache: with no CLI installed, demo runs the pinned one
// scripts/install-cli keeps in its cache, saying so.
func TestDemoFromTheCache(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	bin := filepath.Join(cache, "claude-code-"+claudecli.TestedVersion, "node_modules", ".bin", "claude")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.Symlink(claudetest.CLI(t), bin)) // as npm links it
	b := newRPCProc(t, nil, t.TempDir(), t.TempDir())
	b.start(userEnv(b.home, "/usr/bin:/bin", "CLAUDE_RPC_CACHE="+cache), "demo", "--cwd", b.dir)
	frames := b.runPrompt("Say hi")
	assert.Equal(t, "echo: Say hi", deltaText(frames))
	code, _ := b.closeAndWait(30 * time.Second)
	assert.Equal(t, 0, code)
	assert.Contains(t, b.stderr.String(), "claude-rpc demo: no Claude CLI is installed (claude CLI not found: not on PATH (/usr/bin:/bin)")
	assert.Contains(t, b.stderr.String(), "claude-rpc demo: using the pinned CLI "+claudecli.TestedVersion+" from scripts/install-cli's cache: "+bin+"\n")

	// Another version there is not the pinned one: not used.
	other := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(other, "claude-code-2.0.1", "node_modules", ".bin"), 0o755))
	require.NoError(t, os.Symlink(claudetest.CLI(t), filepath.Join(other, "claude-code-2.0.1", "node_modules", ".bin", "claude")))
	cmd := exec.Command(binPath, "demo")
	cmd.Env = userEnv(t.TempDir(), "/usr/bin:/bin", "CLAUDE_RPC_CACHE="+other)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
	assert.Contains(t, string(out), "scripts/install-cli installs the tested CLI ("+claudecli.TestedVersion+", with npm) into "+other+", where demo finds it")
}
