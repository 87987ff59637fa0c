package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/bridge/extensions"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// pi 1.5.2's startup flags (its `pi --help` and docs/cli.md). A pi host
// passes them to its agent (RpcClient's provider and model options become
// --provider and --model; its args option passes any others), so claude-rpc
// accepts every one of them: it maps a flag to the CLI or to the bridge
// where it can, refuses what it cannot honour at all (a provider other than
// anthropic) with exit status 1 and a clear message, and accepts the rest
// with a one-line warning. Exit status 2 is kept for what pi refuses too
// (an unknown flag, --fork with --no-session, …).

// thinkingLevels are pi's thinking levels.
var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// piShorthands are pi's short flags of more than one letter. pflag's
// shorthands are one letter (it would read -nt as -n t: --name t), so
// normalizeArgs rewrites them to their long names before parsing.
var piShorthands = map[string]string{
	"-nt":  "--no-tools",
	"-nbt": "--no-builtin-tools",
	"-xt":  "--exclude-tools",
	"-ne":  "--no-extensions",
	"-ns":  "--no-skills",
	"-np":  "--no-prompt-templates",
	"-nc":  "--no-context-files",
	"-na":  "--no-approve",
}

// ignoredPiFlags are pi's flags that claude-rpc accepts without effect, and
// why; each one given gets a warning.
var ignoredPiFlags = []struct{ name, why string }{
	{"print", "--mode rpc serves until stdin ends"},
	{"resume", "claude-rpc shows no session picker; use --session or --continue"},
	{"models", "cycle_model cycles through all the CLI's models"},
	{"prompt-template", "the CLI loads its own commands (.claude/commands)"},
	{"theme", "there is no terminal UI in --mode rpc"},
	{"use-theme", "there is no terminal UI in --mode rpc"},
	{"tui-mode", "there is no terminal UI in --mode rpc"},
	{"verbose", "there is no terminal UI in --mode rpc"},
	{"export", "claude-rpc exports with the export_html command only"},
}

// quietPiFlags are pi's flags whose meaning holds without claude-rpc doing
// anything, so they are accepted without a word:
//   - --approve (trust the project's own files): the CLI in print mode
//     skips its workspace trust dialog and loads the project's settings,
//     CLAUDE.md, commands and skills (its --help on 2.1.328);
//   - --no-extensions: read where extensions are found (pi's own places
//     are not looked in);
//   - --no-themes: there are no themes in --mode rpc.
var quietPiFlags = []string{"approve", "no-extensions", "no-themes"}

