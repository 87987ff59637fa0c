package claudecli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// GitBashEnv is the variable that tells the CLI on Windows which bash.exe
// to run its Bash tool with.
const GitBashEnv = "CLAUDE_CODE_GIT_BASH_PATH"

// errNoGitBash means no Git for Windows bash.exe could be found.
var errNoGitBash = errors.New("no Git Bash found")

// On Windows the CLI runs its Bash tool with Git for Windows' bash.exe.
// The CLI (2.1.328) takes CLAUDE_CODE_GIT_BASH_PATH when that names an
// existing bash.exe (or sh.exe), else looks only in C:\Program Files\Git and
// C:\Program Files (x86)\Git and beside git.exe on PATH (..\..\bin\bash.exe);
// without one it runs with no Bash tool. Per-user installs, Scoop, another
// drive and PortableGit's mingw64 layout are missed, so the bridge looks
// wider and passes what it finds as CLAUDE_CODE_GIT_BASH_PATH.

// FindGitBash returns Git for Windows' bash.exe on a windows System ("" and
// no error elsewhere, where the CLI uses the system's shell). It looks, in
// order, at:
//
//   - CLAUDE_CODE_GIT_BASH_PATH: when set, it must name an existing bash.exe
//     or sh.exe that is not WSL's, or FindGitBash fails (the user chose).
//   - git.exe on PATH, each in turn: Git\cmd\git.exe, Git\bin\git.exe and
//     Git\mingw64\bin\git.exe all mean Git\bin\bash.exe; a Scoop shim
//     (scoop\shims\git.exe beside git.shim) is followed to the real one.
//   - Git in both Program Files folders (ProgramW6432, ProgramFiles,
//     ProgramFiles(x86)), per user (%LOCALAPPDATA%\Programs\Git), and
//     Scoop's apps\git\current (SCOOP, ~\scoop; SCOOP_GLOBAL,
//     %ProgramData%\scoop).
//   - bash.exe on PATH.
//
// In a Git folder bin\bash.exe is preferred to usr\bin\bash.exe. WSL's
// launchers (C:\Windows\System32\bash.exe, anything under %SystemRoot% or
// WindowsApps, wsl.exe) are never returned: they run Linux, where Windows
// paths mean nothing. The error says where FindGitBash looked.
func (s System) FindGitBash() (string, error) {
	if !s.windows() {
		return "", nil
	}
	if v := s.Getenv(GitBashEnv); v != "" {
		switch base := strings.ToLower(s.base(v)); {
		case base != "bash.exe" && base != "sh.exe" && base != "bash" && base != "sh":
			return "", fmt.Errorf("%w: %s=%s is not a bash.exe", errNoGitBash, GitBashEnv, v)
		case s.isWSL(v):
			return "", fmt.Errorf("%w: %s=%s is WSL's bash, which runs Linux; point it at Git for Windows' bash.exe", errNoGitBash, GitBashEnv, v)
		case !s.exists(v):
			return "", fmt.Errorf("%w: %s=%s does not exist", errNoGitBash, GitBashEnv, v)
		}
		return v, nil
	}
	var looked []string
	for _, git := range s.lookPathAll("git") {
		if s.ext(git) != ".exe" {
			continue
		}
		if real := s.scoopShimTarget(git); real != "" {
			git = real
		}
		// cmd\git.exe, bin\git.exe: the Git folder is two up from the
		// file; mingw64\bin\git.exe (and clangarm64\bin): three.
		gitDir := s.dir(git)
		for _, root := range []string{s.dir(gitDir), s.dir(s.dir(gitDir))} {
			if b, ok := s.bashIn(root); ok {
				return b, nil
			}
		}
		looked = append(looked, "beside "+git)
	}
	for _, root := range s.gitRoots() {
		if b, ok := s.bashIn(root); ok {
			return b, nil
		}
		looked = append(looked, root)
	}
	for _, b := range s.lookPathAll("bash") {
		if s.ext(b) == ".exe" && !s.isWSL(b) {
			return b, nil
		}
	}
	looked = append(looked, "bash.exe on PATH (WSL's excepted)")
	return "", fmt.Errorf("%w: looked %s. Install Git for Windows (https://git-scm.com/downloads/win) or set %s to its bash.exe; without it the CLI has no Bash tool",
		errNoGitBash, strings.Join(looked, ", "), GitBashEnv)
}

// bashIn returns the bash.exe of the Git folder root.
func (s System) bashIn(root string) (string, bool) {
	if root == "" || root == "." {
		return "", false
	}
	for _, b := range []string{s.join(root, "bin", "bash.exe"), s.join(root, "usr", "bin", "bash.exe")} {
		if s.exists(b) && !s.isWSL(b) {
			return b, true
		}
	}
	return "", false
}

// gitRoots are the folders Git for Windows installs into.
func (s System) gitRoots() []string {
	var roots []string
	add := func(elem ...string) {
		if elem[0] == "" {
			return
		}
		r := s.join(elem...)
		for _, q := range roots {
			if s.samePath(q, r) {
				return
			}
		}
		roots = append(roots, r)
	}
	// A 32-bit process sees ProgramFiles as the x86 folder; ProgramW6432
	// is the 64-bit one whatever the process.
	add(s.Getenv("ProgramW6432"), "Git")
	add(s.envOr("ProgramFiles", `C:\Program Files`), "Git")
	add(s.envOr("ProgramFiles(x86)", `C:\Program Files (x86)`), "Git")
	add(s.Getenv("LOCALAPPDATA"), "Programs", "Git")
	add(s.envOr("SCOOP", s.join(s.home(), "scoop")), "apps", "git", "current")
	add(s.envOr("SCOOP_GLOBAL", s.join(s.envOr("ProgramData", `C:\ProgramData`), "scoop")), "apps", "git", "current")
	return roots
}

// scoopPathRE reads the target of a Scoop shim: path = "C:\…\git.exe".
var scoopPathRE = regexp.MustCompile(`(?m)^\s*path\s*=\s*"?([^"\r\n]+?)"?\s*$`)

// scoopShimTarget returns the program a Scoop shim exe runs (Scoop writes
// NAME.shim beside NAME.exe), or "" when exe is not one.
func (s System) scoopShimTarget(exe string) string {
	b, err := s.FS.ReadFile(exe[:len(exe)-len(".exe")] + ".shim")
	if err != nil {
		return ""
	}
	m := scoopPathRE.FindSubmatch(b)
	if m == nil || !s.isAbs(string(m[1])) {
		return ""
	}
	return string(m[1])
}

// isWSL reports whether p is one of WSL's launchers rather than a Windows
// program: anything under %SystemRoot% (System32\bash.exe, wsl.exe,
// SysWOW64, Sysnative), the Store's WindowsApps aliases (ubuntu.exe,
// bash.exe), or a program named wsl.exe.
func (s System) isWSL(p string) bool {
	p = strings.ToLower(s.clean(p))
	root := strings.ToLower(s.clean(s.envOr("SystemRoot", `C:\Windows`)))
	if strings.HasPrefix(p, root+`\`) || strings.Contains(p, `\windowsapps\`) {
		return true
	}
	b := s.base(p)
	return b == "wsl.exe" || b == "wslg.exe"
}
