package claudecli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config says how to run the CLI. The zero value of every field but Path is
// usable.
type Config struct {
	// Path is the CLI executable (or a name on PATH), or empty to look for
	// it where its installers put it ([System.FindCLI]). It is resolved at
	// every start, in the environment the CLI is given, so a CLI installed
	// while the bridge runs is found.
	Path string
	// Dir is the working directory; empty means the bridge's.
	Dir string
	// Env is the base environment; nil means the bridge's own. [Config.Environ]
	// adjusts it for the CLI.
	Env []string
	// Model and PermissionMode are passed as --model and --permission-mode
	// when set; PermissionMode is one of [PermissionModes].
	Model          string
	PermissionMode string
	// Effort is passed as --effort when set: low, medium, high, xhigh or
	// max (the CLI's levels on 2.1.328; it sets the API's
	// output_config.effort for adaptive-thinking models).
	Effort string
	// FastMode opts in to the CLI's fast mode (its fastMode setting, given
	// as --settings; checked on 2.1.328: API requests then carry
	// speed:"fast" where the model has it, and the result says
	// fast_mode_state "on"). Without it the CLI in print mode keeps fast
	// mode off ("sdk_opt_in_required").
	FastMode bool
	// HookEvents makes the CLI print hook_started, hook_progress and
	// hook_response for every hook it runs (--include-hook-events);
	// without it, for SessionStart and Setup hooks only.
	HookEvents bool
	// Settings are more of the CLI's settings given as flag settings
	// (--settings, one JSON object together with FastMode's: the CLI keeps
	// only the last --settings it is given). Nil: none.
	Settings map[string]any
	// AskPermissions makes the CLI ask Host before a tool it may not run
	// on its own (--permission-prompt-tool stdio) instead of refusing it.
	AskPermissions bool
	// SDKServers are MCP servers Host serves over the control protocol
	// (mcp_message requests); their tools run without asking.
	SDKServers []string
	// SDKTools fingerprints the tool list each of SDKServers serves, by
	// server name (any string that changes when the list does). A
	// per-turn process lists the tools when it starts; a persistent one
	// (stream) is told to list them again when a fingerprint changes.
	SDKTools map[string]string
	// Host answers the CLI's control requests (stream: its control
	// protocol; pipe and pty: the relay, relay.go). Nil
	// refuses them.
	Host Host
	// DialogKinds are the request_user_dialog kinds Host renders, declared
	// in initialize (supportedDialogKinds): the CLI sends no other kind,
	// and none without it (stream transport).
	DialogKinds []string
	// ToolHooks registers the host's PreToolUse and PostToolUse hooks in
	// initialize (stream transport): before and after each tool call the
	// CLI asks Host (hook_callback, callback_id HookPreTool or
	// HookPostTool), which may block the call, change its input, or
	// change its output.
	ToolHooks bool
	// NoPersistence keeps the CLI from writing transcripts
	// (--no-session-persistence): sessions cannot be resumed.
	NoPersistence bool
	// FileCheckpoints makes the CLI keep, for each user message, a copy of
	// every file its tools change in that turn, as it was before the
	// change, so [RewindFiles] can put them back: the environment variable
	// [checkpointEnv] (what the Agent SDK's enableFileCheckpointing sets;
	// in print mode the CLI checkpoints only with it). The copies are kept
	// in the CLI's config folder (file-history/<session id>/), and its
	// transcript records the checkpoints, so a process that resumes the
	// session can rewind too (checked on 2.1.275, 2.1.328 and 2.1.332).
	// It is set once, for all of a bridge's processes: a transport does
	// not replace its process when it changes.
	FileCheckpoints bool
	// AppendSystemPrompt, when set, is appended to the CLI's system prompt
	// (--append-system-prompt).
	AppendSystemPrompt string
	// ExtraArgs are appended to every command line.
	ExtraArgs []string
	// Log receives the CLI's stderr lines at debug level; nil discards them.
	Log *slog.Logger

	// relayArgs, set by a per-turn transport for one turn, connect its
	// process to the transport's relay (relay.go); they stand for the
	// control protocol's --permission-prompt-tool stdio, SDKServers'
	// config and the --settings of Settings and FastMode.
	relayArgs []string
}

