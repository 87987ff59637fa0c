//go:build unix

package claudecli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const (
	termSignal = syscall.SIGTERM
	killSignal = syscall.SIGKILL
)

// configureGroup starts the child in a process group of its own, so the
// Bash commands it runs can be signalled with it.
func configureGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
}

func afterStart(*cliProcess) {}

func afterWait(*cliProcess) {}

// signalGroup signals the child's whole process group.
func signalGroup(p *cliProcess, sig syscall.Signal) error {
	if p.cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// PrepareGroup makes cmd, a command of the bridge's own (the bash command),
// start in a process group of its own, and cancelling its context kill the
// whole group.
func PrepareGroup(cmd *exec.Cmd) {
	configureGroup(cmd)
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = 2 * time.Second // a grandchild holding the output cannot hang Wait
}
