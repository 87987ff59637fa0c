package extensions

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

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
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
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