// definePiFlags adds pi's flags that claude-rpc's own do not cover
// (--mode, --model, --session, --continue, --no-session, --version are
// main's).
func definePiFlags(fs *pflag.FlagSet) {
	fs.String("provider", "", `pi's --provider: "anthropic" only (the CLI's provider)`)
	fs.String("api-key", "", "API key for the CLI (its ANTHROPIC_API_KEY)")
	fs.String("system-prompt", "", "replace the CLI's system prompt: the text, or the contents of a file with that path")
	fs.StringArray("append-system-prompt", nil, "append text, or a file's contents, to the system prompt (repeatable)")
	fs.StringP("name", "n", "", "the session's display name from the start (as set_session_name)")
	fs.String("thinking", "", "thinking level from the start: "+strings.Join(thinkingLevels, ", "))
	fs.String("session-id", "", "start on the working directory's session with this id, created when there is none")
	fs.String("fork", "", "start on a new session copied from this one (its id or transcript path)")
	fs.String("session-dir", "", "folder where pi session files are written and looked up (default: PI_CODING_AGENT_SESSION_DIR, pi's sessionDir setting, else ~/.pi/agent/sessions/--<cwd>--)")
	fs.StringP("tools", "t", "", "pi's tool names to enable (read, bash, edit, write), comma-separated; +name/-name adds to/removes from the default")
	fs.String("exclude-tools", "", "pi's tool names to disable (-xt), comma-separated; mcp__… names are passed on")
	fs.Bool("no-tools", false, "start with no tools (-nt): the CLI's --tools \"\" and --strict-mcp-config")
	fs.Bool("no-builtin-tools", false, "start without built-in tools (-nbt): the CLI's --tools \"\"")
	fs.Bool("no-mcp", false, "no MCP servers from the CLI's settings (its --strict-mcp-config)")
	fs.Bool("offline", false, "keep the CLI from non-essential network traffic (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)")
	fs.Bool("no-skills", false, "no skills but those of --skill (-ns): the CLI's skillOverrides and disableBundledSkills settings; with --no-prompt-templates, its --disable-slash-commands")
	fs.Bool("no-prompt-templates", false, "with --no-skills: the CLI's --disable-slash-commands (-np)")
	fs.StringArray("skill", nil, "load the skill in this folder (or SKILL.md file, or folder of skills) too (repeatable): given to the CLI with --add-dir")
	fs.Bool("no-context-files", false, "leave out CLAUDE.md files (-nc): the CLI's CLAUDE_CODE_DISABLE_CLAUDE_MDS")
	fs.StringArrayP("extension", "e", nil, "load this pi extension (a .ts or .js file, or a pi package's folder) with pi 1.6.0's own extension runtime, in Node "+extensions.MinNodeVersion+" or later on PATH (repeatable; README: what of pi's extension API it serves)")
	fs.Bool("no-approve", false, "ignore the project's own settings, CLAUDE.md, commands and skills (-na): the CLI's --setting-sources user")

	// Accepted without effect (ignoredPiFlags says why) or without a word
	// (quietPiFlags); hidden from --help.
	fs.BoolP("print", "p", false, "")
	fs.BoolP("resume", "r", false, "")
	fs.String("models", "", "")
	fs.StringArray("prompt-template", nil, "")
	fs.StringArray("theme", nil, "")
	fs.String("use-theme", "", "")
	fs.Bool("no-themes", false, "")
	fs.String("tui-mode", "", "")
	fs.Bool("verbose", false, "")
	fs.String("export", "", "")
	// --list-models [search] (listmodels.go): pi's search is optional and
	// may be the next argument, which normalizeArgs joins to the flag.
	// Without one the value is blank, which matches every model, as in pi.
	fs.String("list-models", "", "")
	fs.Lookup("list-models").NoOptDefVal = " "
	fs.BoolP("approve", "a", false, "")
	fs.Bool("no-extensions", false, "")
	_ = fs.MarkHidden("list-models") // described by usage's pi section
	for _, f := range ignoredPiFlags {
		_ = fs.MarkHidden(f.name) // defined just above
	}
	for _, name := range quietPiFlags {
		_ = fs.MarkHidden(name) // defined just above
	}
}

// normalizeArgs rewrites pi's multi-letter short flags (piShorthands) to
// their long names, and joins pi's --list-models to its search when the
// next argument is one (pi's rule: it starts with neither "-" nor "@"). It
// leaves alone what follows "--" and the value of a flag given as a
// separate argument (--name -nt names the session "-nt").
func normalizeArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if long, ok := piShorthands[a]; ok {
			a = long
		}
		if a == "--list-models" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "@") {
			i++
			out = append(out, a+"="+args[i])
			continue
		}
		out = append(out, a)
		if takesNext(fs, a) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// extensionFlagsKey holds, in the config, the long flags that are none of
// claude-rpc's: the extensions' own (registerFlag), as takeExtensionFlags
// found them.
const extensionFlagsKey = "extension-flags"

// takeExtensionFlags takes out of args the long flags fs does not define,
// as pi 1.6.0 collects them for its extensions (cli/args.js): --name=value;
// --name value when the next argument starts with neither "-" nor "@"; else
// a bare --name (true). What follows "--" stays.
func takeExtensionFlags(fs *pflag.FlagSet, args []string) ([]string, map[string]any) {
	out := make([]string, 0, len(args))
	flags := map[string]any{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), flags
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" || name == "help" || fs.Lookup(name) != nil {
			out = append(out, a)
			if takesNext(fs, a) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		switch {
		case hasValue:
			flags[name] = value
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "@"):
			i++
			flags[name] = args[i]
		default:
			flags[name] = true
		}
	}
	return out, flags
}

