// Package extensions finds what the pi-extension host runs on: pi 1.6.0's
// own runtime, imported at run time from pi's npm package, needs a Node new
// enough to import it.
package extensions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
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
	pathList := envPath(env)
	path, ok := lookPath("node", pathList)
	if !ok {
		return "", "", fmt.Errorf("%w (PATH=%s): pi %s's extension runtime needs Node >= %s; install it (e.g. from https://nodejs.org) or put one first on PATH",
			ErrNoNode, pathList, PiVersion, MinNodeVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("running %s --version: %w%s", path, err, tail(stderr.Bytes()))
	}
	version = strings.TrimSpace(string(out))
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

// envPath is the value of PATH in env (the last one wins, as in os/exec;
// on Windows the name is matched without regard to case).
func envPath(env []string) string {
	if env == nil {
		env = os.Environ()
	}
	path := ""
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (k == "PATH" || runtime.GOOS == "windows" && strings.EqualFold(k, "PATH")) {
			path = v
		}
	}
	return path
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
