package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// piOptions runs args (after --mode rpc) through loadConfig and
// bridgeOptions as main does, and returns the options, the warnings logged
// (one per line) and the error with the exit status main would give it.
func piOptions(t *testing.T, args ...string) (bridge.Options, []string, error, int) {
	t.Helper()
	v, err := loadConfig(append([]string{"--mode", "rpc", "--claude-path", "/nonexistent/claude"}, args...))
	if err != nil {
		return bridge.Options{}, nil, err, 2 // as run: a flag error
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts, err := bridgeOptions(v, log)
	var warnings []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if l != "" && !strings.Contains(l, "the Claude CLI was not found") {
			warnings = append(warnings, l)
		}
	}
	status := 0
	if err != nil {
		status = exitStatus(err)
	}
	return opts, warnings, err, status
}

// isolateConfig keeps the user's config file and CLAUDE_RPC_* variables out
// of a test of flags.
func isolateConfig(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv(sessions.HomeVar(), os.Getenv("HOME")) // the CLI's home on Windows: USERPROFILE
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CLAUDE_RPC_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestPiFlags(t *testing.T) {
	isolateConfig(t)
	dir := t.TempDir()
	promptFile := filepath.Join(dir, "prompt.md")
	require.NoError(t, os.WriteFile(promptFile, []byte("From a file."), 0o644))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// A user's and a project's skill (-ns turns them off), and skills to
	// give with --skill in each of the forms pi takes.
	home := os.Getenv(sessions.HomeVar()) // isolateConfig's
	project := t.TempDir()
	t.Chdir(project)
	mkfile(t, filepath.Join(home, ".claude", "skills", "uskill", "SKILL.md"), "---\nname: uskill\n---\n")
	mkfile(t, filepath.Join(project, ".claude", "skills", "pskill", "SKILL.md"), "---\nname: pskill\n---\n")
	mkfile(t, filepath.Join(project, ".claude", "commands", "pcmd.md"), "not a skill")
	skillFolder, skillFolder2, skillsParent := filepath.Join(dir, "alpha"), filepath.Join(dir, "beta"), filepath.Join(dir, "many")
	loneSkill := filepath.Join(dir, "lone.md")
	mkfile(t, filepath.Join(skillFolder, "SKILL.md"), "alpha's")
	mkfile(t, filepath.Join(skillFolder2, "SKILL.md"), "beta's")
	mkfile(t, filepath.Join(skillsParent, "gamma", "SKILL.md"), "gamma's")
	mkfile(t, loneSkill, "lone's")
	for _, tc := range []struct {
		name string
		args []string
		// check looks at the options; nil: none.
		check func(t *testing.T, o bridge.Options)
		// warn lists a substring of each warning expected, in order;
		// no other warning may come.
		warn []string
		// errWant, when set, is a substring of the expected error, and
		// status main's exit status for it.
		errWant string
		status  int
	}{
		{name: "RpcClient's provider and model options",
			args: []string{"--provider", "anthropic", "--model", "claude-sonnet-4-5"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "claude-sonnet-4-5", o.CLI.Model)
				assert.Empty(t, o.ThinkingLevel)
				assert.Empty(t, o.CLI.ExtraArgs)
			}},
		{name: "the provider's name in any case", args: []string{"--provider", "Anthropic"}},
		{name: "another provider is refused, not a usage error",
			args: []string{"--provider", "openai", "--model", "gpt-4o"}, errWant: `--provider "openai": claude-rpc runs the Claude CLI, whose only provider is anthropic`, status: 1},
		{name: "a model of another provider is refused",
			args: []string{"--model", "openai/gpt-4o"}, errWant: `"openai/gpt-4o" is a model of provider "openai"`, status: 1},
		{name: "provider/id and a thinking suffix",
			args: []string{"--model", "anthropic/sonnet:high"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "sonnet", o.CLI.Model)
				assert.Equal(t, "high", o.ThinkingLevel)
			}},
		{name: "--thinking wins over the model's suffix",
			args: []string{"--model", "opus:max", "--thinking", "low"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "opus", o.CLI.Model)
				assert.Equal(t, "low", o.ThinkingLevel)
			}},
		{name: "a Bedrock model id keeps its :0",
			args: []string{"--model", "anthropic.claude-opus-4-1-20250805-v1:0"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "anthropic.claude-opus-4-1-20250805-v1:0", o.CLI.Model)
				assert.Empty(t, o.ThinkingLevel)
			}},
		{name: "a Bedrock ARN is no provider/id",
			args: []string{"--model", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc", o.CLI.Model)
			}},
		{name: "--thinking max", args: []string{"--thinking", "max"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, "max", o.ThinkingLevel) }},
		{name: "an unknown thinking level is a warning, as in pi",
			args: []string{"--thinking", "bogus"}, warn: []string{"--thinking ignored"},
			check: func(t *testing.T, o bridge.Options) { assert.Empty(t, o.ThinkingLevel) }},
		{name: "--name", args: []string{"--name", "Refactor auth"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, "Refactor auth", o.SessionName) }},
		{name: "-n", args: []string{"-n", "short"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, "short", o.SessionName) }},
		{name: "-n takes a value that looks like pi's -nt",
			args: []string{"-n", "-nt"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "-nt", o.SessionName)
				assert.Empty(t, o.CLI.ExtraArgs)
			}},
		{name: "-c", args: []string{"-c"},
			check: func(t *testing.T, o bridge.Options) { assert.True(t, o.Continue) }},
		{name: "--session-id", args: []string{"--session-id", "my-session_1.2"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, "my-session_1.2", o.SessionID) }},
		{name: "--session-id with --no-session", args: []string{"--no-session", "--session-id", "abc-1"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "abc-1", o.SessionID)
				assert.True(t, o.CLI.NoPersistence)
			}},
		{name: "a session id as pi refuses it", args: []string{"--session-id", "bad id!"}, errWant: "--session-id", status: 2},
		{name: "a session id beginning with a dash", args: []string{"--session-id=-abc"}, errWant: "--session-id", status: 2},
		{name: "--session-id with --continue", args: []string{"--session-id", "abc", "-c"}, errWant: "cannot be combined", status: 2},
		{name: "--session-id with --session", args: []string{"--session-id", "abc", "--session", "def"}, errWant: "cannot be combined", status: 2},
		{name: "--fork", args: []string{"--fork", "0a1b2c"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "0a1b2c", o.Session)
				assert.True(t, o.Fork)
			}},
		{name: "--fork with --session-id names the copy", args: []string{"--fork", "0a1b2c", "--session-id", "copy-1"},
			check: func(t *testing.T, o bridge.Options) {
				assert.True(t, o.Fork)
				assert.Equal(t, "copy-1", o.SessionID)
			}},
		{name: "--fork with --no-session", args: []string{"--fork", "x", "--no-session"}, errWant: "--fork cannot be combined with --no-session", status: 2},
		{name: "--fork with --continue", args: []string{"--fork", "x", "-c"}, errWant: "--fork cannot be combined with --continue", status: 2},
		{name: "--session-dir: where pi's session files go", args: []string{"--session-dir", "sessions"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "sessions", o.SessionDir)
				assert.True(t, o.PiSessions, "pi's files are kept by default")
			}},
		{name: "--pi-sessions=false", args: []string{"--pi-sessions=false"},
			check: func(t *testing.T, o bridge.Options) { assert.False(t, o.PiSessions) }},
		{name: "-nt: no tools at all", args: []string{"-nt"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--tools=", "--strict-mcp-config"}, o.CLI.ExtraArgs)
			}},
		{name: "-nbt: no built-in tools", args: []string{"-nbt"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, []string{"--tools="}, o.CLI.ExtraArgs) }},
		{name: "--tools: pi's names, those the CLI has",
			args: []string{"-t", "read,bash,grep"}, warn: []string{"tool=grep"},
			check: func(t *testing.T, o bridge.Options) { assert.Equal(t, []string{"--tools=Read,Bash"}, o.CLI.ExtraArgs) }},
		{name: "--tools: +name/-name change the default",
			args: []string{"--tools", "+write,-edit"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--disallowedTools=Edit"}, o.CLI.ExtraArgs)
			}},
		{name: "--tools: names and +name/-name mixed, as pi refuses", args: []string{"--tools", "read,-edit"}, errWant: "cannot be mixed", status: 2},
		{name: "-xt: the CLI's names and MCP tools",
			args: []string{"-xt", "write,mcp__srv__x"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--disallowedTools=Write,mcp__srv__x"}, o.CLI.ExtraArgs)
			}},
		{name: "--no-mcp", args: []string{"--no-mcp"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--strict-mcp-config"}, o.CLI.ExtraArgs)
			}},
		{name: "-ns -np", args: []string{"-ns", "-np"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--disable-slash-commands"}, o.CLI.ExtraArgs)
			}},
		{name: "-ns alone: the skills found turned off, a warning for the plugins'",
			args: []string{"-ns"}, warn: []string{"the skills of the CLI's plugins stay"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Empty(t, o.CLI.ExtraArgs)
				assert.Equal(t, map[string]any{"disableBundledSkills": true, "skillOverrides": map[string]any{"uskill": "off", "pskill": "off"}}, o.CLI.Settings)
			}},
		{name: "-ns -np with --skill: nothing loads", args: []string{"-ns", "-np", "--skill", skillFolder},
			warn: []string{"--skill ignored"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Contains(t, o.CLI.ExtraArgs, "--disable-slash-commands")
			}},
		{name: "--skill: a skill folder, a SKILL.md, a lone file, a folder of skills",
			args: []string{"--skill", skillFolder, "--skill", filepath.Join(skillFolder2, "SKILL.md"), "--skill", loneSkill, "--skill", skillsParent},
			check: func(t *testing.T, o bridge.Options) {
				require.Len(t, o.CLI.ExtraArgs, 1)
				dir, ok := strings.CutPrefix(o.CLI.ExtraArgs[0], "--add-dir=")
				require.True(t, ok, o.CLI.ExtraArgs[0])
				for name, want := range map[string]string{"alpha": filepath.Join(skillFolder, "SKILL.md"), "beta": filepath.Join(skillFolder2, "SKILL.md"),
					"lone": loneSkill, "gamma": filepath.Join(skillsParent, "gamma", "SKILL.md")} {
					b, err := os.ReadFile(filepath.Join(dir, ".claude", "skills", name, "SKILL.md"))
					require.NoError(t, err, name)
					w, _ := os.ReadFile(want)
					assert.Equal(t, string(w), string(b), name)
				}
			}},
		{name: "--skill: a path with no skill", args: []string{"--skill", filepath.Join(dir, "missing")},
			warn:  []string{"--skill: no such file or folder"},
			check: func(t *testing.T, o bridge.Options) { assert.Empty(t, o.CLI.ExtraArgs) }},
		{name: "-nc: the CLI leaves out CLAUDE.md", args: []string{"-nc"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, "CLAUDE_CODE_DISABLE_CLAUDE_MDS=1", o.CLI.Env[len(o.CLI.Env)-1])
			}},
		{name: "-na with --skill", args: []string{"-na", "--skill", skillFolder}, warn: []string{"--skill ignored: with --no-approve"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--setting-sources=user"}, o.CLI.ExtraArgs)
			}},
		{name: "-na: the CLI's user settings only", args: []string{"-na"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--setting-sources=user"}, o.CLI.ExtraArgs)
			}},
		{name: "-a, -ne and --no-themes: pi's meaning holds, no word", args: []string{"-a", "-ne", "--no-themes"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Empty(t, o.CLI.ExtraArgs)
				assert.Nil(t, o.CLI.Env)
			}},
		{name: "--approve, as an editor front end passes it", args: []string{"--approve"}},
		{name: "--api-key and --offline go to the CLI's environment",
			args: []string{"--api-key", "sk-from-flag", "--offline"},
			check: func(t *testing.T, o bridge.Options) {
				require.NotNil(t, o.CLI.Env)
				n := len(o.CLI.Env)
				assert.Equal(t, []string{"ANTHROPIC_API_KEY=sk-from-flag", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, o.CLI.Env[n-2:])
			}},
		{name: "--system-prompt and --append-system-prompt: text or a file's contents",
			args: []string{"--system-prompt", promptFile, "--append-system-prompt", "Be brief, say \"ok\".", "--append-system-prompt", promptFile},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, []string{"--system-prompt=From a file."}, o.CLI.ExtraArgs)
				assert.Equal(t, "Be brief, say \"ok\".\n\nFrom a file.", o.CLI.AppendSystemPrompt)
			}},
		{name: "flags without effect: one warning each",
			args: []string{"-p", "-r", "--models", "anthropic/*",
				"--prompt-template", "p", "--theme", "t", "--use-theme", "dark",
				"--tui-mode", "regular", "--verbose", "--export", "s.jsonl"},
			warn: []string{"--print ignored", "--resume ignored", "--models ignored",
				"--prompt-template ignored", "--theme ignored",
				"--use-theme ignored", "--tui-mode ignored", "--verbose ignored",
				"--export ignored"}},
		{name: "--extension and -e: each, its path made absolute (the host runs in the CLI's folder)",
			args: []string{"-e", "a.ts", "--extension", "../b.ts"},
			check: func(t *testing.T, o bridge.Options) {
				wd, err := os.Getwd()
				require.NoError(t, err)
				assert.Equal(t, []string{filepath.Join(wd, "a.ts"), filepath.Join(wd, "..", "b.ts")}, o.Extensions)
			}},
		{name: "an extension's flags, as pi 1.6.0 collects them: =value, a next argument that starts with neither - nor @, else bare",
			args: []string{"-e", "a.ts", "--greeting", "hi", "--loud", "--mode", "rpc", "--plan=a=b", "--at", "-a", "--", "--late"},
			warn: []string{"arg=--late"},
			check: func(t *testing.T, o bridge.Options) {
				assert.Equal(t, map[string]any{"greeting": "hi", "loud": true, "plan": "a=b", "at": true}, o.ExtensionFlags)
			}},
		{name: "a message argument is ignored, as pi does in --mode rpc",
			args: []string{"hello", "world"}, warn: []string{"arg=hello", "arg=world"}},
		{name: "after --, pi's short flags are arguments",
			args: []string{"--", "-nt"}, warn: []string{"arg=-nt"},
			check: func(t *testing.T, o bridge.Options) { assert.Empty(t, o.CLI.ExtraArgs) }},
		{name: "an @file argument, as pi refuses it", args: []string{"@notes.md"}, errWant: "@file arguments are not supported", status: 2},
		{name: "a flag pi does not know either, with no extension to take it", args: []string{"--plan", "x"}, errWant: "unknown flag: --plan", status: 2},
		{name: "an unknown short flag, as pi refuses it", args: []string{"-e", "a.ts", "-q"}, errWant: "unknown shorthand flag: 'q'", status: 2},
		{name: "--system-prompt without its value", args: []string{"--system-prompt"}, errWant: "flag needs an argument: --system-prompt", status: 2},
		{name: "--append-system-prompt without its value", args: []string{"--append-system-prompt"}, errWant: "flag needs an argument: --append-system-prompt", status: 2},
		{name: "--skill without its value", args: []string{"--skill"}, errWant: "flag needs an argument: --skill", status: 2},
		{name: "--session-dir without its value", args: []string{"--session-dir"}, errWant: "flag needs an argument: --session-dir", status: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, warnings, err, status := piOptions(t, tc.args...)
			if tc.errWant != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errWant)
				assert.Equal(t, tc.status, status)
				return
			}
			require.NoError(t, err)
			require.Len(t, warnings, len(tc.warn), "warnings: %q", warnings)
			for i, w := range tc.warn {
				assert.Contains(t, warnings[i], w)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

// mkfile writes a file, making its folder.
func mkfile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// piHelpFlags is every flag in pi 1.5.2's `pi --help` (and docs/cli.md),
// with a value where it takes one; pi 1.6.0's help lists the same flags.
var piHelpFlags = [][]string{
	{"--provider", "anthropic"}, {"--model", "claude-sonnet-4-5"}, {"--api-key", "k"},
	{"--system-prompt", "s"}, {"--append-system-prompt", "a"}, {"--mode", "rpc"},
	{"--print"}, {"-p"}, {"--continue"}, {"-c"}, {"--resume"}, {"-r"},
	{"--session", "abc"}, {"--session-id", "abc"}, {"--fork", "abc"}, {"--session-dir", "d"},
	{"--no-session"}, {"--name", "n"}, {"-n", "n"}, {"--models", "m"},
	{"--no-tools"}, {"-nt"}, {"--no-builtin-tools"}, {"-nbt"}, {"--tools", "read"}, {"-t", "read"},
	{"--exclude-tools", "write"}, {"-xt", "write"}, {"--thinking", "high"},
	{"--extension", "e.ts"}, {"-e", "e.ts"}, {"--no-extensions"}, {"-ne"}, {"--no-mcp"},
	{"--skill", "s"}, {"--no-skills"}, {"-ns"}, {"--prompt-template", "p"}, {"--no-prompt-templates"}, {"-np"},
	{"--theme", "t"}, {"--use-theme", "dark"}, {"--no-themes"}, {"--no-context-files"}, {"-nc"},
	{"--export", "f.jsonl"}, {"--list-models"}, {"--verbose"}, {"--tui-mode", "regular"},
	{"--approve"}, {"-a"}, {"--no-approve"}, {"-na"}, {"--offline"},
}

// TestEveryPiFlagAccepted: no flag pi 1.5.2 accepts makes claude-rpc fail
// with a usage error (exit status 2).
func TestEveryPiFlagAccepted(t *testing.T) {
	isolateConfig(t)
	for _, args := range piHelpFlags {
		_, _, err, status := piOptions(t, args...)
		assert.NoError(t, err, "%v", args)
		assert.NotEqual(t, 2, status, "%v", args)
	}
	// --help and --version end at once, successfully.
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--version"}, {"-v"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run(args, strings.NewReader(""), &stdout, &stderr), "%v: %s", args, stderr.String())
	}
}