// takesNext reports whether flag argument a takes the next argument as its
// value.
func takesNext(fs *pflag.FlagSet, a string) bool {
	var f *pflag.Flag
	switch {
	case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
		f = fs.Lookup(a[2:])
	case len(a) == 2 && a[0] == '-':
		f = fs.ShorthandLookup(a[1:])
	}
	return f != nil && f.NoOptDefVal == "" && f.Value.Type() != "bool"
}

// refusal is an error about a flag pi accepts but claude-rpc cannot honour:
// the bridge does not start, with exit status 1 (2 is for flags pi refuses
// too).
type refusal struct{ error }

func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// exitStatus is the exit status for a startup error.
func exitStatus(err error) int {
	if errors.As(err, new(refusal)) {
		return 1
	}
	return 2
}

// piSessionID is pi's rule for --session-id.
var piSessionID = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// splitPiModel splits pi's --model pattern "[provider/]id[:thinking]". The
// suffix counts only when it is a thinking level (a Bedrock model id ends
// in ":0"); a Bedrock ARN ("arn:…/…") has no provider.
func splitPiModel(pattern string) (provider, model, level string) {
	model = pattern
	if i := strings.LastIndex(model, ":"); i >= 0 && slices.Contains(thinkingLevels, model[i+1:]) {
		model, level = model[:i], model[i+1:]
	}
	if p, rest, ok := strings.Cut(model, "/"); ok && !strings.HasPrefix(model, "arn:") {
		provider, model = p, rest
	}
	return provider, model, level
}

// piTool maps pi's built-in tool name to the CLI's (transform's piTools),
// for the tools the CLI offers: pi's grep, find and ls have no tool in the
// CLI (2.1.328 searches with Bash).
func piTool(name string) (string, bool) {
	cli := transform.CLIToolName(name)
	return cli, slices.Contains(cliBuiltinTools, cli)
}

// cliBuiltinTools are the tools of transform's piTools the CLI has.
var cliBuiltinTools = []string{"Read", "Bash", "Edit", "Write"}

