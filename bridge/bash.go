package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// bashKeep is how much of a bash command's output is kept in memory and
// returned: its last bytes; the whole output then goes to a temp file.
const bashKeep = 50 << 10

// bashRun is the running bash command, if any.
type bashRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// bashResult is pi's BashResult.
type bashResult struct {
	Output         string `json:"output"`
	ExitCode       int    `json:"exitCode"`
	Cancelled      bool   `json:"cancelled"`
	Truncated      bool   `json:"truncated"`
	FullOutputPath string `json:"fullOutputPath,omitempty"`
}

// runBash handles bash: the command runs in the session's folder with the
// user's shell, off the dispatcher; its result answers the command and, as
// in pi, goes into the next prompt's context.
func (s *server) runBash(c command) {
	cmdline, err := c.str("command")
	if err == nil && cmdline == "" {
		err = fmt.Errorf("bash: \"command\" is empty")
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	if s.bash != nil {
		s.mu.Unlock()
		s.w.send(errResponse(c.id, c.typ, "a bash command is already running; abort_bash stops it"))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bashRun{cancel: cancel, done: make(chan struct{})}
	s.bash = b
	s.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(b.done)
		res, err := s.execBash(ctx, cmdline)
		cancel()
		s.mu.Lock()
		s.bash = nil
		if err == nil {
			s.bashContext = append(s.bashContext, bashContextText(cmdline, res))
		}
		s.mu.Unlock()
		if err != nil {
			s.w.send(errResponse(c.id, c.typ, err.Error()))
			return
		}
		s.w.send(okResponse(c.id, c.typ, res))
	}()
}

// abortBash handles abort_bash: the running command is stopped (its whole
// process group) and answered with cancelled:true; abort_bash answers when
// it has.
func (s *server) abortBash(c command) {
	s.mu.Lock()
	b := s.bash
	s.mu.Unlock()
	if b != nil {
		b.cancel()
		<-b.done
	}
	s.w.send(okResponse(c.id, c.typ, nil))
}

func (s *server) execBash(ctx context.Context, cmdline string) (bashResult, error) {
	env := s.opts.CLI.Environ()
	shell := os.Getenv("SHELL")
	switch {
	case runtime.GOOS == "windows":
		// The shell the CLI's own Bash tool uses: Git Bash, found the same
		// way (never WSL's bash.exe).
		gb, err := claudecli.Local(env).FindGitBash()
		if err != nil {
			return bashResult{}, fmt.Errorf("bash: %w", err)
		}
		shell = gb
	case shell == "":
		shell = "bash"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", cmdline)
	cmd.Dir = s.cwd
	cmd.Env = env
	// The output streams to a temp file (kept if it is truncated) and its
	// tail stays in memory: memory is bounded whatever the command prints.
	full, err := os.CreateTemp("", "claude-rpc-bash-*.log")
	if err != nil {
		return bashResult{}, fmt.Errorf("bash: %w", err)
	}
	defer full.Close()
	tail := claudecli.NewTail(bashKeep)
	n := &countWriter{}
	w := io.MultiWriter(full, tail, n)
	cmd.Stdout, cmd.Stderr = w, w
	claudecli.PrepareGroup(cmd) // cancelling ends the command's children too
	err = cmd.Run()
	res := bashResult{Output: tail.String(), Cancelled: ctx.Err() != nil}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case res.Cancelled:
		res.ExitCode = -1
	default:
		return res, fmt.Errorf("bash: running %s: %w", shell, err)
	}
	if n.n > bashKeep {
		res.Truncated, res.FullOutputPath = true, full.Name()
	} else {
		_ = os.Remove(full.Name()) // all of it is in Output
	}
	return res, nil
}

// countWriter counts the bytes written through it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// bashContextText is how pi puts a bash execution into the model's context.
func bashContextText(cmdline string, res bashResult) string {
	text := "Ran `" + cmdline + "`\n```\n" + res.Output + "\n```"
	switch {
	case res.Cancelled:
		text += "\n(command cancelled)"
	case res.ExitCode != 0:
		text += fmt.Sprintf("\nCommand exited with code %d", res.ExitCode)
	}
	return text
}

// takeBashContext returns the bash executions since the last prompt as
// context for the CLI, and forgets them. Called with s.mu held.
func (s *server) takeBashContext() string {
	text := s.bashContextText()
	s.bashContext = nil
	return text
}

// bashContextText is what [server.takeBashContext] returns, kept.
func (s *server) bashContextText() string {
	if len(s.bashContext) == 0 {
		return ""
	}
	return strings.Join(s.bashContext, "\n\n") + "\n\n"
}
