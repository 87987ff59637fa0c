package claudecli

import (
	"io"
	"sync"
)

// spoolCap bounds the output a spool holds for a slow reader (a turn's
// output is a few MB; a 2 MB reply is about 6 MB of lines); past it the
// spool stops reading (and the CLI waits on its pipe) until the reader
// catches up.
const spoolCap = 64 << 20

// spool reads r eagerly into memory so the CLI never waits on the bridge.
//
// Measured on CLI 2.1.328: a per-turn process whose stdout is read slowly
// exits (status 0) with output still unwritten, and loses its last lines,
// the result among them (2 MB reply, reader pausing 0.3 s per 64 KiB: 940 KB
// lost). The host reads the bridge's stdout at its own pace, so the bridge
// takes the CLI's output as fast as it comes and queues it here.
type spool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	chunks [][]byte // unread output, oldest first; the first read from off
	off    int      // bytes of chunks[0] already read
	size   int      // unread bytes
	err    error    // why reading stopped, once it has
}

func newSpool(r io.Reader) *spool {
	s := &spool{}
	s.cond = sync.NewCond(&s.mu)
	go s.fill(r)
	return s
}

// spoolChunk is the size of the reads from the CLI and of the chunks the
// spool keeps.
const spoolChunk = 64 << 10

func (s *spool) fill(r io.Reader) {
	// The CLI writes a line at a time: reads are often a few hundred bytes.
	// They are copied into the last chunk while it has room, so the spool
	// holds about what it queues, not a 64 KiB buffer per read (measured:
	// 3.5 GB allocated, 200 MB heap, relaying a reply of 200,000 deltas).
	buf := make([]byte, spoolChunk)
	for {
		n, err := r.Read(buf)
		s.mu.Lock()
		if n > 0 {
			s.push(buf[:n])
		}
		if err != nil {
			s.err = err
		}
		s.cond.Broadcast()
		for s.err == nil && s.size > spoolCap {
			s.cond.Wait()
		}
		stop := s.err != nil
		s.mu.Unlock()
		if stop {
			return
		}
	}
}

// push queues a copy of b, in the last chunk while it has room. Called
// with s.mu held.
func (s *spool) push(b []byte) {
	s.size += len(b)
	if k := len(s.chunks) - 1; k >= 0 {
		last := s.chunks[k]
		n := min(cap(last)-len(last), len(b))
		s.chunks[k] = append(last, b[:n]...)
		b = b[n:]
	}
	if len(b) > 0 {
		s.chunks = append(s.chunks, append(make([]byte, 0, max(spoolChunk, len(b))), b...))
	}
}

// Read returns queued output, waiting for some when there is none.
func (s *spool) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.size == 0 && s.err == nil {
		s.cond.Wait()
	}
	if s.size == 0 {
		return 0, s.err
	}
	n := copy(p, s.chunks[0][s.off:])
	s.off += n
	s.size -= n
	if s.off == len(s.chunks[0]) {
		s.off = 0
		if len(s.chunks) == 1 {
			s.chunks[0] = s.chunks[0][:0] // all read: reused by the next push
		} else {
			s.chunks[0] = nil
			s.chunks = s.chunks[1:]
		}
	}
	s.cond.Broadcast() // a fill waiting on the cap may go on
	return n, nil
}