// applyPiFlags sets opts (and the CLI's config in it) from pi's flags and
// warns, on log, about each one given that has no effect.
func applyPiFlags(v *viper.Viper, opts *bridge.Options, log *slog.Logger) error {
	for _, a := range v.GetStringSlice("positional-args") {
		if strings.HasPrefix(a, "@") {
			return fmt.Errorf("@file arguments are not supported in RPC mode (%s): send files with the prompt command", a)
		}
		log.Warn("argument ignored: in --mode rpc prompts come as prompt commands, as in pi", "arg", a)
	}

	// The model and its provider.
	provider, model, level := splitPiModel(opts.CLI.Model)
	if provider != "" && !strings.EqualFold(provider, "anthropic") {
		return refuse("--model %q is a model of provider %q: claude-rpc runs the Claude CLI, whose only provider is anthropic", opts.CLI.Model, provider)
	}
	if p := v.GetString("provider"); p != "" && !strings.EqualFold(p, "anthropic") {
		return refuse("--provider %q: claude-rpc runs the Claude CLI, whose only provider is anthropic (pass --provider anthropic, or none)", p)
	}
	opts.CLI.Model = model
	if t := v.GetString("thinking"); t != "" {
		if slices.Contains(thinkingLevels, t) {
			level = t
		} else {
			// pi warns and goes on with its default.
			log.Warn("--thinking ignored: not a thinking level", "level", t, "levels", strings.Join(thinkingLevels, ", "))
		}
	}
	opts.ThinkingLevel = level

	// The session.
	opts.SessionName = v.GetString("name")
	opts.SessionID = v.GetString("session-id")
	if opts.SessionID != "" {
		if !piSessionID.MatchString(opts.SessionID) {
			return fmt.Errorf("--session-id %q: a session id is letters, digits, '-', '_' and '.', and begins and ends with a letter or digit", opts.SessionID)
		}
		if opts.Session != "" || opts.Continue {
			return errors.New("--session-id cannot be combined with --session or --continue")
		}
	}
	if fork := v.GetString("fork"); fork != "" {
		switch {
		case opts.Session != "":
			return errors.New("--fork cannot be combined with --session")
		case opts.Continue:
			return errors.New("--fork cannot be combined with --continue")
		case opts.CLI.NoPersistence:
			return errors.New("--fork cannot be combined with --no-session")
		}
		opts.Session, opts.Fork = fork, true
	}
	opts.SessionDir = v.GetString("session-dir")

	// The CLI's environment and command line.
	var env []string
	if key := v.GetString("api-key"); key != "" {
		env = append(env, "ANTHROPIC_API_KEY="+key)
	}
	if v.GetBool("offline") {
		env = append(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	}
	if v.GetBool("no-context-files") {
		// Checked on 2.1.328: the user's and the project's CLAUDE.md are
		// then left out of the API requests. (The CLI reads no AGENTS.md.)
		env = append(env, "CLAUDE_CODE_DISABLE_CLAUDE_MDS=1")
	}
	if env != nil {
		base := opts.CLI.Env
		if base == nil {
			base = os.Environ()
		}
		opts.CLI.Env = append(slices.Clip(base), env...) // the last value of a key wins
	}
	var args []string
	if sp := v.GetString("system-prompt"); sp != "" {
		text, err := textOrFile(sp)
		if err != nil {
			return fmt.Errorf("--system-prompt: %w", err)
		}
		args = append(args, "--system-prompt="+text)
	}
	var appended []string
	for _, a := range v.GetStringSlice("append-system-prompt") {
		text, err := textOrFile(a)
		if err != nil {
			return fmt.Errorf("--append-system-prompt: %w", err)
		}
		appended = append(appended, text)
	}
	opts.CLI.AppendSystemPrompt = strings.Join(appended, "\n\n")
	toolArgs, err := piToolArgs(v, log)
	if err != nil {
		return err
	}
	args = append(args, toolArgs...)
	if v.GetBool("no-approve") {
		// Checked on 2.1.328: the project's CLAUDE.md, .claude/commands
		// and .claude/skills are then not loaded, nor its settings files.
		args = append(args, "--setting-sources=user")
	}
	skills := v.GetStringSlice("skill")
	if len(skills) > 0 && v.GetBool("no-approve") {
		// Checked on 2.1.328: the CLI reads an added folder's skills as the
		// project's, which --setting-sources user leaves out.
		log.Warn("--skill ignored: with --no-approve the CLI loads no skills but the user's")
	} else if len(skills) > 0 {
		dir, err := skillDir(skills, log)
		if err != nil {
			log.Warn("--skill ignored: "+err.Error(), "skills", strings.Join(skills, ","))
		} else if dir != "" {
			args = append(args, "--add-dir="+dir)
		}
	}
	switch noSkills, noTemplates := v.GetBool("no-skills"), v.GetBool("no-prompt-templates"); {
	case noSkills && noTemplates:
		args = append(args, "--disable-slash-commands")
		if len(skills) > 0 {
			log.Warn("--skill ignored: with --no-skills and --no-prompt-templates the CLI loads no skills at all (--disable-slash-commands)")
		}
	case noSkills:
		setSkillsOff(opts)
		// The skills of the CLI's plugins (its built-in ones too) are known
		// only once it runs.
		log.Warn("--no-skills: the skills of the CLI's plugins stay (turn the plugins off in its settings)")
	case noTemplates:
		log.Warn("--no-prompt-templates ignored: the CLI can turn off commands only together with skills (add --no-skills)")
	}
	opts.CLI.ExtraArgs = append(opts.CLI.ExtraArgs, args...)
	for _, e := range v.GetStringSlice("extension") {
		// The extension host runs in the CLI's folder: a relative path is
		// the bridge's.
		if abs, err := filepath.Abs(e); err == nil {
			e = abs
		}
		opts.Extensions = append(opts.Extensions, e)
	}
	// As pi: what it finds itself (its folders and settings) loads too,
	// unless --no-extensions; no Node starts when there is nothing.
	if !v.GetBool("no-extensions") {
		dir := opts.CLI.Dir
		if dir == "" {
			dir, _ = os.Getwd()
		}
		opts.ExtensionsDiscover = extensions.Discoverable(dir, opts.CLI.Env)
	}
	// An extension's flags (pi's registerFlag) go to the extensions, which
	// say, once loaded, which of them none registered (pi's "Unknown
	// option"). With no extension to take them they are unknown flags.
	if flags, _ := v.Get(extensionFlagsKey).(map[string]any); len(flags) > 0 {
		if len(opts.Extensions) == 0 && !opts.ExtensionsDiscover {
			return fmt.Errorf("unknown flag: --%s (no extension is loaded that could take it)", slices.Sorted(maps.Keys(flags))[0])
		}
		opts.ExtensionFlags = flags
	}

	for _, f := range ignoredPiFlags {
		if given(v, f.name) {
			log.Warn(fmt.Sprintf("--%s ignored: %s", f.name, f.why))
		}
	}
	return nil
}

// setSkillsOff turns off, with the CLI's flag settings, the skills it
// ships with (disableBundledSkills) and every skill of the user's and the
// project's .claude/skills folders (skillOverrides "off": hidden from the
// model and from the commands; checked on 2.1.328). Skills of --skill
// folders stay, as in pi.
func setSkillsOff(opts *bridge.Options) {
	configDir := sessions.ConfigDir(opts.CLI.Environ())
	dir := opts.CLI.Dir
	if dir == "" {
		dir, _ = os.Getwd() // "": no project skills found, the user's still are
	}
	off := map[string]any{}
	for _, r := range append(claudecli.UserResources(configDir), claudecli.ProjectResources(configDir, dir)...) {
		if r.Skill {
			off[r.Name] = "off"
		}
	}
	if opts.CLI.Settings == nil {
		opts.CLI.Settings = map[string]any{}
	}
	opts.CLI.Settings["disableBundledSkills"] = true
	if len(off) > 0 {
		opts.CLI.Settings["skillOverrides"] = off
	}
}

// skillDir makes the folder whose .claude/skills links to the skills of
// pi's --skill paths, for the CLI's --add-dir (checked on 2.1.328: the CLI
// loads the skills of an added folder, each named by its folder's name, and
// follows symbolic links). A path is a skill folder (holding SKILL.md), a
// folder of skill folders, or a skill's Markdown file. The folder lives in
// the user's cache, named by the paths, so it is made once and left there.
// It returns "" when no path holds a skill (each one warned about).
func skillDir(paths []string, log *slog.Logger) (string, error) {
	links := map[string]string{} // name -> the skill's folder or file
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil:
			log.Warn("--skill: no such file or folder", "path", p)
		case !st.IsDir() && strings.EqualFold(filepath.Base(abs), "SKILL.md"):
			// The skill is its folder, with whatever else the folder holds.
			links[filepath.Base(filepath.Dir(abs))] = filepath.Dir(abs)
		case !st.IsDir():
			links[strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))] = abs
		case isFile(filepath.Join(abs, "SKILL.md")):
			links[filepath.Base(abs)] = abs
		default:
			found := false
			entries, _ := os.ReadDir(abs)
			for _, e := range entries {
				if sub := filepath.Join(abs, e.Name()); isFile(filepath.Join(sub, "SKILL.md")) {
					links[e.Name()], found = sub, true
				}
			}
			if !found {
				log.Warn("--skill: no SKILL.md in the folder or its subfolders", "path", p)
			}
		}
	}
	if len(links) == 0 {
		return "", nil
	}
	names := slices.Sorted(maps.Keys(links))
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, links[n])
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(cache, "claude-rpc", "skills", hex.EncodeToString(h.Sum(nil))[:16])
	skills := filepath.Join(root, ".claude", "skills")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		return "", err
	}
	for _, n := range names {
		if err := placeSkill(links[n], filepath.Join(skills, n)); err != nil {
			return "", err
		}
	}
	return root, nil
}

