//go:build unix

package sessions

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock of f, released when f is closed.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}
