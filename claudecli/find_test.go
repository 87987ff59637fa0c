package claudecli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readShim(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "npm-shims", name))
	require.NoError(t, err)
	return string(b)
}

// discoveryCase is one machine: its OS, environment and files, where the
// CLI should be found (want) or not (errHas: what the error must say).
type discoveryCase struct {
	name     string
	goos     string
	env      []string
	files    map[string]string
	noExec   []string
	explicit string
	want     Command
	errHas   []string
}

func (tc discoveryCase) system() System {
	return System{GOOS: tc.goos, Env: tc.env, FS: newFakeFS(tc.goos, tc.files, tc.noExec...)}
}

func runDiscovery(t *testing.T, cases []discoveryCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.system().FindCLI(tc.explicit)
			if tc.errHas != nil {
				require.ErrorIs(t, err, errNotFound)
				for _, s := range tc.errHas {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFindCLIWindows(t *testing.T) {
	const (
		home    = `C:\Users\Ann`
		appData = home + `\AppData\Roaming`
		npmDir  = appData + `\npm`
		pkg     = npmDir + `\node_modules\@anthropic-ai\claude-code`
	)
	env := func(path string, more ...string) []string {
		return append([]string{"Path=" + path, "PATHEXT=.COM;.EXE;.BAT;.CMD;.VBS;.JS", "USERPROFILE=" + home,
			"APPDATA=" + appData, `LOCALAPPDATA=` + home + `\AppData\Local`, `ProgramFiles=C:\Program Files`,
			`SystemRoot=C:\Windows`}, more...)
	}
	sysPath := `C:\Windows\system32;C:\Windows`
	nativeShim, nodeShim := readShim(t, "global-native.cmd"), readShim(t, "global-node.cmd")
	// npm writes three shims per command: sh, PowerShell and cmd.
	npmGlobal := func(shim string, target string) map[string]string {
		return map[string]string{npmDir + `\claude`: "#!/bin/sh\n", npmDir + `\claude.ps1`: "#!/usr/bin/env pwsh\n",
			npmDir + `\claude.cmd`: shim, target: "MZ"}
	}
	runDiscovery(t, []discoveryCase{
		{
			name: "npm global install: claude.cmd on PATH runs the native claude.exe directly",
			goos: "windows", env: env(sysPath + ";" + npmDir),
			files: npmGlobal(nativeShim, pkg+`\bin\claude.exe`),
			want:  Command{Path: pkg + `\bin\claude.exe`, From: "PATH", Shim: npmDir + `\claude.cmd`},
		},
		{
			name: "npm global install of a Node.js CLI: node.exe on PATH runs cli.js",
			goos: "windows", env: env(sysPath + `;C:\Program Files\nodejs;` + npmDir),
			files: merge(npmGlobal(nodeShim, pkg+`\cli.js`), map[string]string{`C:\Program Files\nodejs\node.exe`: "MZ"}),
			want:  Command{Path: `C:\Program Files\nodejs\node.exe`, Args: []string{pkg + `\cli.js`}, From: "PATH", Shim: npmDir + `\claude.cmd`},
		},
		{
			name: "a Node.js shim prefers the node.exe beside it, as the shim does",
			goos: "windows", env: env(`C:\Program Files\nodejs;C:\other`),
			files: map[string]string{`C:\Program Files\nodejs\claude.cmd`: nodeShim, `C:\Program Files\nodejs\node.exe`: "MZ",
				`C:\Program Files\nodejs\node_modules\@anthropic-ai\claude-code\cli.js`: "#!/usr/bin/env node", `C:\other\node.exe`: "MZ"},
			want: Command{Path: `C:\Program Files\nodejs\node.exe`, Args: []string{`C:\Program Files\nodejs\node_modules\@anthropic-ai\claude-code\cli.js`},
				From: "PATH", Shim: `C:\Program Files\nodejs\claude.cmd`},
		},
		{
			name: "a Node.js shim without Node.js is skipped, with the reason",
			goos: "windows", env: env(npmDir),
			files:  npmGlobal(nodeShim, pkg+`\cli.js`),
			errHas: []string{npmDir + `\claude.cmd`, "install Node.js"},
		},
		{
			name: "PATHEXT order: claude.exe before claude.cmd in one folder",
			goos: "windows", env: env(`C:\tools`),
			files: map[string]string{`C:\tools\claude.cmd`: "@echo off\r\n", `C:\tools\claude.exe`: "MZ"},
			want:  Command{Path: `C:\tools\claude.exe`, From: "PATH"},
		},
		{
			name: "PATH order across folders, names in any case",
			goos: "windows", env: env(`C:\First;C:\second`),
			files: map[string]string{`C:\first\CLAUDE.EXE`: "MZ", `C:\Second\claude.exe`: "MZ"},
			want:  Command{Path: `C:\First\claude.exe`, From: "PATH"},
		},
		{
			name: "the sh and ps1 shims are never run",
			goos: "windows", env: env(npmDir),
			files:  map[string]string{npmDir + `\claude`: "#!/bin/sh\n", npmDir + `\claude.ps1`: "#!/usr/bin/env pwsh\n"},
			errHas: []string{"not on PATH"},
		},
		{
			name: "native installer, not on PATH",
			goos: "windows", env: env(sysPath),
			files: map[string]string{home + `\.local\bin\claude.exe`: "MZ"},
			want:  Command{Path: home + `\.local\bin\claude.exe`, From: "the native installer's ~/.local/bin"},
		},
		{
			name: "npm global prefix not on PATH (a host started without the user's PATH)",
			goos: "windows", env: env(sysPath),
			files: npmGlobal(nativeShim, pkg+`\bin\claude.exe`),
			want:  Command{Path: pkg + `\bin\claude.exe`, From: `npm's global prefix (%APPDATA%\npm)`, Shim: npmDir + `\claude.cmd`},
		},
		{
			name: "NPM_CONFIG_PREFIX",
			goos: "windows", env: env(sysPath, `npm_config_prefix=D:\npm`),
			files: map[string]string{`D:\npm\claude.cmd`: nativeShim, `D:\npm\node_modules\@anthropic-ai\claude-code\bin\claude.exe`: "MZ"},
			want: Command{Path: `D:\npm\node_modules\@anthropic-ai\claude-code\bin\claude.exe`, From: "npm's global prefix (NPM_CONFIG_PREFIX)",
				Shim: `D:\npm\claude.cmd`},
		},
		{
			name: "a user's own batch file on PATH is skipped for a real CLI elsewhere",
			goos: "windows", env: env(`C:\Users\Ann\AppData\Local\Volta\bin;` + sysPath),
			files: map[string]string{home + `\AppData\Local\Volta\bin\claude.cmd`: "@echo off\r\nvolta run claude %*\r\n",
				home + `\.local\bin\claude.exe`: "MZ"},
			want: Command{Path: home + `\.local\bin\claude.exe`, From: "the native installer's ~/.local/bin"},
		},
		{
			name: "Volta's package image holds npm's shim",
			goos: "windows", env: env(sysPath),
			files: map[string]string{
				home + `\AppData\Local\Volta\tools\image\packages\@anthropic-ai\claude-code\claude.cmd`:                                            nativeShim,
				home + `\AppData\Local\Volta\tools\image\packages\@anthropic-ai\claude-code\node_modules\@anthropic-ai\claude-code\bin\claude.exe`: "MZ"},
			want: Command{Path: home + `\AppData\Local\Volta\tools\image\packages\@anthropic-ai\claude-code\node_modules\@anthropic-ai\claude-code\bin\claude.exe`,
				From: "Volta", Shim: home + `\AppData\Local\Volta\tools\image\packages\@anthropic-ai\claude-code\claude.cmd`},
		},
		{
			name: "~/.claude/local: node_modules\\.bin's shim points up a folder",
			goos: "windows", env: env(sysPath),
			files: map[string]string{home + `\.claude\local\node_modules\.bin\claude.cmd`: readShim(t, "local-native.cmd"),
				home + `\.claude\local\node_modules\@anthropic-ai\claude-code\bin\claude.exe`: "MZ"},
			want: Command{Path: home + `\.claude\local\node_modules\@anthropic-ai\claude-code\bin\claude.exe`,
				From: "the local install in ~/.claude/local", Shim: home + `\.claude\local\node_modules\.bin\claude.cmd`},
		},
		{
			name: "a shim whose target was removed",
			goos: "windows", env: env(npmDir),
			files:  map[string]string{npmDir + `\claude.cmd`: nativeShim},
			errHas: []string{"does not exist (reinstall the CLI)"},
		},
		{
			name: "--claude-path to npm's shim is resolved too",
			goos: "windows", env: env(sysPath), explicit: npmDir + `\claude.cmd`,
			files: npmGlobal(nativeShim, pkg+`\bin\claude.exe`),
			want:  Command{Path: pkg + `\bin\claude.exe`, From: "--claude-path", Shim: npmDir + `\claude.cmd`},
		},
		{
			name: "--claude-path without extension takes PATHEXT's",
			goos: "windows", env: env(sysPath), explicit: `D:\claude\claude`,
			files: map[string]string{`D:\claude\claude.exe`: "MZ"},
			want:  Command{Path: `D:\claude\claude.exe`, From: "--claude-path"},
		},
		{
			name: "--claude-path to a user's batch file is refused",
			goos: "windows", env: env(sysPath), explicit: `D:\wrap.bat`,
			files:  map[string]string{`D:\wrap.bat`: "@echo off\r\nclaude %*\r\n"},
			errHas: []string{`--claude-path "D:\\wrap.bat"`, "never runs batch files through cmd.exe"},
		},
		{
			name: "nothing installed: where it looked and how to install",
			goos: "windows", env: env(sysPath),
			errHas: []string{"not on PATH (" + sysPath + ")", home + `\.local\bin\claude`, npmDir + `\claude`,
				"irm https://claude.ai/install.ps1 | iex", "npm install -g @anthropic-ai/claude-code", "--claude-path"},
		},
	})
}

func TestFindCLIMacOS(t *testing.T) {
	const home = "/Users/ann"
	// What a desktop app started from the Dock gets: no shell profile.
	launchd := []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + home}
	runDiscovery(t, []discoveryCase{
		{
			name: "on PATH", goos: "darwin", env: []string{"PATH=/usr/bin:/opt/homebrew/bin", "HOME=" + home},
			files: map[string]string{"/opt/homebrew/bin/claude": "", home + "/.local/bin/claude": ""},
			want:  Command{Path: "/opt/homebrew/bin/claude", From: "PATH"},
		},
		{
			name: "Homebrew on Apple silicon, PATH without it", goos: "darwin", env: launchd,
			files: map[string]string{"/opt/homebrew/bin/claude": ""},
			want:  Command{Path: "/opt/homebrew/bin/claude", From: "Homebrew"},
		},
		{
			name: "Homebrew on Intel, or npm's default prefix", goos: "darwin", env: launchd,
			files: map[string]string{"/usr/local/bin/claude": ""},
			want:  Command{Path: "/usr/local/bin/claude", From: "Homebrew, or npm's default prefix"},
		},
		{
			name: "the native installer comes before the others", goos: "darwin", env: launchd,
			files: map[string]string{"/opt/homebrew/bin/claude": "", home + "/.local/bin/claude": ""},
			want:  Command{Path: home + "/.local/bin/claude", From: "the native installer's ~/.local/bin"},
		},
		{
			name: "nvm: the newest Node.js with the CLI", goos: "darwin", env: launchd,
			files: map[string]string{
				home + "/.nvm/versions/node/v9.11.2/bin/claude":  "",
				home + "/.nvm/versions/node/v22.11.0/bin/node":   "",
				home + "/.nvm/versions/node/v20.18.1/bin/claude": "",
				home + "/.nvm/versions/node/v18.20.4/bin/claude": "",
			},
			want: Command{Path: home + "/.nvm/versions/node/v20.18.1/bin/claude", From: "nvm's Node.js v20.18.1"},
		},
		{
			name: "Volta's shim", goos: "darwin", env: launchd,
			files: map[string]string{home + "/.volta/bin/claude": ""},
			want:  Command{Path: home + "/.volta/bin/claude", From: "Volta"},
		},
		{
			name: "a file that is not executable is passed over", goos: "darwin", env: []string{"PATH=/a:/b", "HOME=" + home},
			files: map[string]string{"/a/claude": "", "/b/claude": ""}, noExec: []string{"/a/claude"},
			want: Command{Path: "/b/claude", From: "PATH"},
		},
		{
			name: "nothing installed", goos: "darwin", env: launchd,
			errHas: []string{"not on PATH (/usr/bin:/bin:/usr/sbin:/sbin)", home + "/.local/bin/claude", "/opt/homebrew/bin/claude",
				"curl -fsSL https://claude.ai/install.sh | bash", "npm install -g @anthropic-ai/claude-code"},
		},
	})
}

func TestFindCLILinux(t *testing.T) {
	const home = "/home/ann"
	bare := []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	runDiscovery(t, []discoveryCase{
		{
			name: "on PATH", goos: "linux", env: []string{"PATH=/usr/bin:" + home + "/.local/bin", "HOME=" + home},
			files: map[string]string{home + "/.local/bin/claude": ""},
			want:  Command{Path: home + "/.local/bin/claude", From: "PATH"},
		},
		{
			name: "the old local install", goos: "linux", env: bare,
			files: map[string]string{home + "/.claude/local/claude": "#!/bin/bash\n"},
			want:  Command{Path: home + "/.claude/local/claude", From: "the local install in ~/.claude/local"},
		},
		{
			name: "npm prefix from ~/.npmrc", goos: "linux", env: bare,
			files: map[string]string{home + "/.npmrc": "registry=https://registry.npmjs.org/\nprefix = ${HOME}/.npm-packages\n",
				home + "/.npm-packages/bin/claude": ""},
			want: Command{Path: home + "/.npm-packages/bin/claude", From: "npm's global prefix (~/.npmrc)"},
		},
		{
			name: "NPM_CONFIG_PREFIX", goos: "linux", env: append(bare, "NPM_CONFIG_PREFIX=/opt/npm"),
			files: map[string]string{"/opt/npm/bin/claude": ""},
			want:  Command{Path: "/opt/npm/bin/claude", From: "npm's global prefix (NPM_CONFIG_PREFIX)"},
		},
		{
			name: "~/.npm-global", goos: "linux", env: bare,
			files: map[string]string{home + "/.npm-global/bin/claude": ""},
			want:  Command{Path: home + "/.npm-global/bin/claude", From: "npm's global prefix (~/.npm-global)"},
		},
		{
			name: "Linuxbrew", goos: "linux", env: bare,
			files: map[string]string{"/home/linuxbrew/.linuxbrew/bin/claude": ""},
			want:  Command{Path: "/home/linuxbrew/.linuxbrew/bin/claude", From: "Homebrew"},
		},
		{
			name: "NVM_BIN", goos: "linux", env: append(bare, "NVM_BIN=/srv/node/bin"),
			files: map[string]string{"/srv/node/bin/claude": ""},
			want:  Command{Path: "/srv/node/bin/claude", From: "nvm (NVM_BIN)"},
		},
		{
			name: "--claude-path as a name on PATH", goos: "linux", env: []string{"PATH=/opt/x", "HOME=" + home}, explicit: "claude-2",
			files: map[string]string{"/opt/x/claude-2": ""},
			want:  Command{Path: "/opt/x/claude-2", From: "--claude-path"},
		},
		{
			name: "--claude-path is the only place looked", goos: "linux", env: []string{"PATH=/opt/x", "HOME=" + home}, explicit: "/nonexistent/claude",
			files:  map[string]string{"/opt/x/claude": ""},
			errHas: []string{`--claude-path "/nonexistent/claude": no such file`},
		},
		{
			name: "--claude-path to a folder", goos: "linux", env: bare, explicit: "/opt/claude",
			files:  map[string]string{"/opt/claude/claude": ""},
			errHas: []string{`"/opt/claude": a folder`},
		},
		{
			name: "--claude-path not executable", goos: "linux", env: bare, explicit: "/opt/claude",
			files: map[string]string{"/opt/claude": ""}, noExec: []string{"/opt/claude"},
			errHas: []string{`"/opt/claude": not an executable file`},
		},
		{
			name: "no HOME: the places under it are not guessed", goos: "linux", env: []string{"PATH=/usr/bin"},
			errHas: []string{"not on PATH (/usr/bin) nor in /usr/local/bin/claude, /home/linuxbrew/.linuxbrew/bin/claude."},
		},
	})
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestTestedVersion keeps TestedVersion (doctor warns about others) and the
// version scripts/install-cli pins for the tests the same.
func TestTestedVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "scripts", "install-cli"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `version="${CLAUDE_CODE_VERSION:-`+TestedVersion+`}"`)
}
