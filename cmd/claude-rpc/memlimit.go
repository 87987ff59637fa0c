package main

import (
	"os"
	"runtime/debug"
)

// defaultMemoryLimit is the soft memory limit the bridge runs with unless
// GOMEMLIMIT says otherwise (GOMEMLIMIT=off: none).
//
// The bridge's live memory is small: the session's messages and the reply
// being relayed. With the Go default alone the heap grows to twice the live
// set before a collection, and a long reply makes large, short-lived
// buffers (its text as it grows, the CLI's 2 MB assistant and result
// lines): measured relaying a 2 MB reply, a peak RSS of 28 MiB, against
// 19.6 MiB with a 10 MiB limit (scripts/bench, BenchmarkRelay). The limit
// is soft: a session whose history needs more memory gets it, the GC then
// running more often (the runtime caps it at half the CPU).
const defaultMemoryLimit = 10 << 20

// setMemoryLimit applies defaultMemoryLimit unless GOMEMLIMIT is set.
func setMemoryLimit() {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
