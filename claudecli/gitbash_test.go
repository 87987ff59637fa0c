package claudecli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitForWindows is a Git for Windows install in root, as its installer
// lays it out: cmd\git.exe is what it puts on PATH.
func gitForWindows(root string) map[string]string {
	return map[string]string{
		root + `\cmd\git.exe`:           "MZ",
		root + `\bin\git.exe`:           "MZ",
		root + `\bin\bash.exe`:          "MZ",
		root + `\bin\sh.exe`:            "MZ",
		root + `\usr\bin\bash.exe`:      "MZ",
		root + `\mingw64\bin\git.exe`:   "MZ",
		root + `\git-bash.exe`:          "MZ",
		root + `\etc\gitconfig`:         "",
		root + `\mingw64\share\doc\x`:   "",
		root + `\usr\bin\msys-2.0.dll`:  "",
		root + `\cmd\git-gui.exe`:       "MZ",
		root + `\mingw64\bin\curl.exe`:  "MZ",
		root + `\usr\share\bash\bashrc`: "",
	}
}

// wsl is what WSL puts on a machine: launchers in System32 (on PATH) and
// the Store's aliases.
var wsl = map[string]string{
	`C:\Windows\System32\bash.exe`:                                "MZ",
	`C:\Windows\System32\wsl.exe`:                                 "MZ",
	`C:\Users\Ann\AppData\Local\Microsoft\WindowsApps\bash.exe`:   "",
	`C:\Users\Ann\AppData\Local\Microsoft\WindowsApps\ubuntu.exe`: "",
}

