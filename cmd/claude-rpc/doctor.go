package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
	"github.com/claude-rpc/claude-rpc/claudecli/infocache"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// doctorTurnTimeout bounds doctor's test turn (a cold turn takes about half
// a second).
const doctorTurnTimeout = 60 * time.Second

// doctorReply is what the fake API answers doctor's test prompt.
const doctorReply = "claude-rpc doctor: the CLI answered"

// Statuses of a doctor line. Only fail makes doctor exit non-zero: warn
// is something that may be fine (a login doctor cannot see, a CLI version
// other than the tested one), info is for the record.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "FAIL"
	statusInfo = "--"
)

// doctor is `claude-rpc doctor`: it says what claude-rpc finds on this
// machine (the CLI and its version, the transport, Git Bash on Windows,
// whether authentication is configured, never a secret's value), runs one
// turn through the bridge and the real CLI against the built-in fake API,
// and exits 1 with the reasons when something would stop claude-rpc from
// working. It takes --mode rpc's flags (and their environment and config
// file), so it checks the setup the host will run.
func doctor(args []string, stdout, stderr io.Writer) int {
	cfg, code := subcommandConfig("doctor", args, stdout, stderr)
	if cfg == nil {
		return code
	}
	d := &doctorReport{w: stdout}
	d.line(statusInfo, "claude-rpc", strings.TrimPrefix(versionLine(), "claude-rpc "))

	cli, err := claudecli.Find(cfg.GetString("claude-path"))
	var ver claudecli.Version
	if err != nil {
		d.line(statusFail, "Claude CLI", err.Error())
		if p, ok := pinned().installed(); ok {
			d.line(statusInfo, "Claude CLI", "scripts/install-cli's pinned CLI is in its cache: pass --claude-path "+p+" to use it")
		}
	} else {
		found := cli.String() + " (" + cli.From + ")"
		if cli.Shim != "" {
			found += ", run directly, as the npm shim " + cli.Shim + " would"
		}
		d.line(statusOK, "Claude CLI", found)
		ver = d.cliVersion(cli)
	}

	opts, err := bridgeOptions(cfg, slog.New(slog.DiscardHandler))
	settingsOK := err == nil
	if err != nil {
		d.line(statusFail, "settings", err.Error())
	} else {
		if opts.Plan != nil { // what the bridge does after ready, with the version read above
			known := ""
			if !ver.IsZero() {
				known = ver.String()
			}
			plan := opts.Plan(known)
			opts.Transport, opts.Ask = plan.Transport, plan.Ask
		}
		var works []string
		for _, t := range claudecli.Transports() {
			if _, err := claudecli.New(t, claudecli.Config{}, 0); err == nil {
				works = append(works, t)
			}
		}
		tp := fmt.Sprintf("%s (these work here: %s)", opts.Transport, strings.Join(works, ", "))
		if asked := cfg.GetString("transport"); asked != opts.Transport {
			tp = fmt.Sprintf("%s, not %s: the CLI %s lacks what %s needs (these work here: %s)", opts.Transport, asked, ver, asked, strings.Join(works, ", "))
		}
		d.line(statusOK, "transport", tp)
		if cfg.GetBool("ask") && claudecli.CapsOf(cfg.GetString("transport")).Control && !opts.Ask {
			d.line(statusWarn, "--ask", fmt.Sprintf("off: the CLI %s cannot ask the host (see above); tools that need permission are refused", ver))
		}
	}
	d.gitBash()
	d.auth()
	if settingsOK {
		d.infoCache(opts.InfoCache)
	}

	switch {
	case cli.Path == "":
		d.line(statusFail, "test turn", "not run: there is no CLI to run")
	case !settingsOK:
		d.line(statusFail, "test turn", "not run: the settings above are wrong")
	default:
		start := time.Now()
		if err := testTurn(opts, doctorTurnTimeout); err != nil {
			d.line(statusFail, "test turn", err.Error())
		} else {
			d.line(statusOK, "test turn", fmt.Sprintf("one prompt through claude-rpc and the CLI (--transport %s) against a fake API on 127.0.0.1 was answered in %.1f s",
				opts.Transport, time.Since(start).Seconds()))
		}
	}

	if d.failed == 0 {
		fmt.Fprintln(stdout, "All checks passed.")
		return 0
	}
	fmt.Fprintf(stdout, "%d problem(s), marked FAIL above.\n", d.failed)
	return 1
}

// doctorReport writes doctor's lines and counts the failures.
type doctorReport struct {
	w      io.Writer
	failed int
}

