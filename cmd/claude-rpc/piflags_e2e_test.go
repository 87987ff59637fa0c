//go:build linux

package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestPiHostStartupFlags starts claude-rpc as pi 1.5.2's RpcClient starts
// its agent for new RpcClient({provider: "anthropic", model, args}):
// `--mode rpc --provider anthropic --model M` and then args, here a pi
// host's usual flags. The bridge starts (no exit status 2), passes what it
// maps on to the CLI, and warns about the rest.
func TestPiHostStartupFlags(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--provider", "anthropic", "--model", "anthropic/claude-sonnet-4-5:high",
		"--name", "pi host", "--session-dir", t.TempDir(), "--offline", "--no-mcp",
		"-t", "read,bash", "-xt", "write",
		"--api-key", "sk-from-the-flag",
		"--system-prompt", "You are a test agent.", "--append-system-prompt", "Answer briefly.",
		"-ne", "-e", "./extension.ts", "--no-themes", "--models", "anthropic/*", "-a")

	st := b.call(map[string]any{"type": "get_state"})
	require.True(t, st.Get("success").Bool(), st.Raw)
	b.runPrompt("hello [[say:hi]]")

	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	r := reqs[len(reqs)-1]
	assert.Equal(t, "claude-sonnet-4-5", gjson.GetBytes(r.Body, "model").String(), "--model without its provider and thinking suffix")
	assert.Equal(t, "sk-from-the-flag", r.Header.Get("x-api-key"), "--api-key")
	system := gjson.GetBytes(r.Body, "system").Raw
	assert.Contains(t, system, "You are a test agent.", "--system-prompt")
	assert.Contains(t, system, "Answer briefly.", "--append-system-prompt")
	var tools []string
	for _, tool := range gjson.GetBytes(r.Body, "tools.#.name").Array() {
		tools = append(tools, tool.String())
	}
	assert.Contains(t, tools, "Read", "--tools read,bash")
	assert.Contains(t, tools, "Bash", "--tools read,bash")
	assert.NotContains(t, tools, "Write", "--tools read,bash; -xt write")
	assert.NotContains(t, tools, "Edit", "--tools read,bash")

	// One warning for each flag without effect (written before the first
	// frame), none for those whose meaning holds (-a, -ne, --no-themes).
	// (-e names no file: a warning that it did not load, or that there is
	// no node to load it.)
	for _, w := range []string{"--extension", "--models ignored"} {
		assert.Contains(t, b.stderr.String(), w)
	}
	for _, w := range []string{"--name", "--approve", "--no-extensions", "--no-themes", "--system-prompt", "--append-system-prompt", "--offline"} {
		assert.NotContains(t, b.stderr.String(), w+" ignored")
	}
	assert.NotContains(t, b.stderr.String(), "-a ignored")
}

// TestPiHostResourceFlags: pi's flags about what the agent loads reach the
// CLI, as the API request shows. A user and a project each have a CLAUDE.md,
// a skill and a command; a skill elsewhere is given with --skill.
func TestPiHostResourceFlags(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	cli := claudetest.CLI(t)
	for _, tc := range []struct {
		name    string
		args    []string
		present []string
		absent  []string
		warn    string // on stderr, when set
	}{
		{name: "none", args: nil,
			present: []string{"USER-MEMORY-MARK", "PROJECT-MEMORY-MARK", "uskill-mark", "pskill-mark", "pcmd-mark"},
			absent:  []string{"flagskill-mark"}},
		{name: "-nc", args: []string{"-nc"},
			present: []string{"uskill-mark", "pskill-mark"},
			absent:  []string{"USER-MEMORY-MARK", "PROJECT-MEMORY-MARK"}},
		{name: "--skill", args: []string{"--skill", "SKILL"},
			present: []string{"uskill-mark", "pskill-mark", "flagskill-mark"}},
		// The CLI reads an added folder's skills as the project's.
		{name: "-na and --skill", args: []string{"-na", "--skill", "SKILL"},
			present: []string{"USER-MEMORY-MARK", "uskill-mark"},
			absent:  []string{"PROJECT-MEMORY-MARK", "pskill-mark", "pcmd-mark", "flagskill-mark"},
			warn:    "--skill ignored: with --no-approve"},
		{name: "-ns and --skill", args: []string{"-ns", "--skill", "SKILL"},
			present: []string{"pcmd-mark", "flagskill-mark"},
			absent:  []string{"uskill-mark", "pskill-mark"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home, dir, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
			mkfile(t, filepath.Join(home, ".claude", "CLAUDE.md"), "USER-MEMORY-MARK")
			mkfile(t, filepath.Join(dir, "CLAUDE.md"), "PROJECT-MEMORY-MARK")
			mkfile(t, filepath.Join(home, ".claude", "skills", "uskill-mark", "SKILL.md"), "---\nname: uskill-mark\ndescription: the user's skill\n---\nU")
			mkfile(t, filepath.Join(dir, ".claude", "skills", "pskill-mark", "SKILL.md"), "---\nname: pskill-mark\ndescription: the project's skill\n---\nP")
			mkfile(t, filepath.Join(dir, ".claude", "commands", "pcmd-mark.md"), "---\ndescription: the project's command\n---\nC")
			skill := filepath.Join(elsewhere, "flagskill-mark")
			mkfile(t, filepath.Join(skill, "SKILL.md"), "---\nname: flagskill-mark\ndescription: a skill given with --skill\n---\nF")
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "SKILL" {
					args[i] = skill
				}
			}
			env := []string{"XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
			b := startBridgeWith(t, bridgeOpts{srv: srv, cli: cli, home: home, dir: dir, env: env}, args...)
			marker := "resources " + tc.name + " [[say:ok]]"
			b.runPrompt(marker)
			var body string
			for _, r := range srv.MessagesRequests() {
				if strings.Contains(r.LastUserText(), "resources "+tc.name+" ") {
					body = string(r.Body)
				}
			}
			require.NotEmpty(t, body, "the prompt's API request")
			for _, m := range tc.present {
				assert.Contains(t, body, m)
			}
			for _, m := range tc.absent {
				assert.NotContains(t, body, m)
			}
			if tc.warn != "" {
				assert.Contains(t, b.stderr.String(), tc.warn)
			}
		})
	}
}

// TestPiHostNoTools: pi's -nt becomes the CLI's --tools= (empty) and
// --strict-mcp-config, which the CLI takes: the turn runs, with no tools.
func TestPiHostNoTools(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "-nt")
	b.runPrompt("hello [[say:hi]]")
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	for _, name := range []string{"Read", "Bash", "Edit", "Write"} {
		assert.NotContains(t, gjson.GetBytes(reqs[len(reqs)-1].Body, "tools.#.name").Raw, `"`+name+`"`)
	}
}
