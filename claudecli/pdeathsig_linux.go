package claudecli

import "syscall"

// setParentDeathSignal has Linux kill the CLI if the bridge dies without
// cleaning up (SIGKILL from outside, a crash). It is tied to the spawning
// OS thread (go.dev/issue/27505); the bridge never locks goroutines to
// threads, so that thread lives as long as the process.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
