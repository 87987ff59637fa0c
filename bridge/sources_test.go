package bridge

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
)

func TestCommandSources(t *testing.T) {
	home, root, elsewhere, plugin := t.TempDir(), t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "myplug")
	project := filepath.Join(root, "sub") // commands of a parent folder count too
	mk := func(path string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("---\ndescription: x\n---\n"), 0o644))
		return path
	}
	ucmd := mk(filepath.Join(home, ".claude", "commands", "ucmd.md"))
	uskill := mk(filepath.Join(home, ".claude", "skills", "uskill", "SKILL.md"))
	pcmd := mk(filepath.Join(project, ".claude", "commands", "git", "pcmd.md"))
	pskill := mk(filepath.Join(project, ".claude", "skills", "pskill", "SKILL.md"))
	parentCmd := mk(filepath.Join(root, ".claude", "commands", "up.md"))
	both := mk(filepath.Join(project, ".claude", "commands", "both.md"))
	bothUser := mk(filepath.Join(home, ".claude", "commands", "both.md"))
	// pi's --skill: a folder given with --add-dir, its skill a link (on
	// Windows a copy: links need a privilege there, so --skill copies).
	flagSkill := filepath.Join(elsewhere, ".claude", "skills", "flagskill")
	var target string
	if runtime.GOOS == "windows" {
		target = mk(filepath.Join(flagSkill, "SKILL.md"))
	} else {
		target = mk(filepath.Join(t.TempDir(), "real", "SKILL.md"))
		require.NoError(t, os.MkdirAll(filepath.Dir(flagSkill), 0o755))
		require.NoError(t, os.Symlink(filepath.Dir(target), flagSkill))
	}
	require.NoError(t, os.MkdirAll(plugin, 0o755))

	s := &server{opts: Options{CLI: claudecli.Config{Dir: project, Env: []string{sessions.HomeVar() + "=" + home},
		ExtraArgs: []string{"--add-dir=" + elsewhere, "--plugin-dir", plugin}}}}
	f := s.commandFiles()
	real := func(p string) string { r, err := filepath.EvalSymlinks(p); require.NoError(t, err); return r }
	userBase, projectBase, parentBase := real(filepath.Join(home, ".claude")), real(filepath.Join(project, ".claude")), real(filepath.Join(root, ".claude"))
	for _, tc := range []struct {
		ci     claudecli.CommandInfo
		want   sourceInfo
		source string // pi's: "prompt" unless said
	}{
		{claudecli.CommandInfo{Name: "compact", Description: "Free up context", Builtin: true},
			sourceInfo{Path: "builtin:compact", Source: "builtin", Scope: "temporary", Origin: "top-level"}, ""},
		{claudecli.CommandInfo{Name: "ucmd", Description: "x (user)"}, sourceInfo{Path: real(ucmd), Source: "auto", Scope: "user", Origin: "top-level", BaseDir: userBase}, ""},
		{claudecli.CommandInfo{Name: "uskill", Description: "x (user)"}, sourceInfo{Path: real(uskill), Source: "auto", Scope: "user", Origin: "top-level", BaseDir: userBase}, "skill"},
		{claudecli.CommandInfo{Name: "git:pcmd", Description: "x (project)"}, sourceInfo{Path: real(pcmd), Source: "auto", Scope: "project", Origin: "top-level", BaseDir: projectBase}, ""},
		{claudecli.CommandInfo{Name: "pskill", Description: "x (project)"}, sourceInfo{Path: real(pskill), Source: "auto", Scope: "project", Origin: "top-level", BaseDir: projectBase}, "skill"},
		{claudecli.CommandInfo{Name: "up", Description: "x (project)"}, sourceInfo{Path: real(parentCmd), Source: "auto", Scope: "project", Origin: "top-level", BaseDir: parentBase}, ""},
		// The same name in both: the CLI's description names the scope.
		{claudecli.CommandInfo{Name: "both", Description: "x (project)"}, sourceInfo{Path: real(both), Source: "auto", Scope: "project", Origin: "top-level", BaseDir: projectBase}, ""},
		{claudecli.CommandInfo{Name: "both", Description: "x (user)"}, sourceInfo{Path: real(bothUser), Source: "auto", Scope: "user", Origin: "top-level", BaseDir: userBase}, ""},
		{claudecli.CommandInfo{Name: "flagskill", Description: "x (project)"}, sourceInfo{Path: real(target), Source: "local", Scope: "temporary", Origin: "top-level", BaseDir: filepath.Dir(real(target))}, "skill"},
		{claudecli.CommandInfo{Name: "myplug:go", Description: "(myplug) x"}, sourceInfo{Path: plugin, Source: "myplug", Scope: "temporary", Origin: "package", BaseDir: plugin}, ""},
		{claudecli.CommandInfo{Name: "other:go", Description: "(other) x"}, sourceInfo{Path: "plugin:other", Source: "other", Scope: "user", Origin: "package"}, ""},
		{claudecli.CommandInfo{Name: "gone", Description: "x (project)"}, sourceInfo{Source: "auto", Scope: "project", Origin: "top-level"}, ""},
	} {
		got, source := f.of(tc.ci)
		assert.Equal(t, tc.want, got, "%s %q", tc.ci.Name, tc.ci.Description)
		if tc.source == "" {
			tc.source = "prompt"
		}
		assert.Equal(t, tc.source, source, "%s", tc.ci.Name)
	}
}
