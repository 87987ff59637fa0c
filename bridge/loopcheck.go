package bridge

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
)

// checkLoop turns on the runner's ownership check (runner.onLoop). The
// package's tests turn it on (export_test.go); in production it is off,
// and the check costs the load of a bool.
var checkLoop bool

// loopID is the identity of a runner's loop goroutine, for onLoop: set by
// the loop as it starts, when checkLoop is on.
type loopID struct{ id atomic.Uint64 }

// mark records the calling goroutine as the loop.
func (l *loopID) mark() {
	if checkLoop {
		l.id.Store(goroutineID())
	}
}

// check panics unless the calling goroutine is the one mark recorded: a
// method that owns the runner's fields, called off its loop, is a data
// race the race detector sees only when it happens; this sees it every
// time.
func (l *loopID) check() {
	if checkLoop && goroutineID() != l.id.Load() {
		panic(errOffLoop)
	}
}

// checkOff panics if the calling goroutine is the loop: a call that waits
// for the loop (runner.do), made on it, waits forever.
func (l *loopID) checkOff() {
	if checkLoop && goroutineID() == l.id.Load() {
		panic(errOnLoop)
	}
}

// errOnLoop is checkOff's panic.
const errOnLoop = "bridge: a call that waits for the runner's loop was made on the loop (it would wait forever)"

// errOffLoop is check's panic.
const errOffLoop = "bridge: a runner method that must run on its loop was called from another goroutine"

// goroutineID is the calling goroutine's number, from the first line of
// its stack trace ("goroutine 42 [running]:"); 0 if that cannot be read.
// Slow (a stack trace): only for checkLoop.
func goroutineID() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseUint(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	return 0
}
