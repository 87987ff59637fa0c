//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// fakeNPM is an npm that installs what `npm install --prefix DIR
// @anthropic-ai/claude-code@V` would, as far as demo looks: the platform
// package's claude (which prints its version) beside its package.json. It
// appends its arguments to $FAKE_NPM_LOG, one call a line, and fails with
// status 3 when $FAKE_NPM_FAIL is set.
const fakeNPM = `#!/bin/sh
echo "$*" >> "$FAKE_NPM_LOG"
[ -n "$FAKE_NPM_FAIL" ] && { echo "npm ERR! network down" >&2; exit 3; }
prefix= spec=
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix="$2"; shift ;;
	@anthropic-ai/*) spec="$1" ;;
	esac
	shift
done
v="${spec##*@}"
pkg="$prefix/node_modules/@anthropic-ai/claude-code-fake"
mkdir -p "$pkg"
printf '{"name":"@anthropic-ai/claude-code-fake","version":"%s"}\n' "$v" > "$pkg/package.json"
printf '#!/bin/sh\necho "%s (Claude Code)"\n' "$v" > "$pkg/claude"
chmod +x "$pkg/claude"
`

// TestDemoCLI: which CLI demo runs, and whether it fetches one: the CLI
// claude-rpc finds; else the pinned one in the cache; else the pinned one
// fetched with npm into the cache (said on stderr first, with the script's
// npm command), and found there the next time without npm; never a fetch
// in place of an explicit --claude-path; a clear error without npm or when
// npm fails.
func TestDemoCLI(t *testing.T) {
	const version = "2.1.328"
	found := func(string) (claudecli.Command, error) {
		return claudecli.Command{Path: "/opt/claude", From: "PATH"}, nil
	}
	notFound := func(explicit string) (claudecli.Command, error) {
		if explicit != "" {
			return claudecli.Command{}, errors.New("--claude-path " + explicit + ": no such file")
		}
		return claudecli.Command{}, errors.New("claude is not on PATH")
	}
	tests := []struct {
		name     string
		explicit string
		find     func(string) (claudecli.Command, error)
		cached   bool // the cache holds the CLI before demo starts
		noNPM    bool
		npmFails bool

		want      string // the CLI's path; "cache" for the cache's
		err       string
		fetches   bool // npm runs
		stderrHas []string
	}{
		{name: "found", find: found, want: "/opt/claude"},
		{name: "found, cache and npm unused", find: found, cached: true, want: "/opt/claude"},
		{name: "explicit path missing: no fetch", explicit: "/nope/claude", find: notFound, err: "--claude-path /nope/claude"},
		{name: "in the cache", find: notFound, cached: true, want: "cache",
			stderrHas: []string{"no Claude CLI is installed (claude is not on PATH)", "using the pinned CLI " + version}},
		{name: "fetched", find: notFound, want: "cache", fetches: true,
			stderrHas: []string{"fetching the Claude CLI " + version + " (@anthropic-ai/claude-code@" + version + ", with npm: about 170 MB to download, 360 MB on disk) into ", "using the pinned CLI"}},
		{name: "no npm", find: notFound, noNPM: true, err: "npm is not on PATH, and demo fetches the pinned Claude CLI " + version + " with it: install Node.js"},
		{name: "npm fails", find: notFound, npmFails: true, fetches: true, err: "npm install @anthropic-ai/claude-code@" + version + " into ",
			stderrHas: []string{"npm ERR! network down"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			npm := filepath.Join(tmp, "npm")
			require.NoError(t, os.WriteFile(npm, []byte(fakeNPM), 0o755))
			npmLog := filepath.Join(tmp, "npm.log")
			t.Setenv("FAKE_NPM_LOG", npmLog)
			t.Setenv("FAKE_NPM_FAIL", map[bool]string{true: "1"}[tc.npmFails])
			pin := pinnedCLI{version: version, dir: filepath.Join(tmp, "cache", "claude-code-"+version), npm: npm}
			if tc.cached {
				_, err := pin.fetch(&bytes.Buffer{})
				require.NoError(t, err)
				require.NoError(t, os.Remove(npmLog))
			}
			if tc.noNPM {
				pin.npm = ""
			}
			var stderr bytes.Buffer
			cli, err := demoCLI(tc.explicit, tc.find, pin, &stderr)
			calls, _ := os.ReadFile(npmLog)
			if tc.fetches {
				assert.Equal(t, "install --prefix "+pin.dir+" --no-save --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@"+version+"\n", string(calls),
					"scripts/install-cli's npm command, once")
				assert.FileExists(t, pin.dir+".lock", "the script's lock file")
			} else {
				assert.Empty(t, string(calls), "npm ran")
			}
			for _, s := range tc.stderrHas {
				assert.Contains(t, stderr.String(), s)
			}
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			want := tc.want
			if want == "cache" {
				want = filepath.Join(pin.dir, "node_modules", "@anthropic-ai", "claude-code-fake", "claude")
				assert.True(t, strings.HasPrefix(stderr.String(), "claude-rpc demo: no Claude CLI is installed"), stderr.String())
			} else {
				assert.Empty(t, stderr.String())
			}
			assert.Equal(t, want, cli.Path)
			if tc.fetches {
				// The next demo finds it in the cache: no npm.
				require.NoError(t, os.Remove(npmLog))
				again, err := demoCLI("", notFound, pin, &bytes.Buffer{})
				require.NoError(t, err)
				assert.Equal(t, want, again.Path)
				assert.NoFileExists(t, npmLog)
			}
		})
	}
}

