//go:build !linux

package claudecli

import (
	"io"
	"log/slog"
	"os/exec"
	"time"
)

// EnableReaper returns [ErrNoReaper]: only Linux lets a process adopt the
// orphans of its descendants. On macOS a CLI's Bash commands that left its
// process group (the CLI starts each in a session of its own) are out of
// the bridge's reach once the CLI is gone; on Windows the Job Object each
// CLI runs in ends its whole tree (see afterStart).
func EnableReaper(*slog.Logger) error { return ErrNoReaper }

func startChild(cmd *exec.Cmd, _ Orphans) (string, error) { return "", cmd.Start() }

func childEnded(*exec.Cmd, string, Orphans) {}

func settleOrphans(time.Duration) {}

// StartWatchdog returns [ErrNoReaper]: the watchdog finds what to end in
// Linux's /proc.
func StartWatchdog() error { return ErrNoReaper }

// RunWatchdog is never started here.
func RunWatchdog([]string, io.Reader) int { return 2 }
