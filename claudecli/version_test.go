package claudecli

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		ok   bool
	}{
		{"2.1.328", Version{2, 1, 328}, true},
		{"2.1.328 (Claude Code)\n", Version{2, 1, 328}, true},
		{"  v1.0.0", Version{1, 0, 0}, true},
		{"2.1.328-beta.1", Version{2, 1, 328}, true},
		{"2.1.328+build", Version{2, 1, 328}, true},
		{"10.20.30(x)", Version{10, 20, 30}, true},
		{"2.1", Version{}, false},
		{"2.1.x", Version{}, false},
		{"2..1", Version{}, false},
		{"2.1.-3", Version{}, false},
		{"Claude Code 2.1.328", Version{}, false},
		{"", Version{}, false},
	} {
		got, ok := ParseVersion(tc.in)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
	assert.Equal(t, "2.1.328", Version{2, 1, 328}.String())
	assert.Equal(t, "unknown", Version{}.String())
}

func TestCompare(t *testing.T) {
	order := []Version{{0, 2, 9}, {1, 0, 0}, {1, 0, 100}, {2, 0, 76}, {2, 1, 0}, {2, 1, 9}, {2, 1, 10}, {2, 1, 328}, {3, 0, 0}}
	for i, a := range order {
		for j, b := range order {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, a.Compare(b), "%s vs %s", a, b)
		}
	}
}

func TestRange(t *testing.T) {
	oldest, newest, tested := mustVersion(OldestSupported), mustVersion(NewestTested), mustVersion(TestedVersion)
	assert.LessOrEqual(t, oldest.Compare(tested), 0, "the pinned version is in the range")
	assert.LessOrEqual(t, tested.Compare(newest), 0, "the pinned version is in the range")
	for _, c := range everyCapability() {
		assert.True(t, oldest.Has(c), "the oldest supported version has everything: %s since %s", c, c.Since())
		assert.NotEmpty(t, c.String())
		assert.NotEmpty(t, c.Without())
	}
	assert.Empty(t, oldest.Lacks())

	for _, tc := range []struct {
		v    Version
		want Place
	}{
		{Version{}, PlaceUnknown},
		{Version{2, 0, 76}, PlaceOlder},
		{Version{oldest.Major, oldest.Minor, oldest.Patch - 1}, PlaceOlder},
		{oldest, PlaceSupported},
		{tested, PlaceSupported},
		{newest, PlaceSupported},
		{Version{newest.Major, newest.Minor, newest.Patch + 1}, PlaceNewer},
		{Version{3, 0, 0}, PlaceNewer},
	} {
		assert.Equal(t, tc.want, tc.v.Place(), "%s", tc.v)
	}
}

