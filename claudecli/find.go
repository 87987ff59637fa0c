// Package claudecli finds and runs the Claude Code CLI. It knows the CLI's
// flags, environment and stream-json input format, and owns the lifecycle of
// its processes (process groups, the stop ladder, stderr); it knows nothing
// of the pi RPC protocol.
//
// # What ends with a CLI process
//
// When a CLI process ends, however it ends (its own exit, an abort, SIGKILL
// from outside, the bridge stopping it), what it started ends too, before
// [cliProcess.Done] is closed (within a bounded time, 2 s), as far as the OS
// allows:
//
//   - Linux, once [EnableReaper] has run (claude-rpc's rpc mode): the bridge
//     is a child subreaper, so what the CLI leaves (its Bash commands, each
//     in a session of its own, and whatever they started) is re-parented to
//     it; the reaper SIGKILLs every such orphan whose [ownerEnv] names a
//     child that has ended, with its process group, and reaps it, and so on
//     down (their own children come to the bridge in turn). The reaper is
//     the one owner of orphans: it never waits for a child os/exec started
//     (a registry, kept under a lock that a sweep takes, tells them apart),
//     so every child must be started by a [Transport] or [RunCommand]. The
//     host's bash command is started with [KeepOrphans]: what it puts in the
//     background runs on, as in pi, and is reaped when it exits. So is an
//     orphan whose environment names no child of this bridge's: one that
//     removed [ownerEnv] escapes (the CLI's Bash commands keep it), and so
//     does, with the bridge as pid 1 of a container, what is not the
//     bridge's.
//   - Every Unix: the CLI's process group is SIGKILLed when it has exited.
//     On macOS a command that left the group (the CLI's Bash commands all do)
//     escapes: nothing re-parents it to the bridge.
//   - Windows: each CLI runs in a Job Object that kills every process in it
//     when the job closes, which it does when the CLI has exited.
//
// When the bridge itself is SIGKILLed, Linux ends each CLI process (its
// parent-death signal), and what the CLI started is re-parented to pid 1
// (or the host's subreaper): nothing the dead bridge holds can end it. Its
// watchdog ([StartWatchdog], Linux) can: a small process of the bridge's
// own executable, in a process group of its own, whose stdin reaches EOF
// when the bridge's process ends; it then SIGKILLs every process whose
// [ownerEnv] names one of the bridge's children (within 3 s), the host's
// bash command's background jobs aside (they run on). What is left
// then: a process that removed [ownerEnv] from its environment; everything,
// if the watchdog was killed too (a kill of the whole process tree, or of
// every process of the user). On Windows the Job Object's last handle
// closes with the bridge, which ends every CLI process tree. On macOS
// nothing ends the CLI but its own reaction to its stdin closing, and
// nothing ends what it started.
package claudecli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// errNotFound means no Claude CLI could be found.
var errNotFound = errors.New("claude CLI not found")

// TestedVersion is the CLI version claude-rpc is tested against (the one
// scripts/install-cli installs).
const TestedVersion = "2.1.328"

// Command is how to run the CLI: Path, with Args before the CLI's own
// arguments. Args is empty but for an npm shim of a Node.js script, where
// Path is node and Args the script.
type Command struct {
	Path string
	Args []string
	// From says, for people, where it was found: "--claude-path", "PATH",
	// or a well-known place ("the native installer's ~/.local/bin", ...).
	From string
	// Shim is the npm .cmd shim Path and Args were read from, if any.
	Shim string
}

// String is the command line, for people.
func (c Command) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// Find returns how to run the CLI on this machine with the bridge's
// environment; see [System.FindCLI]. A relative explicit path is taken from
// the current folder.
func Find(explicit string) (Command, error) {
	return findWith(Local(nil), explicit)
}

func findWith(s System, explicit string) (Command, error) {
	if explicit != "" && s.hasSep(explicit) && !filepath.IsAbs(explicit) {
		if abs, err := filepath.Abs(explicit); err == nil {
			explicit = abs
		}
	}
	return s.FindCLI(explicit)
}