func (d *doctorReport) line(status, what, detail string) {
	if status == statusFail {
		d.failed++
	}
	fmt.Fprintf(d.w, "%-4s  %-14s  %s\n", status, what, detail)
}

// cliVersion runs the CLI's --version and says where the version is in the
// supported range and, below it, what claude-rpc turns off or what fails.
func (d *doctorReport) cliVersion(cli claudecli.Command) claudecli.Version {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli.Path, append(append([]string(nil), cli.Args...), "--version")...)
	cmd.Env = (&claudecli.Config{}).Environ()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := claudecli.RunCommand(cmd, claudecli.EndOrphans); err != nil {
		msg := fmt.Sprintf("`%s --version` failed (%v)", cli, err)
		if tail := lastLines(errOut.String(), 3); tail != "" {
			msg += ": " + tail
		}
		d.line(statusFail, "CLI version", msg+"; reinstall the CLI, or point --claude-path at a working one")
		return claudecli.Version{}
	}
	said := strings.TrimSpace(out.String())
	v, ok := claudecli.ParseVersion(said)
	supported := fmt.Sprintf("the supported range is %s to %s; claude-rpc is tested with %s", claudecli.OldestSupported, claudecli.NewestTested, claudecli.TestedVersion)
	install := "npm install -g @anthropic-ai/claude-code@" + claudecli.TestedVersion
	switch {
	case !ok:
		d.line(statusWarn, "CLI version", fmt.Sprintf("%s: not a version claude-rpc can read, so it runs it as %s; %s", said, claudecli.TestedVersion, supported))
	case v.Place() == claudecli.PlaceSupported:
		d.line(statusOK, "CLI version", fmt.Sprintf("%s: in the supported range, %s to %s (claude-rpc is tested with %s)", said, claudecli.OldestSupported, claudecli.NewestTested, claudecli.TestedVersion))
	case v.Place() == claudecli.PlaceNewer:
		d.line(statusWarn, "CLI version", fmt.Sprintf("%s: newer than the newest tested, %s; it runs as usual (claude-rpc is tested with %s: if something misbehaves try that one, %s)",
			said, claudecli.NewestTested, claudecli.TestedVersion, install))
	default:
		status := statusWarn
		what := "claude-rpc turns off what it lacks"
		if !v.Usable() {
			status, what = statusFail, "prompts cannot run on it"
		}
		d.line(status, "CLI version", fmt.Sprintf("%s: older than the supported range (%s); %s: update it (%s)", said, supported, what, install))
		for _, c := range v.Lacks() {
			d.line(statusInfo, "CLI lacks", fmt.Sprintf("%s (since %s): %s", c, c.Since(), c.Without()))
		}
	}
	return v
}

// gitBash reports the bash.exe the CLI's Bash tool gets on Windows.
func (d *doctorReport) gitBash() {
	if runtime.GOOS != "windows" {
		d.line(statusInfo, "Git Bash", "not needed on "+runtime.GOOS)
		return
	}
	sys := claudecli.Local(nil)
	bash, err := sys.FindGitBash()
	switch {
	case err != nil:
		d.line(statusWarn, "Git Bash", err.Error())
	case sys.Getenv(claudecli.GitBashEnv) != "":
		d.line(statusOK, "Git Bash", bash+" (from "+claudecli.GitBashEnv+")")
	default:
		d.line(statusOK, "Git Bash", bash+" (passed to the CLI as "+claudecli.GitBashEnv+")")
	}
}

// authVars are the environment variables that authenticate the CLI or send
// it to another provider. Only their presence is reported.
var authVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"}

// auth says which authentication the CLI will find, never a value.
func (d *doctorReport) auth() {
	sys := claudecli.Local(nil)
	var set []string
	for _, k := range authVars {
		if sys.Getenv(k) != "" {
			set = append(set, k)
		}
	}
	creds := filepath.Join(sessions.ConfigDir(os.Environ()), ".credentials.json")
	_, err := os.Stat(creds)
	login := err == nil
	var notes []string
	if len(set) > 0 {
		notes = append(notes, strings.Join(set, ", ")+" set in the environment")
	}
	if login {
		notes = append(notes, "a saved login in "+creds)
	}
	if sys.Getenv("ANTHROPIC_BASE_URL") != "" {
		notes = append(notes, "ANTHROPIC_BASE_URL set (the CLI talks to that server, not Anthropic's)")
	}
	if len(set) > 0 || login {
		d.line(statusOK, "authentication", strings.Join(notes, "; "))
		return
	}
	msg := "no ANTHROPIC_API_KEY (nor ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, Bedrock or Vertex) in the environment and no saved login in " + creds
	if runtime.GOOS == "darwin" {
		msg += " (on macOS a login lives in the Keychain, which doctor does not read)"
	}
	msg += ": unless the CLI is logged in (run `claude`, then /login), prompts will end with an authentication error"
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	d.line(statusWarn, "authentication", msg)
}

