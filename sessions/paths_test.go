package sessions

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProjectDir(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{"/tmp/exp", "-tmp-exp"},
		{"/home/a.b/my_proj-1", "-home-a-b-my-proj-1"},
		{"/tmp/é", "-tmp--"},
		{"/tmp/😀x", "-tmp---x"}, // outside the BMP: two UTF-16 units, two dashes
		{`C:\Users\me\src`, "C--Users-me-src"},
	}
	for _, tt := range tests {
		assert.Equal(t, filepath.Join("/cfg", "projects", tt.want), ProjectDir("/cfg", tt.cwd), tt.cwd)
	}
}

func TestConfigDir(t *testing.T) {
	home := "HOME" // the CLI's home here
	if runtime.GOOS == "windows" {
		home = "USERPROFILE"
	}
	assert.Equal(t, filepath.Join("/h", ".claude"), ConfigDir([]string{home + "=/h"}))
	assert.Equal(t, "/c", ConfigDir([]string{home + "=/h", "CLAUDE_CONFIG_DIR=/c"}))
	assert.Equal(t, filepath.Join("/h2", ".claude"), ConfigDir([]string{home + "=/h", home + "=/h2"}))
	assert.Equal(t, filepath.Join("/h", ".claude", "projects", "-w", "id.jsonl"), TranscriptPath(ConfigDir([]string{home + "=/h"}), "/w", "id"))
	// The home the CLI uses: USERPROFILE on windows (a host started from
	// Git Bash has a HOME too), HOME elsewhere; in either order.
	for _, tc := range []struct {
		goos string
		env  []string
		want string
	}{
		{"windows", []string{"USERPROFILE=/p", "HOME=/h"}, filepath.Join("/p", ".claude")},
		{"windows", []string{"HOME=/h", "UserProfile=/p"}, filepath.Join("/p", ".claude")},
		{"windows", []string{"HOME=/h", "USERPROFILE=/p", "claude_config_dir=/c"}, "/c"},
		{"linux", []string{"HOME=/h", "USERPROFILE=/p"}, filepath.Join("/h", ".claude")},
		{"darwin", []string{"USERPROFILE=/p", "HOME=/h"}, filepath.Join("/h", ".claude")},
	} {
		assert.Equal(t, tc.want, configDir(tc.goos, tc.env), "%s %v", tc.goos, tc.env)
	}
}

func TestNewID(t *testing.T) {
	id := NewID()
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
	assert.NotEqual(t, id, NewID())
}

func TestExists(t *testing.T) {
	cfg := t.TempDir()
	assert.False(t, Exists(cfg, "/w", "id1"))
	require.NoError(t, os.MkdirAll(ProjectDir(cfg, "/w"), 0o755))
	require.NoError(t, os.WriteFile(TranscriptPath(cfg, "/w", "id1"), nil, 0o644))
	assert.True(t, Exists(cfg, "/w", "id1"))
	assert.True(t, Exists(cfg, "/elsewhere", "id1"), "found in another project folder")
	assert.False(t, Exists(cfg, "/w", "id2"))
}
