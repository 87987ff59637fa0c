package claudecli

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "regenerate testdata/npm-shims with npm's own cmd-shim")

// npmShims are the fixtures in testdata/npm-shims: npm's cmd-shim run (by
// -update) on a target as npm lays it out, from the shim's folder.
var npmShims = []struct {
	file string
	// target is what the shim runs, relative to its folder; script marks
	// a "#!/usr/bin/env node" target (else a native executable).
	target string
	script bool
}{
	// npm install -g: %APPDATA%\npm\claude.cmd, 2.x ships a native claude.exe.
	{"global-native.cmd", `node_modules/@anthropic-ai/claude-code/bin/claude.exe`, false},
	// npm install -g of a 1.x, whose bin was cli.js.
	{"global-node.cmd", `node_modules/@anthropic-ai/claude-code/cli.js`, true},
	// A project's (or ~/.claude/local's) node_modules\.bin\claude.cmd.
	{"local-native.cmd", `../@anthropic-ai/claude-code/bin/claude.exe`, false},
}

// generateShims writes the fixtures with the cmd-shim that npm on this
// machine bundles, so they are what npm writes, not what we think it does.
func generateShims(t *testing.T) {
	root, err := exec.Command("npm", "root", "-g").Output()
	require.NoError(t, err, "npm is needed to regenerate the shims")
	cmdShim := filepath.Join(strings.TrimSpace(string(root)), "npm", "node_modules", "cmd-shim")
	tmp := t.TempDir()
	for _, sh := range npmShims {
		dir := filepath.Join(tmp, strings.TrimSuffix(sh.file, ".cmd"))
		target := filepath.Join(dir, filepath.FromSlash(sh.target))
		if strings.HasPrefix(sh.target, "../") { // the shim sits in node_modules/.bin
			dir = filepath.Join(dir, "node_modules", ".bin")
			target = filepath.Join(dir, filepath.FromSlash(sh.target))
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
		body := "MZ native\n"
		if sh.script {
			body = "#!/usr/bin/env node\nconsole.log('cli')\n"
		}
		require.NoError(t, os.WriteFile(target, []byte(body), 0o755))
		js := `require(process.argv[1])(process.argv[2], process.argv[3]).catch(e => { console.error(e); process.exit(1) })`
		out, err := exec.Command("node", "-e", js, cmdShim, target, filepath.Join(dir, "claude")).CombinedOutput()
		require.NoError(t, err, "%s", out)
		b, err := os.ReadFile(filepath.Join(dir, "claude.cmd"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "npm-shims", sh.file), b, 0o644))
	}
}

func TestParseNpmShims(t *testing.T) {
	if *update {
		generateShims(t)
	}
	for _, sh := range npmShims {
		t.Run(sh.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "npm-shims", sh.file))
			require.NoError(t, err, "go test ./claudecli -run TestParseNpmShims -update writes it")
			target, prog, ok := parseShim(string(b))
			require.True(t, ok)
			assert.Equal(t, strings.ReplaceAll(sh.target, "/", `\`), target)
			if sh.script {
				assert.Equal(t, "node", prog)
			} else {
				assert.Empty(t, prog)
			}
		})
	}
}

func TestParseShimOtherForms(t *testing.T) {
	for _, tc := range []struct {
		name, text   string
		target, prog string
		ok           bool
	}{
		{
			name: "npm 6's cmd-shim: %~dp0, the interpreter on the line",
			text: "@IF EXIST \"%~dp0\\node.exe\" (\r\n  \"%~dp0\\node.exe\"  \"%~dp0\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n) ELSE (\r\n" +
				"  @SETLOCAL\r\n  @SET PATHEXT=%PATHEXT:;.JS;=;%\r\n  node  \"%~dp0\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n)",
			target: `node_modules\@anthropic-ai\claude-code\cli.js`, ok: true,
		},
		{name: "a wrapper of the user's own", text: "@echo off\r\nvolta run claude %*\r\n"},
		{name: "no command line", text: "@echo off\r\nSET dp0=%~dp0\r\n"},
		{name: "a target with another variable", text: "\"%dp0%\\%CLAUDE%\\claude.exe\" %*\r\n"},
		{name: "empty", text: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, prog, ok := parseShim(tc.text)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.target, target)
			assert.Equal(t, tc.prog, prog)
		})
	}
}
