// Command claude-rpc speaks the pi coding agent's RPC protocol on stdin and
// stdout and runs the Claude Code CLI underneath:
//
//	claude-rpc --mode rpc [--claude-path PATH] [--cwd DIR] [--model M] ...
//	claude-rpc doctor [flags]   # check this machine, in plain words
//	claude-rpc demo [flags]     # --mode rpc against a built-in fake API
//
// Every flag can also come from the environment as CLAUDE_RPC_<FLAG> (dashes
// become underscores: CLAUDE_RPC_CLAUDE_PATH) or from a config file (YAML,
// TOML or JSON; --config, else claude-rpc/config.* in the user's config
// folder). Flags win over the environment, which wins over the file.
//
// Every startup flag of pi 1.5.2 and 1.6.0 is accepted too (piflags.go),
// since a pi host passes them: mapped to the CLI or the bridge where they
// can be, refused with exit status 1 where they cannot be honoured at all
// (a provider other than anthropic), ignored with a warning otherwise.
// What hosts probe pi's command line with answers as pi does:
// --list-models prints pi's table of the CLI's models (listmodels.go),
// --version pi's version with claude-rpc's (version.go), --help pi's flags
// on stdout (subcommands.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lmittmann/tint"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/bridge/reference"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/infocache"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/transform"
)

// Values the CLI accepts for --permission-mode.
var permissionModes = claudecli.PermissionModes

// DefaultReleaseIdle is --release-idle's default: long enough that a
// person reading a reply and typing the next prompt keeps the CLI process
// (the prompt after a release without a return signal waits for the CLI's
// start-up, ~0.4 s), short enough that a session left alone gives its
// ~180 MB back within minutes (docs/performance.md, "Idle sessions").
const DefaultReleaseIdle = 5 * time.Minute

func main() {
	// The watchdog first (serve starts it; it ends what the bridge's CLI
	// processes leave if the bridge is killed): it waits for as long as its
	// bridge runs, so it sets up nothing it does not use, neither the
	// bridge's memory limit nor its runtime metrics.
	if len(os.Args) > 1 && os.Args[1] == claudecli.WatchdogArg {
		os.Exit(claudecli.RunWatchdog(os.Args[2:], os.Stdin))
	}
	// stdout carries protocol frames only: keep it for the bridge and send
	// anything else that would print there to stderr.
	out := os.Stdout
	os.Stdout = os.Stderr
	memoryLimit = setMemoryLimit()
	os.Exit(run(os.Args[1:], os.Stdin, out, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "doctor":
			return doctor(args[1:], stdout, stderr)
		case "demo":
			return demo(args[1:], stdin, stdout, stderr)
		case "schema":
			// The protocol reference: every frame on stdout, as JSON Schema.
			_, _ = stdout.Write(reference.Schema())
			return 0
		}
	}
	cfg, err := loadConfig(args)
	if printHelp(err, stdout) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc: %v\n", err)
		return 2
	}
	if cfg.GetBool("version") {
		// stdout as pi's, for hosts; stderr for people.
		fmt.Fprintln(stdout, piVersionLine(buildVersion()))
		fmt.Fprintf(stderr, "%s, speaking pi %s's RPC protocol and flags\n", versionLine(), piVersion)
		return 0
	}
	log, err := newLogger(stderr, cfg.GetString("log-level"))
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc: %v\n", err)
		return 2
	}
	listing := cfg.GetBool(listModelsGiven)
	if listing {
		// pi lists its models and exits, whatever --mode says.
		cfg.Set("mode", "rpc")
	}
	opts, err := bridgeOptions(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc: %v\n", err)
		return exitStatus(err)
	}
	if listing {
		return listModels(opts, cfg.GetString("list-models"), listModelsTimeout, stdout, stderr)
	}
	return serve(opts, stdin, stdout)
}