// TestPinnedCLIIsTheScripts: demo's pinned CLI is the version
// scripts/install-cli installs by default, in the folder it installs to.
func TestPinnedCLIIsTheScripts(t *testing.T) {
	script, err := os.ReadFile("../../scripts/install-cli")
	require.NoError(t, err)
	assert.Contains(t, string(script), `version="${CLAUDE_CODE_VERSION:-`+claudecli.TestedVersion+`}"`)
	assert.Contains(t, string(script), `dir="$cache/claude-code-$version"`)
	assert.Contains(t, string(script), `exec 9>"$dir.lock"`)
	assert.Contains(t, string(script), `npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error`)
	t.Setenv("CLAUDE_RPC_CACHE", "/c")
	assert.Equal(t, pinnedCLI{version: claudecli.TestedVersion, dir: "/c/claude-code-" + claudecli.TestedVersion, npm: pinned().npm}, pinned())
}

// TestDemoWithoutHome: with HOME empty, demo fetched the CLI into ./.cache
// of the folder it ran in, and npm made a folder named ~ there (npm's
// cache, ~/.npm, with HOME empty). Now it refuses, saying what to set,
// when no cache folder can be named; given one (CLAUDE_RPC_CACHE), npm
// runs there with its cache there. Nothing lands in the working folder.
func TestDemoWithoutHome(t *testing.T) {
	notFound := func(string) (claudecli.Command, error) {
		return claudecli.Command{}, errors.New("claude is not on PATH")
	}
	// npm as npm is about its cache: $NPM_CONFIG_CACHE, else ~/.npm, which
	// is ./~/.npm with HOME empty (npm 10: `HOME= npm config get cache`).
	npmWithCache := "#!/bin/sh\n" + `c="${NPM_CONFIG_CACHE:-${HOME:-$PWD/~}/.npm}"; mkdir -p "$c"; echo "$c" >> "$FAKE_NPM_LOG.cache"` + "\n" + strings.TrimPrefix(fakeNPM, "#!/bin/sh\n")
	for _, cache := range []string{"", "given"} {
		t.Run("cache "+cache, func(t *testing.T) {
			tmp, work := t.TempDir(), t.TempDir()
			npm := filepath.Join(tmp, "npm")
			require.NoError(t, os.WriteFile(npm, []byte(npmWithCache), 0o755))
			t.Setenv("FAKE_NPM_LOG", filepath.Join(tmp, "npm.log"))
			t.Setenv("FAKE_NPM_FAIL", "")
			t.Setenv("HOME", "")
			t.Setenv("XDG_CACHE_HOME", "")
			t.Setenv("CLAUDE_RPC_CACHE", map[string]string{"given": filepath.Join(tmp, "cache")}[cache])
			t.Chdir(work)
			pin := pinned()
			pin.npm = npm
			var stderr bytes.Buffer
			cli, err := demoCLI("", notFound, pin, &stderr)
			if cache == "" {
				require.ErrorContains(t, err, "set HOME, or CLAUDE_RPC_CACHE to an absolute folder")
				assert.NoFileExists(t, filepath.Join(tmp, "npm.log"), "npm ran")
			} else {
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(cli.Path, filepath.Join(tmp, "cache")), cli.Path)
				used, err := os.ReadFile(filepath.Join(tmp, "npm.log.cache"))
				require.NoError(t, err)
				assert.Equal(t, filepath.Join(tmp, "cache", "npm-cache")+"\n", string(used), "npm's cache")
			}
			left, err := os.ReadDir(work)
			require.NoError(t, err)
			assert.Empty(t, left, "the working folder is as it was")
		})
	}
}