// testTurn runs one prompt through the bridge (opts, as the host would
// run it) and the real CLI against a fake API on 127.0.0.1, in a scratch
// folder and CLI config folder, and says why it was not answered.
func testTurn(opts bridge.Options, timeout time.Duration) error {
	srv, err := fakeapi.New()
	if err != nil {
		return fmt.Errorf("starting the fake API: %w", err)
	}
	defer srv.Close()
	scratch, err := os.MkdirTemp("", "claude-rpc-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch) // best effort
	work := filepath.Join(scratch, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return err
	}
	opts.CLI.Dir = work
	opts.Session, opts.Continue = "", false // the user's sessions are not in the scratch config
	opts.CLI.Env = fakeAPIEnv(os.Environ(), srv.Env(), filepath.Join(scratch, "config"))
	opts.Log = slog.New(slog.DiscardHandler)
	opts.InfoCache = nil    // a scratch config's answers: nothing to keep
	opts.PiSessions = false // nor a pi session file of the test turn

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	servedDone := make(chan struct{})
	var servedErr error // set before servedDone is closed
	go func() {
		servedErr = bridge.Serve(ctx, inR, outW, opts)
		_ = outW.Close()
		close(servedDone)
	}()
	// Whatever happens below, stdin is closed and the bridge's output
	// read to its end, so Serve can finish and stop the CLI.
	defer func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case <-servedDone:
		case <-time.After(30 * time.Second):
			cancel()
			<-servedDone
		}
	}()

	prompt, _ := json.Marshal(map[string]string{"id": "doctor", "type": "prompt", "message": "[[say:" + doctorReply + "]]"})
	go func() { _, _ = inW.Write(append(prompt, '\n')) }() // fails only when the bridge is gone

	frames := make(chan gjson.Result)
	go func() {
		defer close(frames)
		r := bufio.NewReaderSize(outR, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && gjson.ValidBytes(line) {
				select {
				case frames <- gjson.ParseBytes(line):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				<-servedDone
				if servedErr != nil {
					return fmt.Errorf("the bridge stopped: %w", servedErr)
				}
				return errors.New("the bridge stopped before the turn ended")
			}
			switch {
			case f.Get("type").String() == "response" && !f.Get("success").Bool():
				return fmt.Errorf("the prompt was refused: %s", f.Get("error").String())
			case f.Get("type").String() == "agent_end":
				return checkReply(f)
			}
		case <-deadline:
			return fmt.Errorf("no answer within %v: the CLI may be stuck (try `claude -p hi` yourself)", timeout)
		}
	}
}

// checkReply reads the last assistant message of an agent_end.
func checkReply(agentEnd gjson.Result) error {
	msgs := agentEnd.Get("messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Get("role").String() != "assistant" {
			continue
		}
		if m.Get("stopReason").String() == "error" {
			return fmt.Errorf("the CLI failed: %s", m.Get("errorMessage").String())
		}
		var text strings.Builder
		for _, c := range m.Get("content").Array() {
			text.WriteString(c.Get("text").String())
		}
		if text.String() != doctorReply {
			return fmt.Errorf("the CLI answered %q, not the fake API's %q", text.String(), doctorReply)
		}
		return nil
	}
	return errors.New("the turn ended without an answer")
}

// lastLines is the last n non-empty lines of s, joined with " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// infoCache says where claude-rpc keeps what the CLI said about itself
// (infocache), and how much is there.
func (d *doctorReport) infoCache(store *infocache.Store) {
	if store == nil || store.Dir() == "" {
		d.line(statusInfo, "info cache", "off (--cache-dir off): each start asks the CLI for its models and commands")
		return
	}
	entries, _ := filepath.Glob(filepath.Join(store.Dir(), "*.json"))
	d.line(statusInfo, "info cache", fmt.Sprintf("%s, %d entries: at start get_state, get_available_models and get_commands answer from what the CLI said last time (per CLI binary and settings; a changed CLI or settings asks it again)", store.Dir(), len(entries)))
}
