//go:build unix

package filelock

import (
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock of f, released when f is closed.
func Lock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}
