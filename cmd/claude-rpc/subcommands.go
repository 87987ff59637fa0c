package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// usage is --help: the commands, then the flags they share.
func usage(fs *pflag.FlagSet) func() {
	return func() {
		fmt.Fprint(os.Stderr, `Usage:
  claude-rpc --mode rpc [flags]   speak pi's RPC protocol on stdin/stdout over the Claude CLI
  claude-rpc demo [flags]         the same, with the CLI talking to a built-in fake API (no API key)
  claude-rpc doctor [flags]       check this machine: the CLI, Git Bash, authentication, one test turn
  claude-rpc schema               print the protocol reference: every frame claude-rpc writes, as JSON Schema
  claude-rpc --version

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprint(os.Stderr, `
pi 1.5's other startup flags are accepted, as a pi host may pass them:
--approve/-a, --no-extensions/-ne and --no-themes without a word (pi's
meaning holds as it is); --print, --resume, --models, --extension/-e,
--prompt-template, --theme, --export, --list-models, … ignored with a
warning.
`)
	}
}

// subcommandConfig reads the flags, environment and config file of
// subcommand name, which runs as --mode rpc would. A nil config means exit
// with code: 0 after --help, 2 after a bad flag (said on stderr).
func subcommandConfig(name string, args []string, stderr io.Writer) (*viper.Viper, int) {
	cfg, err := loadConfig(args)
	if errors.Is(err, pflag.ErrHelp) {
		return nil, 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc %s: %v\n", name, err)
		return nil, 2
	}
	cfg.Set("mode", "rpc")
	return cfg, 0
}
