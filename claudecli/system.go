package claudecli

import (
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
)

// System is what discovery reads of a machine: its operating system, its
// environment and its files. Finding the CLI ([System.FindCLI]) and Git Bash
// ([System.FindGitBash]) are functions of a System and nothing else, so the
// Windows, macOS and Linux searches are all tested on any OS with a fake
// one; [Local] is the machine the bridge runs on.
type System struct {
	// GOOS is the operating system, as runtime.GOOS names it. It decides the
	// path syntax ("C:\Program Files\Git" on windows), how PATH is split,
	// what is executable, and where to look.
	GOOS string
	// Env is the environment as KEY=value pairs (os.Environ's form); a key
	// set twice counts at its last. On windows keys match whatever their
	// case ("Path" is PATH), as Windows matches them.
	Env []string
	// FS reads the files, named by the operating system's own paths.
	FS FS
}

// FS is the part of a file system discovery reads. Names are the operating
// system's own absolute paths (io/fs's slash-separated, rootless names
// cannot say "C:\"). Stat follows symbolic links.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// osFS is the machine's own file system.
type osFS struct{}

func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Local returns the machine the bridge runs on, with env as its
// environment (nil: the bridge's own).
func Local(env []string) System {
	if env == nil {
		env = os.Environ()
	}
	return System{GOOS: runtime.GOOS, Env: env, FS: osFS{}}
}

func (s System) windows() bool { return s.GOOS == "windows" }

// Getenv returns the value of key in s.Env ("" when unset).
func (s System) Getenv(key string) string {
	v := ""
	for _, kv := range s.Env {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == key || s.windows() && strings.EqualFold(k, key) {
			v = val
		}
	}
	return v
}

// home is the user's home folder: USERPROFILE on windows, else HOME.
func (s System) home() string {
	if s.windows() {
		if h := s.Getenv("USERPROFILE"); h != "" {
			return h
		}
		if d, p := s.Getenv("HOMEDRIVE"), s.Getenv("HOMEPATH"); d != "" && p != "" {
			return d + p
		}
		return ""
	}
	return s.Getenv("HOME")
}

// envOr is the value of key, or def when it is unset or empty.
func (s System) envOr(key, def string) string {
	if v := s.Getenv(key); v != "" {
		return v
	}
	return def
}

// The path functions below work on s's syntax whatever OS runs them: on
// windows they take "\" and "/" as separators and write "\", keep a drive
// ("C:") or UNC ("\\server\share") prefix, and compare without case.