// PermissionModes are the CLI's permission modes (--permission-mode, and
// its set_permission_mode request): those 2.1.275 to 2.1.332 accept, and
// "manual", which the CLI takes as "default" (and reports as "default").
// A request for bypassPermissions is refused by a CLI started in another
// mode (it needs --dangerously-skip-permissions at launch): the stream
// transport then starts a new process with it.
var PermissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "manual", "plan"}

// entrypoint is the CLAUDE_CODE_ENTRYPOINT the CLI is given. The CLI reports
// it in its User-Agent; we set it on purpose rather than inherit whatever the
// host's environment says (a host running inside Claude Code has "cli").
const entrypoint = "sdk-cli"

// stopGrace is how long [cliProcess.Stop] waits after SIGTERM before SIGKILL.
// A variable so this package's tests can shorten it.
var stopGrace = 3 * time.Second

// stdoutGrace bounds how long a reader may keep waiting for EOF on stdout
// after the process and its group are gone (a daemon that escaped the group
// could hold the pipe open forever).
const stdoutGrace = 2 * time.Second

// Environ returns the CLI's environment: Env (or the bridge's) without
// CLAUDECODE, which the CLI reads as "running inside Claude Code" and then
// behaves differently, with CLAUDE_CODE_ENTRYPOINT set to [entrypoint], and
// with [checkpointEnv] set when FileCheckpoints is (a
// CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING of Env's still turns it off).
// On Windows, unless Env sets CLAUDE_CODE_GIT_BASH_PATH, it adds the Git
// Bash [System.FindGitBash] finds, which the CLI's own search misses in many
// installs (per user, Scoop, another drive).
func (c *Config) Environ() []string {
	base := c.Env
	if base == nil {
		base = os.Environ()
	}
	env := environ(Local(base))
	if c.FileCheckpoints {
		env = append(env, checkpointEnv+"=true")
	}
	return env
}

// environ is [Config.Environ] with s.Env as the base.
func environ(s System) []string {
	env := make([]string, 0, len(s.Env)+2)
	for _, kv := range s.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDECODE" || k == "CLAUDE_CODE_ENTRYPOINT" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "CLAUDE_CODE_ENTRYPOINT="+entrypoint)
	if s.windows() && s.Getenv(GitBashEnv) == "" {
		if bash, err := s.FindGitBash(); err == nil {
			env = append(env, GitBashEnv+"="+bash)
		}
	}
	return env
}

// Session names the CLI session a process works on: ID, and whether it
// exists already (then it is resumed; else it is created with that id).
// The zero value lets the CLI choose a new id.
type Session struct {
	ID     string
	Exists bool
	// Name, when set, is the session's display name (--name; the CLI
	// keeps it in the transcript as its custom title).
	Name string
	// ForkFrom, when set, makes the session (not existing yet) a copy of
	// session ForkFrom, up to and including message ResumeAt when set
	// (--resume ForkFrom [--resume-session-at ResumeAt] --fork-session
	// --session-id ID; checked on 2.1.328: the new transcript holds the
	// copied messages, the old one is unchanged).
	ForkFrom, ResumeAt string
}

// flagSettingsMap is the --settings of Settings and FastMode, nil when
// there are none.
func (c *Config) flagSettingsMap() map[string]any {
	if len(c.Settings) == 0 && !c.FastMode {
		return nil
	}
	all := maps.Clone(c.Settings)
	if all == nil {
		all = map[string]any{}
	}
	if c.FastMode {
		all["fastMode"] = true
	}
	return all
}

// flagSettings is the --settings JSON for Settings and FastMode, "" when
// there are none.
func (c *Config) flagSettings() string {
	all := c.flagSettingsMap()
	if all == nil {
		return ""
	}
	b, err := json.Marshal(all)
	if err != nil {
		panic("claudecli: Config.Settings is not JSON: " + err.Error()) // a programming error: the bridge builds it from JSON values
	}
	return string(b)
}

