package claudecli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Resource is a slash command or a skill the CLI loads from a file of its
// user's or a project's .claude folder (checked on 2.1.328: the initialize
// answer lists them by these names, their descriptions ending in " (user)"
// or " (project)").
type Resource struct {
	// Name is the name the CLI gives it: a command's path under commands/
	// without ".md", folders joined by ":" (commands/sub/x.md is "sub:x");
	// a skill's folder name (the SKILL.md's own name: field is not used).
	Name string
	// Skill tells a skill (a folder holding SKILL.md) from a command.
	Skill bool
	// Path is the absolute path of the command's file or the skill's
	// SKILL.md, symbolic links resolved.
	Path string
	// Scope is "user" (the CLI's config folder) or "project" (a .claude
	// folder of the working directory or one of its parents), or the scope
	// SkillsIn was given.
	Scope string
	// BaseDir is the .claude folder it was found in; for SkillsIn's, the
	// skill's own folder (links resolved).
	BaseDir string
}

// UserResources lists the commands and skills of the CLI's config folder
// (configDir: CLAUDE_CONFIG_DIR or ~/.claude).
func UserResources(configDir string) []Resource {
	return scanResources(configDir, "user")
}

// ProjectResources lists the commands and skills of the .claude folders of
// dir and of its parents (the CLI lists a parent folder's commands too:
// checked on 2.1.328), nearest first; the user's config folder, should one
// of them be it, is left out.
func ProjectResources(configDir, dir string) []Resource {
	var out []Resource
	user, _ := filepath.Abs(configDir)
	for d := filepath.Clean(dir); ; {
		if c := filepath.Join(d, ".claude"); c != user {
			out = append(out, scanResources(c, "project")...)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return out
		}
		d = parent
	}
}

// SkillsIn lists the skills in root/.claude/skills (root: a folder given to
// the CLI with --add-dir, whose skills the CLI loads too), with scope.
func SkillsIn(root, scope string) []Resource {
	var out []Resource
	for _, r := range scanResources(filepath.Join(root, ".claude"), scope) {
		if r.Skill {
			r.BaseDir = filepath.Dir(r.Path)
			out = append(out, r)
		}
	}
	return out
}

// scanResources reads claudeDir/commands/**/*.md and
// claudeDir/skills/*/SKILL.md. Unreadable folders are skipped: the CLI
// skips them too.
func scanResources(claudeDir, scope string) []Resource {
	var out []Resource
	base := resolved(claudeDir)
	cmds := filepath.Join(claudeDir, "commands")
	_ = filepath.WalkDir(cmds, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil // a folder that cannot be read is skipped, not fatal
		}
		rel, err := filepath.Rel(cmds, path)
		if err != nil {
			return nil
		}
		name := strings.ReplaceAll(filepath.ToSlash(strings.TrimSuffix(rel, ".md")), "/", ":")
		out = append(out, Resource{Name: name, Path: resolved(path), Scope: scope, BaseDir: base})
		return nil
	})
	skills := filepath.Join(claudeDir, "skills")
	entries, _ := os.ReadDir(skills) // none: no skills
	for _, e := range entries {
		file := filepath.Join(skills, e.Name(), "SKILL.md")
		if st, err := os.Stat(file); err == nil && !st.IsDir() {
			out = append(out, Resource{Name: e.Name(), Skill: true, Path: resolved(file), Scope: scope, BaseDir: base})
		}
	}
	return out
}

// resolved is path with symbolic links resolved, or path when that fails.
func resolved(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return path
}