// TestHelpListsPiFlags: --help, on stdout as pi's, names every flag of
// pi 1.6.0's `pi --help` (the same flags as 1.5.2's, piHelpFlags), each as
// a flag of its own line or entry; pi-web looks for --approve there. Every
// flag the flags table hides has its line.
func TestHelpListsPiFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"--help"}, strings.NewReader(""), &stdout, &stderr))
	assert.Empty(t, stderr.String(), "help goes to stdout, as pi's")
	help := stdout.String()
	assert.Regexp(t, `(?m)^  --approve, -a +\S`, help, "a line of its own, as in pi's help")
	for _, args := range append(piHelpFlags, []string{"--help"}, []string{"-h"}, []string{"--version"}, []string{"-v"}) {
		flag := regexp.QuoteMeta(args[0])
		assert.Regexp(t, `(^|[\s(,])`+flag+`($|[\s,)\[=])`, help, "%s in --help", args[0])
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	definePiFlags(fs)
	documented := map[string]bool{}
	for _, f := range piHelpForms {
		documented[f.name] = true
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			assert.True(t, documented[f.Name], "--%s is hidden from the flags table and has no line in piHelpForms", f.Name)
		}
	})
	for _, l := range piHelp() {
		assert.Contains(t, help, l[0])
		assert.NotEmpty(t, l[1], l[0])
	}
}
