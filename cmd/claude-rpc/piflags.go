package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/claude-rpc/claude-rpc/bridge"
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
	{"extension", "claude-rpc runs no pi extensions"},
	{"no-extensions", "claude-rpc runs no pi extensions"},
	{"skill", "the CLI loads its own skills (.claude/skills)"},
	{"prompt-template", "the CLI loads its own commands (.claude/commands)"},
	{"theme", "there is no terminal UI in --mode rpc"},
	{"use-theme", "there is no terminal UI in --mode rpc"},
	{"no-themes", "there is no terminal UI in --mode rpc"},
	{"tui-mode", "there is no terminal UI in --mode rpc"},
	{"verbose", "there is no terminal UI in --mode rpc"},
	{"no-context-files", "the CLI reads its CLAUDE.md files itself"},
	{"export", "claude-rpc exports with the export_html command only"},
	{"list-models", "get_available_models lists the CLI's models"},
	{"approve", "the CLI decides about project files itself"},
	{"no-approve", "the CLI decides about project files itself"},
}

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
	fs.String("session-dir", "", "folder where sessions are stored and looked up")
	fs.StringP("tools", "t", "", "pi's tool names to enable (read, bash, edit, write), comma-separated; +name/-name adds to/removes from the default")
	fs.String("exclude-tools", "", "pi's tool names to disable (-xt), comma-separated; mcp__… names are passed on")
	fs.Bool("no-tools", false, "start with no tools (-nt): the CLI's --tools \"\" and --strict-mcp-config")
	fs.Bool("no-builtin-tools", false, "start without built-in tools (-nbt): the CLI's --tools \"\"")
	fs.Bool("no-mcp", false, "no MCP servers from the CLI's settings (its --strict-mcp-config)")
	fs.Bool("offline", false, "keep the CLI from non-essential network traffic (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)")
	fs.Bool("no-skills", false, "with --no-prompt-templates: the CLI's --disable-slash-commands (-ns)")
	fs.Bool("no-prompt-templates", false, "with --no-skills: the CLI's --disable-slash-commands (-np)")

	// Accepted without effect (ignoredPiFlags says why); hidden from --help.
	fs.BoolP("print", "p", false, "")
	fs.BoolP("resume", "r", false, "")
	fs.String("models", "", "")
	fs.StringArrayP("extension", "e", nil, "")
	fs.Bool("no-extensions", false, "")
	fs.StringArray("skill", nil, "")
	fs.StringArray("prompt-template", nil, "")
	fs.StringArray("theme", nil, "")
	fs.String("use-theme", "", "")
	fs.Bool("no-themes", false, "")
	fs.String("tui-mode", "", "")
	fs.Bool("verbose", false, "")
	fs.Bool("no-context-files", false, "")
	fs.String("export", "", "")
	fs.String("list-models", "", "")
	fs.Lookup("list-models").NoOptDefVal = "*" // pi's [search] is optional
	fs.BoolP("approve", "a", false, "")
	fs.Bool("no-approve", false, "")
	for _, f := range ignoredPiFlags {
		_ = fs.MarkHidden(f.name) // defined just above
	}
}

// normalizeArgs rewrites pi's multi-letter short flags (piShorthands) to
// their long names. It leaves alone what follows "--" and the value of a
// flag given as a separate argument (--name -nt names the session "-nt").
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
		out = append(out, a)
		if takesNext(fs, a) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
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

// piTool maps pi's built-in tool name to the CLI's (transform.PiTools),
// for the tools the CLI offers: pi's grep, find and ls have no tool in the
// CLI (2.1.328 searches with Bash).
func piTool(name string) (string, bool) {
	cli := transform.CLIToolName(name)
	return cli, slices.Contains(cliBuiltinTools, cli)
}

// cliBuiltinTools are the tools of transform.PiTools the CLI has.
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
	if dir := v.GetString("session-dir"); dir != "" {
		log.Warn("--session-dir ignored: the Claude CLI keeps its sessions under its config folder (CLAUDE_CONFIG_DIR, default ~/.claude/projects)", "dir", dir)
	}

	// The CLI's environment and command line.
	var env []string
	if key := v.GetString("api-key"); key != "" {
		env = append(env, "ANTHROPIC_API_KEY="+key)
	}
	if v.GetBool("offline") {
		env = append(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
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
	if len(appended) > 0 {
		args = append(args, "--append-system-prompt="+strings.Join(appended, "\n\n"))
	}
	toolArgs, err := piToolArgs(v, log)
	if err != nil {
		return err
	}
	args = append(args, toolArgs...)
	switch noSkills, noTemplates := v.GetBool("no-skills"), v.GetBool("no-prompt-templates"); {
	case noSkills && noTemplates:
		args = append(args, "--disable-slash-commands")
	case noSkills:
		log.Warn("--no-skills ignored: the CLI can turn off skills only together with commands (add --no-prompt-templates)")
	case noTemplates:
		log.Warn("--no-prompt-templates ignored: the CLI can turn off commands only together with skills (add --no-skills)")
	}
	opts.CLI.ExtraArgs = append(opts.CLI.ExtraArgs, args...)

	for _, f := range ignoredPiFlags {
		if given(v, f.name) {
			log.Warn(fmt.Sprintf("--%s ignored: %s", f.name, f.why))
		}
	}
	return nil
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
