//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/reference"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// npmVersion is the version the test stamps on the packages it builds.
const npmVersion = "1.2.3-npmtest"

// TestNPMPackage builds the npm packages with scripts/npm-pack (this
// machine's platform package and the main one), installs them offline into a
// scratch project as a user would get them, and runs claude-rpc through the
// npm wrapper: --version, one real turn, the Node example (pi's RpcClient)
// starting claude-rpc from the package, and a SIGTERM that must reach the
// Go binary.
func TestNPMPackage(t *testing.T) {
	claudetest.EndToEnd(t)
	for _, tool := range []string{"node", "npm", "npx"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the npm packaging test needs %s", tool)
	}
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	require.NotEmpty(t, cpu, "no npm package for linux/%s", runtime.GOARCH)
	platform := "linux-" + cpu

	// Pack.
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := t.TempDir()
	pack := exec.Command("bash", filepath.Join(root, "scripts", "npm-pack"), "--platforms", platform)
	pack.Env = append(os.Environ(), "OUT="+out, "VERSION="+npmVersion)
	var packErr bytes.Buffer
	pack.Stderr = &packErr
	stdout, err := pack.Output()
	require.NoError(t, err, "scripts/npm-pack: %s", packErr.String())
	tarballs := strings.Fields(string(stdout))
	require.Equal(t, []string{
		filepath.Join(out, "claude-rpc-"+npmVersion+".tgz"),
		filepath.Join(out, "claude-rpc-claude-rpc-"+platform+"-"+npmVersion+".tgz"),
	}, tarballs)

	// Install offline from the tarballs: a registry nobody listens on and an
	// empty cache, so nothing can come from anywhere else. npm skips the
	// other platforms' optional packages it cannot fetch.
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"scratch","private":true}`), 0o644))
	npmEnv := append(os.Environ(),
		"npm_config_cache="+filepath.Join(t.TempDir(), "npm-cache"),
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_update_notifier=false")
	install := exec.Command("npm", append([]string{"install", "--offline", "--no-audit", "--no-fund"}, tarballs...)...)
	install.Dir, install.Env = project, npmEnv
	msg, err := install.CombinedOutput()
	require.NoError(t, err, "npm install: %s", msg)

	mods := filepath.Join(project, "node_modules")
	installed, err := os.ReadDir(filepath.Join(mods, "@claude-rpc"))
	require.NoError(t, err)
	require.Len(t, installed, 1)
	assert.Equal(t, "claude-rpc-"+platform, installed[0].Name())
	mainPkg, err := os.ReadFile(filepath.Join(mods, "claude-rpc", "package.json"))
	require.NoError(t, err)
	assert.Equal(t, "bin/claude-rpc.js", gjson.GetBytes(mainPkg, "bin.claude-rpc").String())
	for _, p := range []string{"linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"} {
		assert.Equal(t, npmVersion, gjson.GetBytes(mainPkg, `optionalDependencies.@claude-rpc/claude-rpc-`+p).String(), p)
	}
	schemaJSON, err := os.ReadFile(filepath.Join(mods, "claude-rpc", "schema.json"))
	require.NoError(t, err, "the main package carries the protocol reference")
	assert.Equal(t, string(reference.Schema()), string(schemaJSON))
	platPkg, err := os.ReadFile(filepath.Join(mods, "@claude-rpc", "claude-rpc-"+platform, "package.json"))
	require.NoError(t, err)
	// Both packages say their licence and carry its text.
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	for _, pkg := range []string{filepath.Join(mods, "claude-rpc"), filepath.Join(mods, "@claude-rpc", "claude-rpc-"+platform)} {
		manifest, err := os.ReadFile(filepath.Join(pkg, "package.json"))
		require.NoError(t, err)
		assert.Equal(t, "MIT", gjson.GetBytes(manifest, "license").String(), pkg)
		text, err := os.ReadFile(filepath.Join(pkg, "LICENSE"))
		require.NoError(t, err, "%s carries LICENSE", pkg)
		assert.Equal(t, string(license), string(text), pkg)
	}
	assert.Equal(t, `["linux"]`, gjson.GetBytes(platPkg, "os|@ugly").Raw)
	assert.Equal(t, `["`+cpu+`"]`, gjson.GetBytes(platPkg, "cpu|@ugly").Raw)

	// --version through npx.
	ver := exec.Command("npx", "--no-install", "claude-rpc", "--version")
	ver.Dir, ver.Env = project, npmEnv
	msg, err = ver.CombinedOutput()
	require.NoError(t, err, "npx claude-rpc --version: %s", msg)
	assert.Contains(t, string(msg), "claude-rpc "+npmVersion+" (")

	srv := claudetest.Start(t)
	cli := claudetest.CLI(t)
	wrapper := filepath.Join(mods, ".bin", "claude-rpc")

	t.Run("turn", func(t *testing.T) {
		p := startNPMWrapper(t, srv, wrapper, cli)
		p.send(`{"id":"1","type":"prompt","message":"hi [[say:from npm]]"}`)
		said := false
		for {
			f := p.next(60 * time.Second)
			typ := f.Get("type").String()
			if (typ == "message_update" || typ == "message_end") && strings.Contains(f.Raw, "from npm") {
				said = true
			}
			if typ == "agent_end" {
				break
			}
		}
		assert.True(t, said, "no message_update or message_end carried the reply")
		require.NoError(t, p.stdin.Close())
		assert.Equal(t, 0, p.wait(t, 20*time.Second))
	})

	t.Run("sigterm", func(t *testing.T) {
		p := startNPMWrapper(t, srv, wrapper, cli)
		p.send(`{"id":"1","type":"prompt","message":"hi [[say:still here]]"}`)
		p.until(60*time.Second, isType("agent_end"))
		bin := p.goBinary(t)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		// The Go binary ends serving on SIGTERM and exits 128+15; the
		// wrapper passes that on.
		assert.Equal(t, 128+int(syscall.SIGTERM), p.wait(t, 20*time.Second))
		assert.Error(t, syscall.Kill(bin, 0), "the Go binary still runs")
	})

	t.Run("example", func(t *testing.T) {
		// The Node example in the scratch project: pi's RpcClient, through
		// the example's launcher, starts claude-rpc from the npm package
		// (no CLAUDE_RPC_BIN, and none on PATH).
		copyNodeExample(t, project)
		require.NoError(t, os.Symlink(filepath.Join(installPi(t), "node_modules", "@mariozechner"), filepath.Join(mods, "@mariozechner")))
		runExample(t, project, []string{"CLAUDE_RPC_BIN="}, "node", "example.mjs")
	})

	t.Run("child killed", func(t *testing.T) {
		// When the binary dies of a signal, the wrapper dies of the same.
		p := startNPMWrapper(t, srv, wrapper, cli)
		require.NoError(t, syscall.Kill(p.goBinary(t), syscall.SIGKILL))
		p.wait(t, 20*time.Second)
		ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "wrapper exit: %v", p.cmd.ProcessState)
	})
}

// npmProc is claude-rpc run through the npm wrapper (node bin/claude-rpc.js).
type npmProc struct {
	*rpcProc
}

// startNPMWrapper runs the wrapper in RPC mode against srv, reading its
// frames; at the test's end it checks that nothing it started still runs.
func startNPMWrapper(t *testing.T, srv *claudetest.Server, wrapper, cli string) *npmProc {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	p := &npmProc{newRPCProc(t, srv, home, dir)}
	p.bin = wrapper
	p.start(srv.CLIEnv(home), "--mode", "rpc", "--claude-path", cli, "--cwd", dir)
	return p
}

// wait waits for the wrapper to exit and returns its exit code (-1 when a
// signal ended it).
func (p *npmProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("the npm wrapper did not exit within %s", timeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// goBinary returns the pid of the Go binary the wrapper started: the child
// of the wrapper carrying the test's marker.
func (p *npmProc) goBinary(t *testing.T) int {
	t.Helper()
	wrapper := strconv.Itoa(p.cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range p.leftovers() {
			pid := strings.Fields(l)[0]
			stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid …
			if i := bytes.LastIndexByte(stat, ')'); i > 0 {
				if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == wrapper {
					n, _ := strconv.Atoi(pid)
					return n
				}
			}
		}
	}
	t.Fatal(errors.New("the npm wrapper started no child"))
	return 0
}
