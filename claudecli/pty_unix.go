//go:build unix

package claudecli

import (
	"fmt"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/term"
)

const ptySupported = true

// startPTYTurn is [startTurn] with the CLI's stdout on a pseudo-terminal,
// for hosts and platforms where the CLI behaves differently without one.
//
// What it relies on (the CLI 2.1.328): with a terminal on stdin the CLI
// does not read stdin at all, so stdin stays a pipe; in the terminal's default (canonical) mode
// the line discipline echoes and cuts lines at 4096 bytes, so it is put in
// raw mode. stderr stays a pipe: its tail goes into error messages, and it
// must not interleave with the JSON lines. Reading the master after the
// child exits fails with EIO, which the reader takes as EOF.
func startPTYTurn(cfg Config, session Session, input []byte) (*cliProcess, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("opening a pty: %w", err)
	}
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		closeAll(ptmx, tty)
		return nil, fmt.Errorf("putting the pty in raw mode: %w", err)
	}
	_ = pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}) // a size, for a CLI that asks
	p, stdin, err := spawn(cfg, cfg.TurnArgs(session), ptmx, tty, func(cmd *exec.Cmd) {
		// A session of its own (so also a process group) with the pty as
		// its controlling terminal (fd 1, its stdout).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
		setParentDeathSignal(cmd.SysProcAttr)
	})
	if err != nil {
		closeAll(ptmx, tty)
		return nil, err
	}
	p.clean = cleanTerminalLine
	go func() {
		_, _ = stdin.Write(input) // see startTurn
		_ = stdin.Close()
	}()
	return p, nil
}