// FindCLI returns how to run the CLI, looking where its users install it:
//
//   - explicit, when set (--claude-path): a path, or a name looked up on
//     PATH. Nothing else is tried.
//   - "claude" on PATH (on windows with PATHEXT's extensions, so claude.exe
//     or npm's claude.cmd).
//   - well-known places, for hosts started without the user's shell PATH (a
//     desktop app on macOS gets /usr/bin:/bin:/usr/sbin:/sbin): the native
//     installer's ~/.local/bin, ~/.claude/local, npm's global prefix
//     (NPM_CONFIG_PREFIX, ~/.npmrc, ~/.npm-global, %APPDATA%\npm), Volta,
//     nvm, Homebrew, Bun.
//
// An npm .cmd (or .bat) shim is never run through cmd.exe, which would
// re-parse the user's text on its command line: FindCLI reads it and returns
// what it wraps (the native claude.exe, or node with the CLI's script). A
// batch file that is not such a shim is skipped, and named in the error if
// nothing else is found. The error says where FindCLI looked and how to
// install the CLI.
func (s System) FindCLI(explicit string) (Command, error) {
	if explicit != "" {
		return s.findExplicit(explicit)
	}
	var skipped []string
	for _, p := range s.lookPathAll("claude") {
		c, err := s.command(p, "PATH")
		if err == nil {
			return c, nil
		}
		skipped = append(skipped, err.Error())
	}
	places := s.wellKnownCLIs()
	for _, pl := range places {
		p, ok := s.executable(pl.path)
		if !ok {
			continue
		}
		c, err := s.command(p, pl.what)
		if err == nil {
			return c, nil
		}
		skipped = append(skipped, err.Error())
	}
	return Command{}, s.notFound(places, skipped)
}

func (s System) findExplicit(explicit string) (Command, error) {
	const from = "--claude-path"
	if !s.hasSep(explicit) {
		found := s.lookPathAll(explicit)
		if len(found) == 0 {
			return Command{}, fmt.Errorf("%w: --claude-path %q is not a file, nor a program on PATH (%s)", errNotFound, explicit, s.Getenv("PATH"))
		}
		c, err := s.command(found[0], from)
		if err != nil {
			return Command{}, fmt.Errorf("%w: --claude-path %q: %v", errNotFound, explicit, err)
		}
		return c, nil
	}
	p, ok := s.executable(explicit)
	if !ok {
		why := "no such file"
		if fi, err := s.FS.Stat(explicit); err == nil {
			why = "not an executable file"
			if fi.IsDir() {
				why = "a folder"
			}
		}
		return Command{}, fmt.Errorf("%w: --claude-path %q: %s", errNotFound, explicit, why)
	}
	c, err := s.command(p, from)
	if err != nil {
		return Command{}, fmt.Errorf("%w: --claude-path %q: %v", errNotFound, explicit, err)
	}
	return c, nil
}

// command is how to run the executable p: itself, or on windows, for a
// batch file, what the npm shim it is wraps.
func (s System) command(p, from string) (Command, error) {
	if s.windows() {
		switch s.ext(p) {
		case ".cmd", ".bat":
			c, err := s.resolveShim(p)
			if err != nil {
				return Command{}, err
			}
			c.From = from
			return c, nil
		}
	}
	return Command{Path: p, From: from}, nil
}

// place is a well-known place of the CLI: path is the executable (without
// extension on windows, where PATHEXT's are tried).
type place struct {
	what string
	path string
}