// join joins path elements and cleans the result. An empty element is
// skipped; the result of joining nothing but empty elements is "".
func (s System) join(elem ...string) string {
	var parts []string
	for _, e := range elem {
		if e != "" {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return s.clean(strings.Join(parts, s.sep()))
}

func (s System) sep() string {
	if s.windows() {
		return `\`
	}
	return "/"
}

func (s System) listSep() string {
	if s.windows() {
		return ";"
	}
	return ":"
}

// clean is path.Clean in s's syntax.
func (s System) clean(p string) string {
	if !s.windows() {
		return path.Clean(p)
	}
	p = strings.ReplaceAll(p, `\`, "/")
	prefix := ""
	switch {
	case strings.HasPrefix(p, "//"): // UNC: \\server\share, one "\" here, one from the rooted rest
		prefix, p = `\`, "/"+strings.TrimLeft(p, "/")
	case len(p) >= 2 && p[1] == ':':
		prefix, p = p[:2], p[2:]
	}
	if p == "" {
		return prefix
	}
	return prefix + strings.ReplaceAll(path.Clean(p), "/", `\`)
}

// dir is path.Dir in s's syntax.
func (s System) dir(p string) string {
	if !s.windows() {
		return path.Dir(p)
	}
	p = s.clean(p)
	i := strings.LastIndex(p, `\`)
	switch {
	case i < 0:
		return "."
	case i == 0 || i == 2 && p[1] == ':': // \x or C:\x
		return p[:i+1]
	}
	return p[:i]
}

// base is path.Base in s's syntax.
func (s System) base(p string) string {
	p = s.clean(p)
	if i := strings.LastIndex(p, s.sep()); i >= 0 {
		return p[i+1:]
	}
	return p
}

// isAbs reports whether p is an absolute path in s's syntax.
func (s System) isAbs(p string) bool {
	if !s.windows() {
		return strings.HasPrefix(p, "/")
	}
	p = strings.ReplaceAll(p, `\`, "/")
	return strings.HasPrefix(p, "//") || len(p) >= 3 && p[1] == ':' && p[2] == '/'
}

// hasSep reports whether name has a path separator (is a path, not a name
// to look up on PATH).
func (s System) hasSep(name string) bool {
	if s.windows() {
		return strings.ContainsAny(name, `\/:`)
	}
	return strings.Contains(name, "/")
}

// samePath compares two paths of s (without case on windows).
func (s System) samePath(a, b string) bool {
	a, b = s.clean(a), s.clean(b)
	if s.windows() {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// ext is the extension of p's last element, with its dot, lower case on
// windows.
func (s System) ext(p string) string {
	b := s.base(p)
	i := strings.LastIndex(b, ".")
	if i <= 0 {
		return ""
	}
	if s.windows() {
		return strings.ToLower(b[i:])
	}
	return b[i:]
}

// pathDirs returns the folders of PATH, in order, without empty entries
// (which would mean the current folder: never searched, as exec.LookPath
// refuses it) and without quotes Windows allows around an entry.
func (s System) pathDirs() []string {
	var dirs []string
	for _, d := range strings.Split(s.Getenv("PATH"), s.listSep()) {
		d = strings.Trim(d, `"`)
		if d != "" && s.isAbs(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// pathExts is PATHEXT on windows as lower-case extensions (exec.LookPath's
// default when it is unset), nil elsewhere.
func (s System) pathExts() []string {
	if !s.windows() {
		return nil
	}
	v := s.Getenv("PATHEXT")
	if v == "" {
		v = ".com;.exe;.bat;.cmd"
	}
	var exts []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		if e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	return exts
}

// isExecutable reports whether p is a file s would run: on windows one
// whose extension is in PATHEXT, elsewhere one with an execute bit.
func (s System) isExecutable(p string) bool {
	fi, err := s.FS.Stat(p)
	if err != nil || fi.IsDir() {
		return false
	}
	if s.windows() {
		ext := s.ext(p)
		for _, e := range s.pathExts() {
			if ext == e {
				return true
			}
		}
		return false
	}
	return fi.Mode().Perm()&0o111 != 0
}

// executable returns the file p names when it is executable: p itself, or
// on windows p with one of PATHEXT's extensions added (tried first when p
// has none of them, as Windows does).
func (s System) executable(p string) (string, bool) {
	if s.windows() && !s.hasPathExt(p) {
		for _, e := range s.pathExts() {
			if s.isExecutable(p + e) {
				return p + e, true
			}
		}
		return "", false
	}
	if s.isExecutable(p) {
		return p, true
	}
	return "", false
}

func (s System) hasPathExt(p string) bool {
	ext := s.ext(p)
	for _, e := range s.pathExts() {
		if ext == e {
			return true
		}
	}
	return false
}

// lookPathAll returns every executable called name in the folders of PATH,
// in PATH's order (exec.LookPath returns the first). Within a folder,
// windows tries PATHEXT's extensions in order.
func (s System) lookPathAll(name string) []string {
	var found []string
	for _, d := range s.pathDirs() {
		if p, ok := s.executable(s.join(d, name)); ok {
			found = append(found, p)
		}
	}
	return found
}

// exists reports whether p is a file (not a folder).
func (s System) exists(p string) bool {
	fi, err := s.FS.Stat(p)
	return err == nil && !fi.IsDir()
}