// placeSkill makes at where a skill in target: a lone Markdown file is
// copied as at/SKILL.md (a few KB, written again when it changed); a
// skill's folder is linked, or copied whole on Windows (a link needs a
// privilege there) and where the system refuses a link. A link an earlier
// start made is kept when it still points at target; a copy is made anew.
func placeSkill(target, at string) error {
	if isFile(target) {
		b, err := os.ReadFile(target)
		if err != nil {
			return err
		}
		md := filepath.Join(at, "SKILL.md")
		if cur, err := os.ReadFile(md); err == nil && bytes.Equal(cur, b) {
			return nil
		}
		_ = os.RemoveAll(at) // a link or folder of an earlier start; none is fine
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		return os.WriteFile(md, b, 0o644)
	}
	if cur, err := os.Readlink(at); err == nil && cur == target {
		return nil
	}
	_ = os.RemoveAll(at)
	if runtime.GOOS != "windows" && os.Symlink(target, at) == nil {
		return nil
	}
	return os.CopyFS(at, os.DirFS(target))
}

// isFile reports whether path is a file (not a folder).
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// piToolArgs maps --tools, --exclude-tools, --no-tools and
// --no-builtin-tools to the CLI's --tools, --disallowedTools and
// --strict-mcp-config.
func piToolArgs(v *viper.Viper, log *slog.Logger) ([]string, error) {
	var args []string
	noTools, noBuiltin := v.GetBool("no-tools"), v.GetBool("no-builtin-tools")
	var allow, deny []string
	if list := v.GetString("tools"); list != "" {
		var plain, modifiers int
		for _, name := range splitList(list) {
			op := byte(0)
			if name[0] == '+' || name[0] == '-' {
				op, name = name[0], name[1:]
				modifiers++
			} else {
				plain++
			}
			cli, ok := piTool(name)
			switch {
			case !ok:
				log.Warn("--tools: tool ignored: the CLI has no tool of that name (it searches with Bash)", "tool", name)
			case op == '-':
				deny = append(deny, cli)
			default:
				allow = append(allow, cli)
			}
		}
		if plain > 0 && modifiers > 0 {
			return nil, errors.New("--tools: plain names and +name/-name entries cannot be mixed")
		}
		if plain > 0 {
			// An allowlist replaces the default tools, whatever of it the
			// CLI has.
			args = append(args, "--tools="+strings.Join(allow, ","))
		} else if noTools || noBuiltin {
			args = append(args, "--tools="+strings.Join(allow, ","))
		}
	} else if noTools || noBuiltin {
		args = append(args, "--tools=")
	}
	if noTools {
		args = append(args, "--strict-mcp-config")
	} else if v.GetBool("no-mcp") {
		args = append(args, "--strict-mcp-config")
	}
	if list := v.GetString("exclude-tools"); list != "" {
		for _, name := range splitList(list) {
			if strings.HasPrefix(name, "mcp__") {
				deny = append(deny, name)
			} else if cli, ok := piTool(name); ok {
				deny = append(deny, cli)
			} else {
				log.Warn("--exclude-tools: tool ignored: the CLI has no tool of that name", "tool", name)
			}
		}
	}
	if len(deny) > 0 {
		args = append(args, "--disallowedTools="+strings.Join(deny, ","))
	}
	return args, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// textOrFile is pi's reading of --system-prompt and --append-system-prompt:
// the contents of the file at that path when there is one, else the text.
func textOrFile(s string) (string, error) {
	st, err := os.Stat(s)
	if err != nil || st.IsDir() {
		return s, nil
	}
	b, err := os.ReadFile(s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// given reports whether flag name was set to something other than its
// zero value (on the command line, in the environment or in a config
// file).
func given(v *viper.Viper, name string) bool {
	switch x := v.Get(name).(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []string:
		return len(x) > 0
	default:
		return v.GetString(name) != "" && v.GetString(name) != "false" && v.GetString(name) != "[]"
	}
}
