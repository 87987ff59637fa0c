// Package filelock takes exclusive locks of files (flock; LockFileEx on
// Windows) between processes: pi's session files, the CLI cache's
// installs.
package filelock