// TurnArgs returns the command line of a per-turn process: print mode with
// stream-json in and out and the API's partial messages, on session s.
func (c *Config) TurnArgs(s Session) []string {
	args := []string{"-p", "--verbose", "--input-format", "stream-json",
		"--output-format", "stream-json", "--include-partial-messages"}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	if c.Effort != "" {
		args = append(args, "--effort", c.Effort)
	}
	if c.relayArgs == nil {
		if settings := c.flagSettings(); settings != "" {
			args = append(args, "--settings", settings)
		}
	}
	if c.PermissionMode != "" {
		args = append(args, "--permission-mode", c.PermissionMode)
	}
	if c.HookEvents {
		args = append(args, "--include-hook-events")
	}
	if c.relayArgs != nil {
		args = append(args, c.relayArgs...) // the host's servers, permissions, hooks and settings, through the relay
	} else {
		if c.AskPermissions {
			args = append(args, "--permission-prompt-tool", "stdio")
		}
		args = append(args, sdkServerArgs(c.SDKServers)...)
	}
	// Ids are given as --flag=value: a value that began with a dash could
	// not then be read as a flag of its own.
	switch {
	case s.ID != "" && s.Exists:
		args = append(args, "--resume="+s.ID)
	case s.ForkFrom != "":
		args = append(args, "--resume="+s.ForkFrom)
		if s.ResumeAt != "" {
			args = append(args, "--resume-session-at="+s.ResumeAt)
		}
		args = append(args, "--fork-session", "--session-id="+s.ID)
	case s.ID != "":
		args = append(args, "--session-id="+s.ID)
	}
	if c.NoPersistence {
		args = append(args, "--no-session-persistence")
	}
	if s.Name != "" {
		args = append(args, "--name="+s.Name)
	}
	if c.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt="+c.AppendSystemPrompt)
	}
	return append(args, c.ExtraArgs...)
}

// cliProcess is one running CLI process in its own process group. Its stdout
// must be read until EOF; Done is closed when it has exited and its group
// has been killed.
type cliProcess struct {
	cmd    *exec.Cmd
	stdout *eofReader // the pipe, read by spool
	spool  *spool
	stderr *Tail
	// clean, when set, removes what a terminal adds to each output line.
	clean func([]byte) []byte
	// job is the Windows Job Object holding the process tree (0 elsewhere).
	job uintptr
	// owner is its [ownerEnv] token while the reaper runs ("" else).
	owner string

	stderrDone chan struct{}
	done       chan struct{}
	waitErr    error // set before done is closed
	stopOnce   sync.Once
}

// startTurn starts a per-turn process (see [Config.TurnArgs]), writes input
// to its stdin and closes it.
func startTurn(cfg Config, session Session, input []byte) (*cliProcess, error) {
	p, stdin, err := startPiped(cfg, cfg.TurnArgs(session))
	if err != nil {
		return nil, err
	}
	go func() {
		// A write error means the CLI exited before reading its input; the
		// exit status and stderr tell why.
		_, _ = stdin.Write(input)
		_ = stdin.Close()
	}()
	return p, nil
}

// startPiped starts the CLI with args and its stdout on a pipe, and returns
// the process and the write end of its stdin.
func startPiped(cfg Config, args []string) (*cliProcess, *os.File, error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	p, stdin, err := spawn(cfg, args, stdoutR, stdoutW, configureGroup)
	if err != nil {
		closeAll(stdoutR, stdoutW)
		return nil, nil, err
	}
	return p, stdin, nil
}

// spawn starts the CLI with args, stdout on stdoutW (read back from
// stdoutR), stdin and stderr on pipes, and sys adjusting how it starts (its
// process group). The child's ends are closed in the parent.
func spawn(cfg Config, args []string, stdoutR, stdoutW *os.File, sys func(*exec.Cmd)) (*cliProcess, *os.File, error) {
	// The CLI is looked for as the environment it is given would find it.
	env := cfg.Environ()
	cli, err := findWith(Local(env), cfg.Path)
	if err != nil {
		return nil, nil, err
	}
	path := cli.Path
	cmd := exec.Command(path, append(slices.Clone(cli.Args), args...)...)
	cmd.Dir = cfg.Dir
	cmd.Env = env
	sys(cmd)

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	// The child gets the files themselves, so exec starts no copying
	// goroutines and Wait never blocks on our readers.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	owner, err := startChild(cmd, EndOrphans)
	if err != nil {
		closeAll(stdinR, stdinW, stderrR, stderrW)
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	closeAll(stdinR, stdoutW, stderrW) // the child's ends

	p := &cliProcess{
		cmd:        cmd,
		owner:      owner,
		stdout:     &eofReader{f: stdoutR, eof: make(chan struct{})},
		stderr:     NewTail(4096),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	p.spool = newSpool(p.stdout, isPipe(stdoutR))
	afterStart(p)
	go p.drainStderr(stderrR, cfg.Log)
	go p.wait()
	return p, stdinW, nil
}

// isPipe tells whether f is a pipe (not a terminal).
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close() // best effort
	}
}

