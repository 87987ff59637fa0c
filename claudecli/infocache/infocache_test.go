package infocache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

func TestSaveLoad(t *testing.T) {
	s := Open(t.TempDir())
	e := Entry{Info: claudecli.Info{Version: "2.1.328", Models: []claudecli.ModelInfo{{Value: "opus", ResolvedModel: "claude-opus-5-5"}}},
		Limits: map[string]Limits{"claude-opus-5-5": {ContextWindow: 1_000_000, MaxTokens: 128_000}}, Saved: time.Unix(1, 0).UTC()}
	require.NoError(t, s.Save("k1", e))
	got, ok := s.Load("k1")
	require.True(t, ok)
	assert.Equal(t, e, got)
	_, ok = s.Load("k2")
	assert.False(t, ok, "another key")
}

// A file that is not an entry is a miss, never an error or a crash.
func TestLoadIgnoresBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"empty":        "",
		"not JSON":     "{{{",
		"truncated":    `{"format":1,"key":"k","entry":{"info":`,
		"other format": `{"format":99,"key":"k","entry":{}}`,
		"other key":    `{"format":1,"key":"x","entry":{}}`,
		"wrong types":  `{"format":"1","key":7,"entry":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "k.json"), []byte(content), 0o600))
			_, ok := Open(dir).Load("k")
			assert.False(t, ok)
		})
	}
	t.Run("a folder in its place", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, "k.json"), 0o700))
		_, ok := Open(dir).Load("k")
		assert.False(t, ok)
	})
}

func TestNoDirKeepsNothing(t *testing.T) {
	s := Open("")
	require.NoError(t, s.Save("k", Entry{}))
	_, ok := s.Load("k")
	assert.False(t, ok)
}

// The key changes with the CLI's binary, its settings and its environment,
// and with nothing else.
func TestKey(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(bin, []byte("v1"), 0o755))
	cwd, cfg := t.TempDir(), t.TempDir()
	env := []string{"ANTHROPIC_BASE_URL=http://a", "CLAUDE_RPC_TEST_MARKER=1", "PATH=/bin"}
	base, ok := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
	require.True(t, ok)
	again, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, []string{"PATH=/usr/bin", "ANTHROPIC_BASE_URL=http://a", "CLAUDE_RPC_TEST_MARKER=2"})
	assert.Equal(t, base, again, "variables the CLI does not read leave the key")
	// What the CLI writes itself as it runs leaves the key.
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "plugins", "store"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "projects", "x"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfg, ".last-cleanup"), nil, 0o600))
	again, _ = Key(claudecli.Command{Path: bin}, cwd, cfg, env)
	assert.Equal(t, base, again, "the CLI's own files leave the key")

	differs := map[string]func(t *testing.T) string{
		"the binary changed": func(t *testing.T) string {
			require.NoError(t, os.WriteFile(bin, []byte("v2 longer"), 0o755))
			k, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
			return k
		},
		"another folder": func(t *testing.T) string {
			k, _ := Key(claudecli.Command{Path: bin}, t.TempDir(), cfg, env)
			return k
		},
		"user settings written": func(t *testing.T) string {
			require.NoError(t, os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"model":"sonnet"}`), 0o600))
			k, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
			return k
		},
		"a project command added": func(t *testing.T) string {
			require.NoError(t, os.MkdirAll(filepath.Join(cwd, ".claude", "commands"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(cwd, ".claude", "commands", "hi.md"), []byte("hi"), 0o600))
			k, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
			return k
		},
		"a user skill added": func(t *testing.T) string {
			require.NoError(t, os.MkdirAll(filepath.Join(cfg, "skills", "s"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(cfg, "skills", "s", "SKILL.md"), []byte("s"), 0o600))
			k, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
			return k
		},
		"another API": func(t *testing.T) string {
			k, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, []string{"ANTHROPIC_BASE_URL=http://b"})
			return k
		},
	}
	for name, f := range differs {
		t.Run(name, func(t *testing.T) {
			before, _ := Key(claudecli.Command{Path: bin}, cwd, cfg, env)
			assert.NotEqual(t, before, f(t))
		})
	}
	_, ok = Key(claudecli.Command{Path: filepath.Join(dir, "missing")}, cwd, cfg, env)
	assert.False(t, ok, "no binary, no key")
}
