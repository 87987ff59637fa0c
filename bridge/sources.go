package bridge

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// commandFiles are the files the CLI's commands and skills come from, as
// far as the bridge can tell: the user's and the project's .claude folders,
// the folders given to the CLI with --add-dir (pi's --skill) and
// --plugin-dir. The CLI's initialize answer gives no paths (checked on
// 2.1.328): a user's or project's command or skill has its description end
// in " (user)" or " (project)", a plugin's is named "<plugin>:<name>" and
// its description begins with "(<plugin>) ", the CLI's own are "builtin".
type commandFiles struct {
	user, project, added []claudecli.Resource
	plugins              map[string]string // a --plugin-dir plugin's name -> its folder
}

// commandFiles reads the folders the CLI of s.opts loads commands from.
// It only reads files; a folder that cannot be read counts as empty.
func (s *server) commandFiles() commandFiles {
	configDir := sessions.ConfigDir(s.opts.CLI.Environ())
	dir := s.opts.CLI.Dir
	if dir == "" {
		dir, _ = os.Getwd() // "": no project files are found
	}
	f := commandFiles{user: claudecli.UserResources(configDir), plugins: map[string]string{}}
	if dir != "" {
		f.project = claudecli.ProjectResources(configDir, dir)
	}
	args := s.opts.CLI.ExtraArgs
	for i := 0; i < len(args); i++ {
		flag, value, ok := strings.Cut(args[i], "=")
		if !ok && (flag == "--add-dir" || flag == "--plugin-dir") && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch flag {
		case "--add-dir":
			f.added = append(f.added, claudecli.SkillsIn(value, "temporary")...)
		case "--plugin-dir":
			f.plugins[filepath.Base(value)] = value
		}
	}
	return f
}

// of is the sourceInfo of one of the CLI's commands, and its pi source:
// "skill" for a skill found in the files, else "prompt". The values are
// those pi 1.5.2 gives its own (checked: get_commands with a user's and a
// project's prompt and skill and a --skill one): "auto" for what it found
// in the user's or the project's folder, with that folder as baseDir;
// "local" with scope "temporary" for --skill's, its folder as baseDir;
// path "builtin:<name>", source "builtin", scope "temporary" for its own.
func (f commandFiles) of(ci claudecli.CommandInfo) (sourceInfo, string) {
	if ci.Builtin {
		return sourceInfo{Path: "builtin:" + ci.Name, Source: "builtin", Scope: "temporary", Origin: "top-level"}, "prompt"
	}
	if plugin, _, ok := strings.Cut(ci.Name, ":"); ok && strings.HasPrefix(ci.Description, "("+plugin+")") {
		info := sourceInfo{Path: "plugin:" + plugin, Source: plugin, Scope: "user", Origin: "package"}
		if dir, ok := f.plugins[plugin]; ok {
			info.Path, info.BaseDir, info.Scope = dir, dir, "temporary"
		}
		return info, "prompt"
	}
	// The CLI names the scope; the files say where. --skill's folders
	// count as the project's to the CLI.
	lists := [][]claudecli.Resource{f.project, f.user, f.added}
	switch {
	case strings.HasSuffix(ci.Description, " (user)"):
		lists = [][]claudecli.Resource{f.user}
	case strings.HasSuffix(ci.Description, " (project)"):
		lists = [][]claudecli.Resource{f.project, f.added}
	}
	for _, list := range lists {
		for _, r := range list {
			if r.Name != ci.Name {
				continue
			}
			info := sourceInfo{Path: r.Path, Source: "auto", Scope: r.Scope, Origin: "top-level", BaseDir: r.BaseDir}
			if r.Scope == "temporary" {
				info.Source = "local"
			}
			kind := "prompt"
			if r.Skill {
				kind = "skill"
			}
			return info, kind
		}
	}
	// Not found in the files (a command the CLI got elsewhere): the scope
	// it names, no path.
	scope := "user"
	if strings.HasSuffix(ci.Description, " (project)") {
		scope = "project"
	}
	return sourceInfo{Path: "", Source: "auto", Scope: scope, Origin: "top-level"}, "prompt"
}
