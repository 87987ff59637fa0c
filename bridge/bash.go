package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/claude-rpc/claude-rpc/bridge/writer"
	"github.com/claude-rpc/claude-rpc/claudecli"
)

// bashKeep is how much of a bash command's output is kept in memory and
// returned: its last bytes; the whole output then goes to a temp file.
const bashKeep = 50 << 10

// bashJob is the running bash command, if any: one at a time. Its mutex
// is taken only by its methods below, which call nothing else.
type bashJob struct {
	mu  sync.Mutex
	run *bashRun
}

// bashRun is one running bash command.
type bashRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// running reports whether a command runs.
func (j *bashJob) running() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.run != nil
}

// start makes b the running command, unless one runs already (false).
func (j *bashJob) start(b *bashRun) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.run != nil {
		return false
	}
	j.run = b
	return true
}

// ended forgets the running command: it has ended.
func (j *bashJob) ended() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.run = nil
}

// stop stops the running command, if any, and waits until it ended.
func (j *bashJob) stop() {
	j.mu.Lock()
	b := j.run
	j.mu.Unlock()
	if b != nil {
		b.cancel()
		<-b.done
	}
}

// bash handles bash: the extensions' user_bash handlers may give its result
// (as in pi); else the command runs in the session's folder with the
// user's shell, on a goroutine of its own; its result answers the command
// and, as in pi, goes into the next prompt's context. It is stopped (its
// process group) by abort_bash or the shutdown (the call's context), and
// then answered cancelled.
func (s *server) bash(c *call) (any, error) {
	cmdline := c.str("command")
	if cmdline == "" {
		return nil, errors.New("bash: \"command\" is empty")
	}
	ctx, cancel := context.WithCancel(c.Context()) // abort_bash, or the shutdown
	b := &bashRun{cancel: cancel, done: make(chan struct{})}
	if !s.bashJ.start(b) {
		cancel()
		return nil, errors.New("a bash command is already running; abort_bash stops it")
	}
	started := s.goes.start(func() {
		defer close(b.done)
		res, given := s.extUserBash(ctx, cmdline, c.raw.Get("excludeFromContext").Bool())
		var err error
		if !given {
			res, err = s.execBash(ctx, cmdline, &bashUpdates{out: s.out, id: c.id})
		}
		cancel()
		s.bashJ.ended()
		if err != nil {
			s.respond(c, errResponse(c.id, c.typ, err.Error()))
			return
		}
		if !c.raw.Get("excludeFromContext").Bool() {
			s.st.addContext(bashContextText(cmdline, res))
		}
		s.respond(c, okResponse(c.id, c.typ, res))
	})
	if !started {
		cancel()
		close(b.done)
		s.bashJ.ended()
		return nil, errShutdown
	}
	return nil, errAnswered
}

// abortBash handles abort_bash: the running command is stopped (its whole
// process group) and answered with cancelled:true; abort_bash answers when
// it has.
func (s *server) abortBash(*call) (any, error) {
	s.bashJ.stop()
	return nil, nil
}

func (s *server) execBash(ctx context.Context, cmdline string, updates io.Writer) (bashResult, error) {
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
	w := io.MultiWriter(full, tail, n, updates)
	cmd.Stdout, cmd.Stderr = w, w
	claudecli.PrepareGroup(cmd) // cancelling ends the command's children too
	// What it puts in the background runs on, as in pi.
	err = claudecli.RunCommand(cmd, claudecli.KeepOrphans)
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

// bashUpdates sends the output of a bash command as it comes:
// bash_execution_update frames (pi 1.5's), each whole UTF-8 (a character
// cut between two writes waits for its rest).
type bashUpdates struct {
	out  *writer.Writer
	id   json.RawMessage
	rest []byte
}

func (u *bashUpdates) Write(p []byte) (int, error) {
	b := append(u.rest, p...)
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	u.rest = append([]byte(nil), b[cut:]...)
	if cut > 0 {
		u.out.Send(bashUpdateJSON{Type: "bash_execution_update", ID: u.id, Delta: string(b[:cut])})
	}
	return len(p), nil
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

// takeContext returns what the model gets with the next prompt (the bash
// executions and the extensions' messages since the last one) as context
// for the CLI, and forgets it. Called with st.mu held.
func (ls *lockedState) takeContext() string {
	text := ls.contextText()
	ls.context = nil
	return text
}

// contextText is what [lockedState.takeContext] returns, kept. Called
// with st.mu held.
func (ls *lockedState) contextText() string {
	if len(ls.context) == 0 {
		return ""
	}
	return strings.Join(ls.context, "\n\n") + "\n\n"
}
