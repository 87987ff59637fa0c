package sessions

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock of f, released when f is closed.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}