// wait owns cmd.Wait: when the CLI exits it kills what is left of its group
// and, where the reaper runs, every other process it started (its Bash
// commands, each in a session of its own), so stdout reaches EOF, and
// closes done.
func (p *cliProcess) wait() {
	err := p.cmd.Wait()
	_ = signalGroup(p, killSignal) // best effort: reap stragglers
	childEnded(p.cmd, p.owner, EndOrphans)
	afterWait(p)
	p.waitErr = err
	close(p.done)
	p.stdout.closeWhenStuck(stdoutGrace)
	<-p.stderrDone
}

func (p *cliProcess) drainStderr(r *os.File, log *slog.Logger) {
	defer close(p.stderrDone)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			_, _ = p.stderr.Write(line)
			if log != nil {
				log.Debug("claude stderr", "pid", p.cmd.Process.Pid, "line", strings.TrimRight(string(line), "\r\n"))
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// Pid is the process id, which is also its process group id.
func (p *cliProcess) Pid() int { return p.cmd.Process.Pid }

// Stdout is the CLI's stdout, read eagerly into memory (see spool). Read
// it until EOF (or any error, which means the same).
func (p *cliProcess) Stdout() io.Reader { return p.spool }

// Done is closed when the process has exited.
func (p *cliProcess) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for status 0), valid after Done.
func (p *cliProcess) Err() error { return p.waitErr }

// ExitError is how a CLI process ended, for a turn that ended without the
// CLI's result: its wait status and the end of what it wrote to stderr.
type ExitError struct {
	Status error  // from [exec.Cmd.Wait]; nil for exit status 0
	Stderr string // the tail of its stderr, trimmed
}

func (e *ExitError) Error() string {
	status := "exit status 0"
	if e.Status != nil {
		status = e.Status.Error()
	}
	if e.Stderr != "" {
		return status + "; stderr: " + e.Stderr
	}
	return status
}

func (e *ExitError) Unwrap() error { return e.Status }

// Exit waits for the process to end and says how it did (a short wait for
// the rest of its stderr included).
func (p *cliProcess) Exit() *ExitError {
	<-p.done
	select {
	case <-p.stderrDone:
	case <-time.After(500 * time.Millisecond):
	}
	return &ExitError{Status: p.waitErr, Stderr: strings.TrimSpace(p.stderr.String())}
}

// Stop ends the process and its group: SIGTERM, then SIGKILL after
// 3 seconds. It returns when the process has exited. Safe to call more than
// once and after the process exited.
func (p *cliProcess) Stop() {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = signalGroup(p, termSignal)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = signalGroup(p, killSignal)
		}
	})
	<-p.done
}

// eofReader reads a pipe and notes when it reached its end.
type eofReader struct {
	f       *os.File
	eof     chan struct{}
	eofOnce sync.Once

	reading  atomic.Bool  // a Read is blocked in the pipe
	lastData atomic.Int64 // when a Read last returned data, Unix nanoseconds
}

// closeWhenStuck is called once the process has exited and its group is
// gone: the pipe then reaches EOF when drained, unless something that
// escaped the group still holds its write end. It closes the pipe if a
// reader sits blocked in Read with no data for grace; a reader that is
// merely slow (the host reading slowly) loses nothing.
func (r *eofReader) closeWhenStuck(grace time.Duration) {
	r.lastData.CompareAndSwap(0, time.Now().UnixNano())
	tick := time.NewTicker(grace / 4)
	defer tick.Stop()
	for {
		select {
		case <-r.eof:
			return
		case <-tick.C:
			if r.reading.Load() && time.Since(time.Unix(0, r.lastData.Load())) > grace {
				_ = r.f.Close() // unblocks the reader
				return
			}
		}
	}
}

func (r *eofReader) Read(b []byte) (int, error) {
	r.reading.Store(true)
	n, err := r.f.Read(b)
	r.reading.Store(false)
	if n > 0 {
		r.lastData.Store(time.Now().UnixNano())
	}
	if err != nil {
		r.eofOnce.Do(func() {
			close(r.eof)
			_ = r.f.Close()
		})
		if !errors.Is(err, io.EOF) {
			err = io.EOF // a pipe closed under us ends the stream like EOF
		}
	}
	return n, err
}
