package claudecli

import (
	"io"
	"sync"
)

// inbox feeds a persistent CLI's stdin from one goroutine, line by line in
// the order they were sent. Senders never block on the pipe: a CLI that
// stops reading (hung, or busy with a 20 MB image) must not hold up the
// bridge's dispatcher or an interrupt's deadline, and whole lines from
// different senders must never interleave.
type inbox struct {
	mu     sync.Mutex
	q      [][]byte
	closed bool          // no more lines: stdin is closed once q is written
	wake   chan struct{} // one pending wake-up for the writer
	done   chan struct{} // closed when the writer has closed stdin
}

func newInbox(w io.WriteCloser) *inbox {
	in := &inbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go in.write(w)
	return in
}

// send queues a whole line (newline included). It reports false once the
// inbox is closed; a line sent to a process that has died is dropped.
func (in *inbox) send(line []byte) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return false
	}
	in.q = append(in.q, line)
	in.poke()
	return true
}

// close lets the writer finish what is queued, then close stdin (the CLI
// then ends its session and exits).
func (in *inbox) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		in.poke()
	}
}

func (in *inbox) poke() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// write owns w. After a write error (the process died) it discards lines
// until close.
func (in *inbox) write(w io.WriteCloser) {
	defer close(in.done)
	defer w.Close() //nolint:errcheck // best effort: the process may be gone
	var broken bool
	for range in.wake {
		in.mu.Lock()
		q, closed := in.q, in.closed
		in.q = nil
		in.mu.Unlock()
		for _, line := range q {
			if !broken {
				_, err := w.Write(line)
				broken = err != nil
			}
		}
		if closed {
			return
		}
	}
}