func TestFindGitBash(t *testing.T) {
	const home = `C:\Users\Ann`
	sysPath := `C:\Windows\System32;C:\Windows;` + home + `\AppData\Local\Microsoft\WindowsApps`
	env := func(path string, more ...string) []string {
		return append([]string{"Path=" + path, "USERPROFILE=" + home, `LOCALAPPDATA=` + home + `\AppData\Local`,
			`ProgramFiles=C:\Program Files`, `ProgramFiles(x86)=C:\Program Files (x86)`, `ProgramW6432=C:\Program Files`,
			`ProgramData=C:\ProgramData`, `SystemRoot=C:\Windows`, "PATHEXT=.COM;.EXE;.BAT;.CMD"}, more...)
	}
	for _, tc := range []struct {
		name   string
		env    []string
		files  map[string]string
		want   string
		errHas []string
	}{
		{
			name: "Git for Windows, the installer's defaults", env: env(sysPath + `;C:\Program Files\Git\cmd`),
			files: merge(gitForWindows(`C:\Program Files\Git`), wsl),
			want:  `C:\Program Files\Git\bin\bash.exe`,
		},
		{
			name: "WSL installed, Git not: WSL's bash is never taken", env: env(sysPath),
			files:  wsl,
			errHas: []string{"Install Git for Windows (https://git-scm.com/downloads/win)", `C:\Program Files\Git`, "WSL's excepted"},
		},
		{
			name: "WSL's bash first on PATH, Git's bin later", env: env(sysPath + `;D:\Git\bin`),
			files: merge(wsl, map[string]string{`D:\Git\bin\bash.exe`: "MZ"}),
			want:  `D:\Git\bin\bash.exe`,
		},
		{
			name: "Program Files, git not on PATH", env: env(sysPath),
			files: merge(gitForWindows(`C:\Program Files\Git`), wsl),
			want:  `C:\Program Files\Git\bin\bash.exe`,
		},
		{
			name: "32-bit Git in Program Files (x86)", env: env(sysPath),
			files: gitForWindows(`C:\Program Files (x86)\Git`),
			want:  `C:\Program Files (x86)\Git\bin\bash.exe`,
		},
		{
			name: "Program Files on another drive", env: env(sysPath, `ProgramW6432=D:\Programs`, `ProgramFiles=D:\Programs`),
			files: gitForWindows(`D:\Programs\Git`),
			want:  `D:\Programs\Git\bin\bash.exe`,
		},
		{
			name: "per-user install (%LOCALAPPDATA%\\Programs\\Git)", env: env(sysPath),
			files: gitForWindows(home + `\AppData\Local\Programs\Git`),
			want:  home + `\AppData\Local\Programs\Git\bin\bash.exe`,
		},
		{
			name: "Scoop, not on PATH", env: env(sysPath),
			files: gitForWindows(home + `\scoop\apps\git\current`),
			want:  home + `\scoop\apps\git\current\bin\bash.exe`,
		},
		{
			name: "Scoop's shim on PATH is followed to the real git.exe", env: env(sysPath+`;D:\scoop\shims`, `SCOOP=D:\elsewhere`),
			files: merge(gitForWindows(`D:\scoop\apps\git\2.47.1`), map[string]string{
				`D:\scoop\shims\git.exe`:  "MZ",
				`D:\scoop\shims\git.shim`: "path = \"D:\\scoop\\apps\\git\\2.47.1\\cmd\\git.exe\"\r\n",
			}),
			want: `D:\scoop\apps\git\2.47.1\bin\bash.exe`,
		},
		{
			name: "global Scoop (SCOOP_GLOBAL)", env: env(sysPath, `SCOOP_GLOBAL=E:\scoop-global`),
			files: gitForWindows(`E:\scoop-global\apps\git\current`),
			want:  `E:\scoop-global\apps\git\current\bin\bash.exe`,
		},
		{
			name: "PortableGit's cmd\\git.exe on PATH", env: env(sysPath + `;D:\tools\PortableGit\cmd`),
			files: merge(gitForWindows(`D:\tools\PortableGit`), gitForWindows(`C:\Program Files\Git`)),
			want:  `D:\tools\PortableGit\bin\bash.exe`,
		},
		{
			name: "mingw64\\bin\\git.exe on PATH", env: env(sysPath + `;D:\Git\mingw64\bin`),
			files: gitForWindows(`D:\Git`),
			want:  `D:\Git\bin\bash.exe`,
		},
		{
			name: "a Git with only usr\\bin\\bash.exe", env: env(sysPath + `;D:\Git\cmd`),
			files: map[string]string{`D:\Git\cmd\git.exe`: "MZ", `D:\Git\usr\bin\bash.exe`: "MZ"},
			want:  `D:\Git\usr\bin\bash.exe`,
		},
		{
			name: "MinGit (no bash) on PATH, full Git in Program Files", env: env(sysPath + `;D:\MinGit\cmd`),
			files: merge(map[string]string{`D:\MinGit\cmd\git.exe`: "MZ", `D:\MinGit\mingw64\bin\git.exe`: "MZ"}, gitForWindows(`C:\Program Files\Git`)),
			want:  `C:\Program Files\Git\bin\bash.exe`,
		},
		{
			name: "CLAUDE_CODE_GIT_BASH_PATH wins", env: env(sysPath+`;C:\Program Files\Git\cmd`, `CLAUDE_CODE_GIT_BASH_PATH=D:\msys64\usr\bin\bash.exe`),
			files: merge(gitForWindows(`C:\Program Files\Git`), map[string]string{`D:\msys64\usr\bin\bash.exe`: "MZ"}),
			want:  `D:\msys64\usr\bin\bash.exe`,
		},
		{
			name: "CLAUDE_CODE_GIT_BASH_PATH that does not exist", env: env(sysPath, `CLAUDE_CODE_GIT_BASH_PATH=D:\Git\bin\bash.exe`),
			files:  gitForWindows(`C:\Program Files\Git`),
			errHas: []string{`CLAUDE_CODE_GIT_BASH_PATH=D:\Git\bin\bash.exe does not exist`},
		},
		{
			name: "CLAUDE_CODE_GIT_BASH_PATH naming WSL's bash", env: env(sysPath, `CLAUDE_CODE_GIT_BASH_PATH=C:\WINDOWS\system32\bash.exe`),
			files:  wsl,
			errHas: []string{"is WSL's bash"},
		},
		{
			name: "CLAUDE_CODE_GIT_BASH_PATH naming git.exe", env: env(sysPath, `CLAUDE_CODE_GIT_BASH_PATH=C:\Program Files\Git\cmd\git.exe`),
			files:  gitForWindows(`C:\Program Files\Git`),
			errHas: []string{"is not a bash.exe"},
		},
		{
			name: "nothing at all", env: env(sysPath),
			errHas: []string{`C:\Program Files\Git`, `C:\Program Files (x86)\Git`, home + `\AppData\Local\Programs\Git`, home + `\scoop\apps\git\current`,
				`C:\ProgramData\scoop\apps\git\current`, "CLAUDE_CODE_GIT_BASH_PATH", "no Bash tool"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := System{GOOS: "windows", Env: tc.env, FS: newFakeFS("windows", tc.files)}
			got, err := s.FindGitBash()
			if tc.errHas != nil {
				require.ErrorIs(t, err, errNoGitBash)
				for _, e := range tc.errHas {
					assert.Contains(t, err.Error(), e)
				}
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFindGitBashElsewhere(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		s := System{GOOS: goos, Env: []string{"PATH=/bin"}, FS: newFakeFS(goos, map[string]string{"/bin/bash": ""})}
		got, err := s.FindGitBash()
		assert.NoError(t, err)
		assert.Empty(t, got, "the CLI needs no Git Bash on %s", goos)
	}
}

func TestEnvironGitBash(t *testing.T) {
	files := gitForWindows(`C:\Program Files\Git`)
	win := func(env ...string) System {
		return System{GOOS: "windows", Env: env, FS: newFakeFS("windows", files)}
	}
	assert.Equal(t, []string{`Path=C:\Windows`, "CLAUDE_CODE_ENTRYPOINT=" + entrypoint, `CLAUDE_CODE_GIT_BASH_PATH=C:\Program Files\Git\bin\bash.exe`},
		environ(win(`Path=C:\Windows`, "CLAUDECODE=1")), "found, so passed on")
	assert.Equal(t, []string{`CLAUDE_CODE_GIT_BASH_PATH=D:\bash.exe`, "CLAUDE_CODE_ENTRYPOINT=" + entrypoint},
		environ(win(`CLAUDE_CODE_GIT_BASH_PATH=D:\bash.exe`)), "the user's own is left alone")
	assert.Equal(t, []string{`Path=C:\Windows`, "CLAUDE_CODE_ENTRYPOINT=" + entrypoint},
		environ(System{GOOS: "windows", Env: []string{`Path=C:\Windows`}, FS: newFakeFS("windows", wsl)}), "none found: the CLI's own search decides")
	assert.Equal(t, []string{"PATH=/bin", "CLAUDE_CODE_ENTRYPOINT=" + entrypoint},
		environ(System{GOOS: "linux", Env: []string{"PATH=/bin"}, FS: newFakeFS("linux", nil)}))
}
