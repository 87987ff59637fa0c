//go:build windows

package claudecli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

type signal int

const (
	termSignal signal = iota
	killSignal
)

// configureGroup gives the child a console process group of its own.
// Killing its whole tree needs a Job Object; until then Kill ends the CLI
// itself.
func configureGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// signalGroup ends the child: Windows has no SIGTERM to send a console
// process, so both signals kill it.
func signalGroup(cmd *exec.Cmd, _ signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return os.ErrProcessDone
	}
	return err
}
