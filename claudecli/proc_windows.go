//go:build windows

package claudecli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

type signal int

const (
	termSignal signal = iota
	killSignal
)

// configureGroup gives the child a console process group of its own.
func configureGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// afterStart puts the child in a Job Object that kills every process in it
// when the job is terminated or its last handle closes: Windows' process
// group. Processes the child started before this ran escape it; the CLI
// starts none before reading its input. Best effort: without a job, Kill
// ends the CLI itself.
func afterStart(p *cliProcess) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.cmd.Process.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	p.job = uintptr(job)
}

// afterWait closes the job, which kills what is left of the tree.
func afterWait(p *cliProcess) {
	if p.job != 0 {
		_ = windows.CloseHandle(windows.Handle(p.job))
		p.job = 0
	}
}

// signalGroup ends the child's tree: Windows has no SIGTERM to send a
// console process, so both signals terminate the job (or the CLI alone).
func signalGroup(p *cliProcess, _ signal) error {
	if p.cmd.Process == nil {
		return nil
	}
	if p.job != 0 {
		return windows.TerminateJobObject(windows.Handle(p.job), 1)
	}
	err := p.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return os.ErrProcessDone
	}
	return err
}

// PrepareGroup makes cmd start in a console process group of its own;
// cancelling its context kills it (exec's default).
func PrepareGroup(cmd *exec.Cmd) {
	configureGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
}
