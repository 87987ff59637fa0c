package claudecli

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFS is a file system of another machine, for discovery tests: files
// by their full path in that machine's syntax (case-insensitive on
// windows), folders implied by the files in them.
type fakeFS struct {
	win   bool
	files map[string]fakeFile // by key(path)
}

type fakeFile struct {
	name string
	data string
	mode fs.FileMode
}

// newFakeFS makes a file system of goos holding files (path → content);
// on unix every file is executable but those listed in noExec.
func newFakeFS(goos string, files map[string]string, noExec ...string) *fakeFS {
	f := &fakeFS{win: goos == "windows", files: map[string]fakeFile{}}
	for p, data := range files {
		mode := fs.FileMode(0o755)
		for _, n := range noExec {
			if n == p {
				mode = 0o644
			}
		}
		f.files[f.key(p)] = fakeFile{name: p, data: data, mode: mode}
	}
	return f
}

func (f *fakeFS) key(p string) string {
	if !f.win {
		return path.Clean(p)
	}
	return strings.ToLower(System{GOOS: "windows"}.clean(p))
}

func (f *fakeFS) sep() string {
	if f.win {
		return `\`
	}
	return "/"
}

func (f *fakeFS) isDir(k string) bool {
	for fk := range f.files {
		if strings.HasPrefix(fk, strings.TrimSuffix(k, f.sep())+f.sep()) {
			return true
		}
	}
	return false
}

func (f *fakeFS) Stat(name string) (fs.FileInfo, error) {
	k := f.key(name)
	if file, ok := f.files[k]; ok {
		return fakeInfo{name: k[strings.LastIndex(k, f.sep())+1:], size: int64(len(file.data)), mode: file.mode}, nil
	}
	if f.isDir(k) {
		return fakeInfo{name: k[strings.LastIndex(k, f.sep())+1:], mode: fs.ModeDir | 0o755}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (f *fakeFS) ReadFile(name string) ([]byte, error) {
	if file, ok := f.files[f.key(name)]; ok {
		return []byte(file.data), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f *fakeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	k := strings.TrimSuffix(f.key(name), f.sep()) + f.sep()
	seen := map[string]bool{}
	var out []fs.DirEntry
	for fk, file := range f.files {
		rest, ok := strings.CutPrefix(fk, k)
		if !ok {
			continue
		}
		// The entry's name as written (case kept), from the file's path.
		orig := file.name[len(file.name)-len(rest):]
		child, _, deeper := strings.Cut(orig, f.sep())
		if seen[child] {
			continue
		}
		seen[child] = true
		info := fakeInfo{name: child, mode: file.mode}
		if deeper {
			info.mode = fs.ModeDir | 0o755
		}
		out = append(out, fs.FileInfoToDirEntry(info))
	}
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

type fakeInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return i.size }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

func TestWindowsPaths(t *testing.T) {
	w := System{GOOS: "windows"}
	for _, tc := range []struct{ in, clean, dir, base string }{
		{`C:\Program Files\Git\cmd\git.exe`, `C:\Program Files\Git\cmd\git.exe`, `C:\Program Files\Git\cmd`, "git.exe"},
		{`C:/Users/u//AppData\Roaming\npm\.\claude.cmd`, `C:\Users\u\AppData\Roaming\npm\claude.cmd`, `C:\Users\u\AppData\Roaming\npm`, "claude.cmd"},
		{`C:\Users\u\npm\node_modules\.bin\..\@anthropic-ai\x`, `C:\Users\u\npm\node_modules\@anthropic-ai\x`, `C:\Users\u\npm\node_modules\@anthropic-ai`, "x"},
		{`C:\claude.exe`, `C:\claude.exe`, `C:\`, "claude.exe"},
		{`\\server\share\tools\claude.exe`, `\\server\share\tools\claude.exe`, `\\server\share\tools`, "claude.exe"},
	} {
		assert.Equal(t, tc.clean, w.clean(tc.in), tc.in)
		assert.Equal(t, tc.dir, w.dir(tc.in), tc.in)
		assert.Equal(t, tc.base, w.base(tc.in), tc.in)
		assert.True(t, w.isAbs(tc.in), tc.in)
	}
	assert.False(t, w.isAbs(`Volta\bin`))
	assert.False(t, w.isAbs(`C:relative`))
	assert.Equal(t, ".exe", w.ext(`C:\x\CLAUDE.EXE`))
	assert.True(t, w.samePath(`c:\program files\GIT`, `C:\Program Files\Git\`))
	w.Env = []string{"Path=C:\\a;;\"C:\\b c\";relative", "pathext=.EXE;.Cmd"}
	assert.Equal(t, []string{`C:\a`, `C:\b c`}, w.pathDirs(), "Path, any case; empty, relative and quotes dropped")
	assert.Equal(t, []string{".exe", ".cmd"}, w.pathExts())
}

// TestLocalSystem runs discovery on this machine's own file system.
func TestLocalSystem(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude"+exeSuffix)
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	c, err := Local([]string{"PATH=" + dir, "HOME=" + t.TempDir()}).FindCLI("")
	require.NoError(t, err)
	assert.Equal(t, Command{Path: exe, From: "PATH"}, c)
}