// TestScriptsAgree: scripts/test-cli-versions tests the range this file
// states, and scripts/install-cli pins TestedVersion.
func TestScriptsAgree(t *testing.T) {
	b, err := os.ReadFile("../scripts/test-cli-versions")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^range=\(([^)]*)\)`).FindSubmatch(b)
	require.NotNil(t, m, "no range=(...) in scripts/test-cli-versions")
	vs := strings.Fields(string(m[1]))
	require.GreaterOrEqual(t, len(vs), 2)
	assert.Equal(t, OldestSupported, vs[0], "the script's oldest")
	assert.Equal(t, NewestTested, vs[len(vs)-1], "the script's newest")
	assert.Contains(t, vs, TestedVersion)
	for i := 1; i < len(vs); i++ {
		assert.Equal(t, -1, mustVersion(vs[i-1]).Compare(mustVersion(vs[i])), "the script's range is oldest first: %v", vs)
	}
	b, err = os.ReadFile("../scripts/install-cli")
	require.NoError(t, err)
	assert.Contains(t, string(b), `version="${CLAUDE_CODE_VERSION:-`+TestedVersion+`}"`)
}

func TestLacks(t *testing.T) {
	assert.Empty(t, Version{}.Lacks(), "an unknown version is taken to have everything")
	assert.Empty(t, mustVersion(NewestTested).Lacks())
	assert.Equal(t, []Capability{capCommandLifecycle, capToolsStopWithCLI, capTranscriptFirst}, Version{2, 1, 205}.Lacks())
	assert.True(t, Version{2, 1, 206}.Has(capCommandLifecycle))
	assert.Equal(t, []Capability{capToolsStopWithCLI, capTranscriptFirst}, Version{2, 1, 211}.Lacks())
	assert.Equal(t, []Capability{capTranscriptFirst}, Version{2, 1, 274}.Lacks())
	assert.Equal(t, []Capability{capCommandLifecycle, capToolsStopWithCLI, capTranscriptFirst, capNative}, Version{2, 1, 112}.Lacks())
	lacks := Version{0, 0, 1}.Lacks()
	assert.Len(t, lacks, int(numCapabilities), "nothing at all")
	assert.False(t, Version{0, 0, 1}.Usable())
	assert.True(t, Version{2, 1, 112}.Usable())
}

func TestPlanFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         Version
		transport string
		ask       bool
		want      Plan
		notes     []string // each in a note, in order
	}{
		{name: "unknown version: as asked", transport: "stream", ask: true,
			want: Plan{Transport: "stream", Ask: true, HookEvents: true}},
		{name: "the tested version: as asked", v: mustVersion(TestedVersion), transport: "stream", ask: true,
			want: Plan{Transport: "stream", Ask: true, HookEvents: true}},
		{name: "the oldest supported: hook events", v: mustVersion(OldestSupported), transport: "pipe",
			want: Plan{Transport: "pipe", HookEvents: true}},
		{name: "newer: as asked", v: Version{9, 0, 0}, transport: "pty",
			want: Plan{Transport: "pty", HookEvents: true}},
		{name: "no command_lifecycle: pipe instead of stream, still asking (the relay)", v: Version{2, 1, 200}, transport: "stream", ask: true,
			want:  Plan{Transport: "pipe", Ask: true},
			notes: []string{"the Claude CLI 2.1.200 lacks command_lifecycle (steering mid-turn) (since 2.1.206): running --transport pipe instead of stream", "lacks Bash commands ended with the CLI (since 2.1.212): after an abort on the pipe or pty transport", "lacks transcript written before the result (since 2.1.275)"}},
		{name: "no command_lifecycle, pipe asked: an abort leaves Bash running", v: Version{2, 1, 200}, transport: "pipe",
			want: Plan{Transport: "pipe"}, notes: []string{"lacks Bash commands ended with the CLI", "Session ID … is already in use"}},
		{name: "transcript written late, on pty: said", v: Version{2, 1, 274}, transport: "pty",
			want: Plan{Transport: "pty"}, notes: []string{"the Claude CLI 2.1.274 lacks transcript written before the result (since 2.1.275): on the pipe and pty transports a next prompt can fail"}},
		{name: "transcript written late, on stream: nothing to say", v: Version{2, 1, 274}, transport: "stream", ask: true,
			want: Plan{Transport: "stream", Ask: true}},
		{name: "Bash outlives an abort, on stream: the interrupt ends it", v: Version{2, 1, 211}, transport: "stream", ask: true,
			want: Plan{Transport: "stream", Ask: true}},
		{name: "no --name nor --effort: said", v: Version{2, 1, 50}, transport: "pipe",
			want:  Plan{Transport: "pipe"},
			notes: []string{"lacks --effort and apply_flag_settings (since 2.1.69): after set_thinking_level every turn fails", "lacks --name (since 2.1.76)", "lacks Bash commands ended with the CLI", "transcript"}},
		{name: "no set_model: pipe", v: Version{1, 0, 111}, transport: "stream",
			want:  Plan{Transport: "pipe"},
			notes: []string{"the Claude CLI 1.0.111 lacks set_model on a running process (since 1.0.112): running --transport pipe", "lacks --fork-session with --session-id (since 2.0.73): fork, branch and clone fail", "lacks --effort", "lacks --name", "lacks Bash commands", "transcript"}},
		{name: "no control protocol: pipe, still asking (the relay)", v: Version{1, 0, 109}, transport: "stream", ask: true,
			want:  Plan{Transport: "pipe", Ask: true},
			notes: []string{"lacks control protocol (initialize, interrupt) (since 1.0.110): running --transport pipe", "fork", "effort", "name", "Bash", "transcript"}},
		{name: "too old for anything", v: Version{0, 0, 1}, transport: "stream", ask: true,
			want:  Plan{Transport: "stream"},
			notes: []string{"the Claude CLI 0.0.1 lacks stream-json input, --include-partial-messages, --session-id: prompts will fail; install " + OldestSupported + " or newer", "--ask is off: the Claude CLI 0.0.1 lacks can_use_tool"}},
		{name: "too old for prompts, can ask: as asked", v: Version{1, 0, 59}, transport: "stream", ask: true,
			want:  Plan{Transport: "stream", Ask: true},
			notes: []string{"the Claude CLI 1.0.59 lacks --include-partial-messages: prompts will fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanFor(tc.v, tc.transport, tc.ask)
			assert.Equal(t, tc.want.Transport, got.Transport)
			assert.Equal(t, tc.want.Ask, got.Ask)
			assert.Equal(t, tc.want.HookEvents, got.HookEvents, "--include-hook-events: measured from %s on", OldestSupported)
			assert.Len(t, got.Notes, len(tc.notes), "%q", got.Notes)
			for i, n := range tc.notes {
				if i < len(got.Notes) {
					assert.Contains(t, got.Notes[i], n)
				}
			}
		})
	}
}

// TestPlanAsksWhereTheCLICan: whatever the version, a plan asks only a
// CLI that can ask (every transport can: pipe and pty through the relay,
// so a stream transport replaced by pipe keeps asking), and one of a
// supported version changes nothing.
func TestPlanAsksWhereTheCLICan(t *testing.T) {
	for _, c := range everyCapability() {
		since := c.Since()
		for _, v := range []Version{since, {since.Major, since.Minor, max(since.Patch-1, 0)}} {
			for _, tp := range Transports() {
				for _, ask := range []bool{false, true} {
					p := PlanFor(v, tp, ask)
					if v.Place() != PlaceOlder {
						assert.Equal(t, Plan{Transport: tp, Ask: ask, HookEvents: true}, p, "%s %s", v, tp)
					}
					assert.False(t, p.Ask && !v.Has(capCanUseTool), "%s: --ask without can_use_tool", v)
					if (p.Transport != tp || p.Ask != ask) && len(p.Notes) == 0 {
						t.Errorf("%s %s ask=%v: changed without saying so", v, tp, ask)
					}
				}
			}
		}
	}
}

func TestDetectVersionFromTheInstall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on windows; the layouts are the same")
	}
	root := t.TempDir()
	write := func(p, body string, mode os.FileMode) string {
		p = filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), mode))
		return p
	}
	// A binary that would say otherwise if it were run.
	const liar = "#!/bin/sh\necho '0.0.1 (Claude Code)'\n"

	// npm, native: the platform package, and .bin/claude linking to it.
	plat := write("npm/node_modules/@anthropic-ai/claude-code-linux-x64/claude", liar, 0o755)
	write("npm/node_modules/@anthropic-ai/claude-code-linux-x64/package.json", `{"name":"@anthropic-ai/claude-code-linux-x64","version":"2.1.328"}`, 0o644)
	bin := filepath.Join(root, "npm", "node_modules", ".bin", "claude")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.Symlink(plat, bin))
	// npm, cli.js on Node.js (an npm shim on windows: node with the script).
	script := write("old/node_modules/@anthropic-ai/claude-code/cli.js", "#!/usr/bin/env node\n", 0o755)
	write("old/node_modules/@anthropic-ai/claude-code/package.json", `{"name":"@anthropic-ai/claude-code","version":"2.0.76"}`, 0o644)
	// The native installer: ~/.local/bin/claude -> ~/.local/share/claude/versions/2.1.330.
	native := write("home/.local/share/claude/versions/2.1.330", liar, 0o755)
	local := filepath.Join(root, "home", ".local", "bin", "claude")
	require.NoError(t, os.MkdirAll(filepath.Dir(local), 0o755))
	require.NoError(t, os.Symlink(native, local))
	// Below another package's package.json: run it.
	other := write("other/node_modules/wrapper/bin/claude", liar, 0o755)
	write("other/node_modules/wrapper/package.json", `{"name":"wrapper","version":"9.9.9"}`, 0o644)
	// Nowhere known: run it.
	alone := write("alone/claude", liar, 0o755)

	for _, tc := range []struct {
		c    Command
		want string
	}{
		{Command{Path: plat}, "2.1.328"},
		{Command{Path: bin}, "2.1.328"},
		{Command{Path: "/usr/bin/node", Args: []string{script}}, "2.0.76"},
		{Command{Path: local}, "2.1.330"},
		{Command{Path: other}, "0.0.1"},
		{Command{Path: alone}, "0.0.1"},
	} {
		v, err := DetectVersion(tc.c, 10*time.Second)
		require.NoError(t, err, "%s", tc.c)
		assert.Equal(t, tc.want, v.String(), "%s", tc.c)
	}

	_, err := DetectVersion(Command{Path: write("bad/claude", "#!/bin/sh\necho hello\n", 0o755)}, 10*time.Second)
	assert.ErrorContains(t, err, `printed "hello", not a version`)
	_, err = DetectVersion(Command{Path: write("fails/claude", "#!/bin/sh\necho broken >&2\nexit 3\n", 0o755)}, 10*time.Second)
	assert.ErrorContains(t, err, "exit status 3: broken")
	start := time.Now()
	_, err = DetectVersion(Command{Path: write("hangs/claude", "#!/bin/sh\nexec sleep 30\n", 0o755)}, 200*time.Millisecond)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	// One that floods: stopped, not read to its end (1 GB).
	start = time.Now()
	_, err = DetectVersion(Command{Path: write("floods/claude", "#!/bin/sh\nhead -c 1000000000 /dev/zero | tr '\\0' x\n", 0o755)}, 10*time.Second)
	assert.ErrorContains(t, err, "too much output")
	assert.Less(t, time.Since(start), 5*time.Second)
}