// serve runs the bridge until stdin ends or a signal comes, and returns the
// exit status.
func serve(opts bridge.Options, stdin io.Reader, stdout io.Writer) int {
	log := opts.Log
	// A signal ends serving as stdin EOF does (the running prompt is
	// aborted, every CLI process ended); the exit status then says which
	// signal, 128+n, as pi's does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var got atomic.Value
	go func() {
		select {
		case sig := <-sigs:
			got.Store(sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	opts.Idle = releaseWhenIdle(memoryLimit) // memlimit.go
	// What a CLI process leaves when it ends is ended with it (Linux; the
	// package doc of claudecli says what other systems allow).
	switch err := claudecli.EnableReaper(log); {
	case errors.Is(err, claudecli.ErrNoReaper):
		log.Debug("the bridge cannot adopt its CLI processes' orphans here", "err", err)
	case err != nil:
		log.Warn("the bridge cannot adopt its CLI processes' orphans", "err", err)
	default:
		// If the bridge is killed, its watchdog ends what is left.
		if err := claudecli.StartWatchdog(); err != nil {
			log.Warn("no watchdog: what the CLI processes started outlives a killed bridge", "err", err)
		}
	}
	defer claudecli.SettleOrphans(2 * time.Second)
	log.Debug("serving", "claude", opts.CLI.Path, "cwd", opts.CLI.Dir, "version", buildVersion())
	if err := bridge.Serve(ctx, stdin, stdout, opts); err != nil {
		log.Error("serving", "err", err)
		return 1
	}
	if sig, ok := got.Load().(syscall.Signal); ok {
		return 128 + int(sig)
	}
	return 0
}

// DefaultAskTimeout is how long a permission dialog waits for the host by
// default. Long enough for a user at an editor to read a one-line dialog
// and answer it; short enough that a host that never draws dialogs (pi's
// RpcClient has no call to answer one) gets the tool denied and the turn
// ended well within RpcClient's 60-second promptAndWait.
const DefaultAskTimeout = 30 * time.Second

func loadConfig(args []string) (*viper.Viper, error) {
	fs := pflag.NewFlagSet("claude-rpc", pflag.ContinueOnError)
	fs.SortFlags = false
	help, asked := helpBuffer()
	fs.Usage = usage(fs, help)
	fs.String("mode", "", `protocol mode; only "rpc"`)
	fs.String("claude-path", "", "the Claude CLI to run (default: claude on PATH, else where its installers put it)")
	fs.String("transport", "stream", "how to drive the CLI: stream (one process per session), pipe (a process per prompt), pty (pipe on a terminal)")
	fs.String("cwd", "", "working directory of the agent (default: the current one)")
	fs.String("model", "", "model for the CLI (--model), e.g. sonnet or a full model id")
	fs.String("permission-mode", "default", "the CLI's permission mode: "+strings.Join(permissionModes, ", "))
	fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	fs.Int("max-line", jsonl.DefaultMaxLine, "longest line accepted from the host or the CLI, in bytes")
	fs.Duration("idle-timeout", 15*time.Minute, "stop a turn when the CLI prints nothing for this long (0: never)")
	fs.String("session", "", "start on an existing session: a pi session file's path or id, or a CLI transcript's path or session id")
	fs.BoolP("continue", "c", false, "start on the most recent session of the working directory")
	fs.Bool("no-session", false, "keep the CLI from writing transcripts (--no-session-persistence) and write no pi session file: nothing can be resumed later")
	fs.Bool("pi-sessions", true, "keep each session as pi keeps its own too: a pi session file (in --session-dir, else where pi keeps the working folder's), which pi-based hosts list and pi itself opens")
	fs.Bool("ask", true, "ask the host (extension_ui_request) before tools that need permission, and pass AskUserQuestion, MCP servers' questions and the CLI's dialogs on (every transport; MCP servers' questions and the CLI's dialogs on stream only; --ask=false refuses those tools and declines the questions instead)")
	fs.Duration("ask-timeout", DefaultAskTimeout, "how long to wait for the host's answer before denying; sent as the dialog's timeout (0: as long as the turn)")
	fs.String("message-updates", bridge.UpdatesFull, "message_update frames: full (each carries the message so far; pi 0.73 hosts) or delta (the change only, as pi 1.5 writes them)")
	fs.String("tool-names", "pi", "how tool calls are shown: pi (the CLI's tools pi has under pi's names and argument shapes: read, write, edit, bash, grep, find, ls) or claude (the CLI's names and arguments, as it prints them)")
	fs.Bool("restore-files", true, "have the CLI keep a copy of each file its tools change, as it was before each prompt (file checkpointing), so fork and branch with restoreFiles can put the files back (--restore-files=false: no copies, and restoreFiles restores nothing)")
	fs.Bool("prewarm", true, "stream transport: start the CLI when the bridge starts and after a session change, so the first prompt does not wait for it (costs a CLI process while idle)")
	fs.Duration("release-idle", DefaultReleaseIdle, "stream transport: end the CLI process once the session has rested (no run, no background task, no dialog open) this long; the next prompt resumes the session in a new one, started ahead when the host shows it is back (get_state, get_messages …) (0: never)")
	fs.String("cache-dir", "", `where to keep what the CLI said about itself (models, commands, version) between runs, so a start answers at once (default: claude-rpc/cli-info in the user cache folder; "off": nowhere)`)
	fs.Duration("coalesce", bridge.DefaultCoalesce, "merge text deltas that come within this window into one message_update (0: one frame per delta)")
	definePiFlags(fs) // piflags.go
	fs.String("config", "", "config file (default: claude-rpc/config.{yaml,toml,json} in the user config folder)")
	fs.BoolP("version", "v", false, "print the version and exit")
	args, extFlags := takeExtensionFlags(fs, normalizeArgs(fs, args))
	if err := fs.Parse(args); err != nil {
		return nil, asked(err)
	}

	v := viper.New()
	if err := v.BindPFlags(fs); err != nil {
		return nil, err
	}
	// Arguments that are no flags: pi takes them as prompts, and ignores
	// them in --mode rpc; applyPiFlags warns.
	v.Set("positional-args", fs.Args())
	v.Set(extensionFlagsKey, extFlags)
	// Only the command line asks for the list (not the environment or a
	// config file, which would turn every start into a listing).
	v.Set(listModelsGiven, fs.Changed("list-models"))
	v.SetEnvPrefix("CLAUDE_RPC")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if file := v.GetString("config"); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config %s: %w", file, err)
		}
	} else if dir, err := os.UserConfigDir(); err == nil {
		v.SetConfigName("config")
		v.AddConfigPath(filepath.Join(dir, "claude-rpc"))
		if err := v.ReadInConfig(); err != nil && !errors.As(err, new(viper.ConfigFileNotFoundError)) {
			return nil, fmt.Errorf("reading config: %w", err)
		}
	}
	return v, nil
}

func bridgeOptions(v *viper.Viper, log *slog.Logger) (bridge.Options, error) {
	var opts bridge.Options
	switch mode := v.GetString("mode"); mode {
	case "rpc":
	case "":
		return opts, errors.New(`--mode is required; the only mode is "rpc"`)
	default:
		return opts, fmt.Errorf(`unknown --mode %q; the only mode is "rpc"`, mode)
	}
	t := v.GetString("transport")
	// Checked here so a bad value stops the bridge at once, with a message.
	if _, err := claudecli.New(t, claudecli.Config{}, 0); err != nil {
		return opts, fmt.Errorf("--transport: %w", err)
	}
	opts.Transport = t
	pm := v.GetString("permission-mode")
	if !slices.Contains(permissionModes, pm) {
		return opts, fmt.Errorf("unknown --permission-mode %q; choose one of %s", pm, strings.Join(permissionModes, ", "))
	}
	dir := v.GetString("cwd")
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return opts, fmt.Errorf("--cwd: %w", err)
		}
		if !st.IsDir() {
			return opts, fmt.Errorf("--cwd %s is not a directory", dir)
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return opts, fmt.Errorf("--cwd: %w", err)
		}
	}
	// A missing CLI is not fatal: the host gets an error for each prompt
	// (and the CLI may be installed while the bridge runs).
	cli, err := claudecli.Find(v.GetString("claude-path"))
	if err != nil {
		log.Warn("the Claude CLI was not found; prompts will fail until it is installed", "err", err)
	}
	maxLine := v.GetInt("max-line")
	if maxLine <= 0 {
		return opts, fmt.Errorf("--max-line must be positive, got %d", maxLine)
	}
	opts.CLI = claudecli.Config{
		Path:           v.GetString("claude-path"),
		Dir:            dir,
		Model:          v.GetString("model"),
		PermissionMode: pm,
		Log:            log,
	}
	opts.MaxLine = maxLine
	if opts.IdleTimeout = v.GetDuration("idle-timeout"); opts.IdleTimeout < 0 {
		return opts, fmt.Errorf("--idle-timeout must not be negative, got %v", opts.IdleTimeout)
	}
	opts.Session, opts.Continue = v.GetString("session"), v.GetBool("continue")
	if opts.Session != "" && opts.Continue {
		return opts, fmt.Errorf("--session and --continue: choose one")
	}
	opts.CLI.NoPersistence = v.GetBool("no-session")
	opts.CLI.FileCheckpoints = v.GetBool("restore-files")
	opts.PiSessions = v.GetBool("pi-sessions")
	// Asking is the default on every transport: stream asks over the
	// CLI's control protocol, pipe and pty through claudecli's relay.
	opts.Ask = v.GetBool("ask")
	if cli.Path != "" {
		// An older CLI: turn off what it lacks, and say so once. Made by
		// the bridge after ready: reading the version may take seconds.
		transport, ask := opts.Transport, opts.Ask
		opts.Plan = func(version string) claudecli.Plan { return cliPlan(cli, version, transport, ask, log) }
	}
	switch dir := v.GetString("cache-dir"); dir {
	case "off":
	case "":
		opts.InfoCache = infocache.Open(infocache.DefaultDir())
	default:
		opts.InfoCache = infocache.Open(dir)
	}
	if opts.AskTimeout = v.GetDuration("ask-timeout"); opts.AskTimeout < 0 {
		return opts, fmt.Errorf("--ask-timeout must not be negative, got %v", opts.AskTimeout)
	}
	if opts.Coalesce = v.GetDuration("coalesce"); opts.Coalesce < 0 {
		return opts, fmt.Errorf("--coalesce must not be negative, got %v", opts.Coalesce)
	}
	opts.Prewarm = v.GetBool("prewarm")
	if opts.ReleaseIdle = v.GetDuration("release-idle"); opts.ReleaseIdle < 0 {
		return opts, fmt.Errorf("--release-idle must not be negative, got %v", opts.ReleaseIdle)
	}
	switch opts.MessageUpdates = v.GetString("message-updates"); opts.MessageUpdates {
	case bridge.UpdatesFull, bridge.UpdatesDelta:
	default:
		return opts, fmt.Errorf("--message-updates %q: choose full or delta", opts.MessageUpdates)
	}
	if opts.ToolNames, err = transform.ParseToolNames(v.GetString("tool-names")); err != nil {
		return opts, fmt.Errorf("--tool-names: %w", err)
	}
	if err := applyPiFlags(v, &opts, log); err != nil {
		return opts, err
	}
	opts.Log = log
	return opts, nil
}