// wellKnownCLIs lists where the CLI's installers put it, most likely first,
// without duplicates.
func (s System) wellKnownCLIs() []place {
	home := s.home()
	var ps []place
	add := func(what string, elem ...string) {
		for _, e := range elem[:len(elem)-1] {
			if e == "" {
				return // a folder we do not know on this machine
			}
		}
		p := s.join(elem...)
		if !s.isAbs(p) {
			return
		}
		for _, q := range ps {
			if s.samePath(q.path, p) {
				return
			}
		}
		ps = append(ps, place{what, p})
	}
	// npmBin is the folder of a global npm prefix holding its commands.
	npmBin := func(prefix string) string {
		if prefix == "" || s.windows() {
			return prefix
		}
		return s.join(prefix, "bin")
	}
	add("the native installer's ~/.local/bin", home, ".local", "bin", "claude")
	if s.windows() {
		add("the local install in ~/.claude/local", home, ".claude", "local", "node_modules", ".bin", "claude")
	} else {
		add("the local install in ~/.claude/local", home, ".claude", "local", "claude")
	}
	add("npm's global prefix (NPM_CONFIG_PREFIX)", npmBin(s.Getenv("NPM_CONFIG_PREFIX")), "claude")
	add("npm's global prefix (~/.npmrc)", npmBin(s.npmrcPrefix(home)), "claude")
	if s.windows() {
		add("npm's global prefix (%APPDATA%\\npm)", s.Getenv("APPDATA"), "npm", "claude")
		pf := s.envOr("ProgramFiles", `C:\Program Files`)
		add("Node.js's folder", pf, "nodejs", "claude")
		add("nvm-windows (NVM_SYMLINK)", s.Getenv("NVM_SYMLINK"), "claude")
		volta := s.envOr("VOLTA_HOME", s.join(s.Getenv("LOCALAPPDATA"), "Volta"))
		add("Volta", volta, "tools", "image", "packages", "@anthropic-ai", "claude-code", "claude")
		add("Bun", home, ".bun", "bin", "claude")
		return ps
	}
	add("npm's global prefix (~/.npm-global)", home, ".npm-global", "bin", "claude")
	add("Volta", s.envOr("VOLTA_HOME", s.join(home, ".volta")), "bin", "claude")
	add("nvm (NVM_BIN)", s.Getenv("NVM_BIN"), "claude")
	for _, v := range s.nvmVersions(s.envOr("NVM_DIR", s.join(home, ".nvm"))) {
		add("nvm's Node.js "+s.base(v), v, "bin", "claude")
	}
	add("Homebrew (HOMEBREW_PREFIX)", s.Getenv("HOMEBREW_PREFIX"), "bin", "claude")
	if s.GOOS == "darwin" {
		add("Homebrew", "/opt/homebrew", "bin", "claude")
		add("Homebrew, or npm's default prefix", "/usr/local", "bin", "claude")
	} else {
		add("npm's default prefix", "/usr/local", "bin", "claude")
		add("Homebrew", "/home/linuxbrew/.linuxbrew", "bin", "claude")
	}
	add("Bun", home, ".bun", "bin", "claude")
	return ps
}

// npmrcPrefix is the prefix= setting of the user's ~/.npmrc ("" when there
// is none), with ${VAR} references expanded as npm does.
func (s System) npmrcPrefix(home string) string {
	if home == "" {
		return ""
	}
	b, err := s.FS.ReadFile(s.join(home, ".npmrc"))
	if err != nil {
		return ""
	}
	prefix := ""
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == "prefix" {
			prefix = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	for {
		i := strings.Index(prefix, "${")
		j := strings.Index(prefix, "}")
		if i < 0 || j < i {
			break
		}
		prefix = prefix[:i] + s.Getenv(prefix[i+2:j]) + prefix[j+1:]
	}
	if !s.isAbs(prefix) {
		return ""
	}
	return prefix
}

// nvmVersions lists nvm's installed Node.js folders (NVM_DIR/versions/node/
// vX.Y.Z), newest first: a host started outside the user's shell has no
// nvm on its PATH, and the newest is where a recent global install went.
func (s System) nvmVersions(nvmDir string) []string {
	root := s.join(nvmDir, "versions", "node")
	entries, err := s.FS.ReadDir(root)
	if err != nil {
		return nil
	}
	type ver struct {
		dir string
		n   [3]int
	}
	var vs []ver
	for _, e := range entries {
		name := e.Name()
		parts := strings.SplitN(strings.TrimPrefix(name, "v"), ".", 3)
		if !e.IsDir() || len(parts) != 3 {
			continue
		}
		var v ver
		v.dir = s.join(root, name)
		ok := true
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			ok = ok && err == nil
			v.n[i] = n
		}
		if ok {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b ver) int {
		for i := range a.n {
			if a.n[i] != b.n[i] {
				return b.n[i] - a.n[i]
			}
		}
		return 0
	})
	dirs := make([]string, len(vs))
	for i, v := range vs {
		dirs[i] = v.dir
	}
	return dirs
}

// notFound is the error when the CLI is nowhere: where FindCLI looked, what
// it skipped, and how to install the CLI.
func (s System) notFound(places []place, skipped []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "not on PATH (%s)", s.Getenv("PATH"))
	if len(places) > 0 {
		b.WriteString(" nor in ")
		for i, pl := range places {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pl.path)
		}
		if s.windows() {
			b.WriteString(" (with PATHEXT's extensions)")
		}
	}
	for _, sk := range skipped {
		fmt.Fprintf(&b, "; skipped %s", sk)
	}
	b.WriteString(". Install it with ")
	if s.windows() {
		b.WriteString("`irm https://claude.ai/install.ps1 | iex` in PowerShell")
	} else {
		b.WriteString("`curl -fsSL https://claude.ai/install.sh | bash`")
	}
	b.WriteString(" or `npm install -g @anthropic-ai/claude-code`, or pass --claude-path")
	return fmt.Errorf("%w: %s", errNotFound, b.String())
}
