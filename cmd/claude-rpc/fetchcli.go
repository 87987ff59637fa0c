package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/claude-rpc/claude-rpc/bridge/extensions"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/sessions/filelock"
)

// demoCLI is the CLI demo runs: the one claude-rpc finds (find:
// --claude-path, PATH, the usual places), else the pinned one in
// scripts/install-cli's cache, else the pinned one fetched into that cache
// (saying so on w first). An explicit path that is no CLI is an error:
// nothing is fetched in its place.
func demoCLI(explicit string, find func(string) (claudecli.Command, error), pin pinnedCLI, w io.Writer) (claudecli.Command, error) {
	cli, err := find(explicit)
	if err == nil || explicit != "" {
		return cli, err
	}
	fmt.Fprintf(w, "claude-rpc demo: no Claude CLI is installed (%v)\n", err)
	bin, ok := pin.installed()
	if !ok {
		if bin, err = pin.fetch(w); err != nil {
			return claudecli.Command{}, err
		}
	}
	fmt.Fprintf(w, "claude-rpc demo: using the pinned CLI %s from scripts/install-cli's cache: %s\n", pin.version, bin)
	return claudecli.Command{Path: bin, From: "scripts/install-cli's cache"}, nil
}

// pinnedCLI is a Claude CLI version in scripts/install-cli's cache, laid
// out as the script lays it out, so what one installs the other finds:
// npm's node_modules under dir (<cache>/claude-code-<version>), installed
// under an exclusive lock of <dir>.lock.
type pinnedCLI struct {
	version string
	dir     string // "" when there is no cache folder to name (noDir says why)
	npm     string // npm's path; "" when there is none
	noDir   error
}

// pinned is the pinned CLI (claudecli.TestedVersion, the script's default)
// in the cache, with npm from PATH.
func pinned() pinnedCLI {
	npm, _ := exec.LookPath("npm")
	p := pinnedCLI{version: claudecli.TestedVersion, npm: npm}
	if cache, err := cacheDir(); err != nil {
		p.noDir = err
	} else {
		p.dir = filepath.Join(cache, "claude-code-"+claudecli.TestedVersion)
	}
	return p
}

// cacheDir is where scripts/install-cli installs CLIs:
// ${CLAUDE_RPC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claude-rpc}, the
// folder pi's extension runtime is kept in too. A folder that is not
// absolute (HOME empty and neither of the others set) is an error: it
// would be a folder in whatever folder demo runs in.
func cacheDir() (string, error) {
	dir := extensions.DefaultCache(nil)
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("claude-rpc keeps the Claude CLI in ${CLAUDE_RPC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claude-rpc}, and that names no absolute folder here (%q): set HOME, or CLAUDE_RPC_CACHE to an absolute folder", dir)
	}
	return dir, nil
}

// installed is the CLI's binary when the cache holds it, found as the
// script finds it: the platform package's native binary, else npm's bin
// entry, of the right version.
func (p pinnedCLI) installed() (string, bool) {
	if p.dir == "" {
		return "", false
	}
	dir := filepath.Join(p.dir, "node_modules")
	found, _ := filepath.Glob(filepath.Join(dir, "@anthropic-ai", "claude-code-*", "claude"))
	for _, b := range append(found, filepath.Join(dir, ".bin", "claude")) {
		st, err := os.Stat(b)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		if v, err := claudecli.DetectVersion(claudecli.Command{Path: b}, versionTimeout); err == nil && v.String() == p.version {
			return b, true
		}
	}
	return "", false
}

// Download and install sizes of @anthropic-ai/claude-code 2.1.328 with its
// linux-x64 package (the platform packages are alike), for the notice.
const (
	fetchDownload = "170 MB"
	fetchOnDisk   = "360 MB"
)

// fetch installs the CLI into the cache with npm, as scripts/install-cli
// does (the same npm command, folder and lock), and returns its binary. It
// says on w what it fetches, where to, and how big, before it starts; npm's
// own output goes to w too. A fetch racing another (a second demo, the
// script) waits for it and finds what it installed.
func (p pinnedCLI) fetch(w io.Writer) (string, error) {
	if p.dir == "" {
		return "", fmt.Errorf("demo would fetch the pinned Claude CLI %s, but %w", p.version, p.noDir)
	}
	if p.npm == "" {
		return "", fmt.Errorf("npm is not on PATH, and demo fetches the pinned Claude CLI %s with it: install Node.js (it brings npm) and run demo again, or install the Claude CLI yourself (on PATH, or --claude-path)", p.version)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(p.dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	if err := filelock.Lock(lock); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	if bin, ok := p.installed(); ok {
		return bin, nil // installed while this one waited
	}
	pkg := "@anthropic-ai/claude-code@" + p.version
	fmt.Fprintf(w, "claude-rpc demo: fetching the Claude CLI %s (%s, with npm: about %s to download, %s on disk) into %s\n",
		p.version, pkg, fetchDownload, fetchOnDisk, p.dir)
	// --prefix keeps it out of any global prefix, as the script does.
	npm := exec.Command(p.npm, "install", "--prefix", p.dir, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", pkg)
	npm.Env = append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false") // npm's own news is not the demo's
	// npm keeps its cache in ~/.npm, and with HOME empty that is a folder
	// named ~ in the folder it runs in: it runs in the cache folder, with
	// its cache there when HOME names no folder.
	npm.Dir = p.dir
	if home := os.Getenv(sessions.HomeVar()); !filepath.IsAbs(home) {
		npm.Env = append(npm.Env, "NPM_CONFIG_CACHE="+filepath.Join(filepath.Dir(p.dir), "npm-cache"))
	}
	npm.Stdout, npm.Stderr = w, w
	if err := claudecli.RunCommand(npm, claudecli.EndOrphans); err != nil {
		return "", fmt.Errorf("npm install %s into %s: %w", pkg, p.dir, err)
	}
	bin, ok := p.installed()
	if !ok {
		return "", fmt.Errorf("npm installed %s, but there is no working claude %s binary under %s", pkg, p.version, p.dir)
	}
	return bin, nil
}
