package claudecli

import (
	"errors"
	"os/exec"
	"time"
)

// ownerEnv is the environment variable that names, in every process the
// bridge starts while the reaper runs ([EnableReaper]), the child of the
// bridge it descends from: "<bridge pid>.<n>", with ".keep" after it for a
// [KeepOrphans] child. Processes inherit it, so an orphan re-parented to the
// bridge says whose it is.
const ownerEnv = "CLAUDE_RPC_OWNER"

// WatchdogArg, as the first argument of the bridge's executable, makes it
// the watchdog [StartWatchdog] starts: it runs [RunWatchdog].
const WatchdogArg = "__watch-orphans"

// ErrNoReaper is returned by [EnableReaper] where the OS cannot give a
// process the orphans of its descendants (every OS but Linux).
var ErrNoReaper = errors.New("this OS cannot re-parent orphans to the bridge (no child subreaper)")

// Orphans says what becomes of the orphans a child of the bridge leaves:
// the processes it started whose parent ended, re-parented to the bridge.
type Orphans int

const (
	// EndOrphans: they are ended when the child itself has ended (its
	// Wait returned), and reaped. CLI processes and queries are started so.
	EndOrphans Orphans = iota
	// KeepOrphans: they run on, and are reaped when they exit. The host's
	// bash command is started so: a job it put in the background outlives
	// it, as in pi.
	KeepOrphans
)

// RunCommand starts cmd, a child of the bridge's own that is not a CLI
// process (the bash command, a version query), and waits for it. Once
// [EnableReaper] has run, every child of the process must be started
// through here or a [Transport]: a child the reaper does not know would be
// taken for an orphan.
func RunCommand(cmd *exec.Cmd, orphans Orphans) error {
	ended, err := StartChild(cmd, orphans)
	if err != nil {
		return err
	}
	err = cmd.Wait()
	ended()
	return err
}

// StartChild starts cmd, a long-lived child of the bridge's own that is
// not a CLI process (the extension host), known to the reaper as
// [RunCommand]'s are, so that its exit status is its Wait's and what it
// leaves is ended as orphans says. The caller calls ended once cmd.Wait
// has returned.
func StartChild(cmd *exec.Cmd, orphans Orphans) (ended func(), err error) {
	token, err := startChild(cmd, orphans)
	if err != nil {
		return nil, err
	}
	return func() { childEnded(cmd, token, orphans) }, nil
}

// orphanSettle bounds how long a child's end waits for its orphans to be
// gone (SIGKILLed processes die at once, but one in uninterruptible sleep
// takes as long as its I/O).
const orphanSettle = 2 * time.Second

// SettleOrphans ends every orphan no live child keeps (see [Orphans]) and
// waits up to d until they are gone and reaped. The bridge calls it last,
// once every CLI process has ended. It does nothing without the reaper.
func SettleOrphans(d time.Duration) { settleOrphans(d) }
