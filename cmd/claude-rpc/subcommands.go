package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// usage is --help: the commands, the flags they share, then pi's flags the
// flags table leaves out. It is written on stdout, as pi writes its help:
// hosts read `pi --help` to learn what the agent accepts (pi-web looks for
// --approve).
func usage(fs *pflag.FlagSet, w io.Writer) func() {
	return func() {
		fmt.Fprint(w, `Usage:
  claude-rpc --mode rpc [flags]   speak pi's RPC protocol on stdin/stdout over the Claude CLI
  claude-rpc demo [flags]         the same, with the CLI talking to a built-in fake API (no API key)
  claude-rpc doctor [flags]       check this machine: the CLI, Git Bash, authentication, one test turn
  claude-rpc schema               print the protocol reference: every frame claude-rpc writes, as JSON Schema
  claude-rpc --list-models [search]   list the CLI's models as pi does, then exit
  claude-rpc --version            print pi's version it speaks, with its own (`+piVersionLine("v1.2.3")+`)

Flags:
`)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\npi %s's other flags, accepted as a pi host passes them:\n", piVersion)
		for _, l := range piHelp() {
			fmt.Fprintf(w, "  %-30s %s\n", l[0], l[1])
		}
	}
}

// piHelpForms are pi's flags that the flags table leaves out, as pi's own
// help names them; piHelp says what claude-rpc does with each.
var piHelpForms = []struct{ name, form string }{
	{"approve", "--approve, -a"},
	{"no-extensions", "--no-extensions, -ne"},
	{"no-themes", "--no-themes"},
	{"list-models", "--list-models [search]"},
	{"print", "--print, -p"},
	{"resume", "--resume, -r"},
	{"models", "--models <patterns>"},
	{"extension", "--extension, -e <path>"},
	{"prompt-template", "--prompt-template <path>"},
	{"theme", "--theme <path>"},
	{"use-theme", "--use-theme <name>"},
	{"tui-mode", "--tui-mode <mode>"},
	{"verbose", "--verbose"},
	{"export", "--export <file>"},
}

// piHelp is --help's lines about pi's flags the flags table leaves out:
// each one's form and what claude-rpc does with it.
func piHelp() [][2]string {
	quiet := map[string]string{
		"approve":       "accepted: the CLI in print mode trusts the project's files already",
		"no-extensions": "accepted: claude-rpc runs no pi extensions",
		"no-themes":     "accepted: there are no themes in --mode rpc",
		"list-models":   "print the CLI's models as pi's table (fuzzy search), then exit",
	}
	var out [][2]string
	for _, f := range piHelpForms {
		what, ok := quiet[f.name]
		for _, ig := range ignoredPiFlags {
			if ig.name == f.name {
				what, ok = "ignored, with a warning: "+ig.why, true
			}
		}
		if ok {
			out = append(out, [2]string{f.form, what})
		}
	}
	return append(out,
		[2]string{"-nt -nbt -xt -ns -np -nc -na", "pi's short forms of flags above (--no-tools, …)"},
		[2]string{"--help, -h", "print this help"},
		[2]string{"--version, -v", "print the version"})
}

// helpRequested is loadConfig's answer to --help (it Is pflag.ErrHelp):
// the help text, for stdout.
type helpRequested struct{ text string }

func (h *helpRequested) Error() string        { return pflag.ErrHelp.Error() }
func (h *helpRequested) Is(target error) bool { return target == pflag.ErrHelp }

// printHelp writes the help text of err, a --help answer of loadConfig,
// on w, and reports whether err was one.
func printHelp(err error, w io.Writer) bool {
	var h *helpRequested
	if !errors.As(err, &h) {
		return false
	}
	_, _ = io.WriteString(w, h.text)
	return true
}

// helpBuffer collects the help text pflag asks for.
func helpBuffer() (*bytes.Buffer, func(err error) error) {
	var b bytes.Buffer
	return &b, func(err error) error {
		if errors.Is(err, pflag.ErrHelp) {
			return &helpRequested{text: b.String()}
		}
		return err
	}
}

// subcommandConfig reads the flags, environment and config file of
// subcommand name, which runs as --mode rpc would. A nil config means exit
// with code: 0 after --help (written on stdout), 2 after a bad flag (said
// on stderr).
func subcommandConfig(name string, args []string, stdout, stderr io.Writer) (*viper.Viper, int) {
	cfg, err := loadConfig(args)
	if printHelp(err, stdout) {
		return nil, 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc %s: %v\n", name, err)
		return nil, 2
	}
	cfg.Set("mode", "rpc")
	return cfg, 0
}
