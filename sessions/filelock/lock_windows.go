package filelock

import (
	"os"

	"golang.org/x/sys/windows"
)

// Lock takes an exclusive lock of f, released when f is closed.
func Lock(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}