// versionTimeout bounds `claude --version` when the CLI's version cannot
// be read from its install nor the info cache; the bridge answers what
// does not run the CLI meanwhile, and a prompt waits for it: a native CLI
// answers in milliseconds (cli.js on Node.js takes seconds, but npm's
// package.json beside it says its version).
const versionTimeout = 5 * time.Second

// cliPlan returns how to run the CLI cli of version known (read from cli
// when "" or not a version) with transport and ask (see
// [claudecli.PlanFor]), logging what it turns off or what will not work. A
// version it cannot read changes nothing.
func cliPlan(cli claudecli.Command, known, transport string, ask bool, log *slog.Logger) claudecli.Plan {
	ver, ok := claudecli.ParseVersion(known)
	if !ok {
		var err error
		if ver, err = claudecli.DetectVersion(cli, versionTimeout); err != nil {
			log.Warn("the Claude CLI's version could not be read; running it as the tested "+claudecli.TestedVersion, "err", err)
			return claudecli.Plan{Transport: transport, Ask: ask}
		}
	}
	plan := claudecli.PlanFor(ver, transport, ask)
	for _, n := range plan.Notes {
		log.Warn(n)
	}
	switch ver.Place() {
	case claudecli.PlaceOlder:
		log.Warn(fmt.Sprintf("the Claude CLI %s is older than the supported range (%s to %s)", ver, claudecli.OldestSupported, claudecli.NewestTested))
	case claudecli.PlaceNewer:
		log.Info(fmt.Sprintf("the Claude CLI %s is newer than the newest tested, %s", ver, claudecli.NewestTested))
	}
	log.Debug("Claude CLI", "path", cli.String(), "version", ver, "transport", plan.Transport, "ask", plan.Ask)
	return plan
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: choose debug, info, warn or error", level)
	}
	noColor := true
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			noColor = false
		}
	}
	return slog.New(tint.NewHandler(w, &tint.Options{Level: l, NoColor: noColor})), nil
}
