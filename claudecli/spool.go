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
	chunks [][]byte // unread output, oldest first
	size   int      // bytes in chunks
	err    error    // why reading stopped, once it has
}

func newSpool(r io.Reader) *spool {
	s := &spool{}
	s.cond = sync.NewCond(&s.mu)
	go s.fill(r)
	return s
}

func (s *spool) fill(r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		s.mu.Lock()
		if n > 0 {
			// A chunk of its own size: a pty gives at most 4 KiB a read,
			// and 64 KiB buffers kept for each would hold 16 times the cap.
			s.chunks = append(s.chunks, append([]byte(nil), buf[:n]...))
			s.size += n
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

// Read returns queued output, waiting for some when there is none.
func (s *spool) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.chunks) == 0 && s.err == nil {
		s.cond.Wait()
	}
	if len(s.chunks) == 0 {
		return 0, s.err
	}
	n := copy(p, s.chunks[0])
	if n == len(s.chunks[0]) {
		s.chunks[0] = nil
		s.chunks = s.chunks[1:]
	} else {
		s.chunks[0] = s.chunks[0][n:]
	}
	s.size -= n
	s.cond.Broadcast() // a fill waiting on the cap may go on
	return n, nil
}
