//go:build unix

package bridge

import (
	"errors"
	"syscall"
)

// processGone reports whether process pid has exited and been waited for.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
