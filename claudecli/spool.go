package claudecli

import (
	"io"
	"sync"
	"time"
)

// spoolCap bounds the output a spool holds for a slow reader (a turn's
// output is a few MB; a 2 MB reply is about 6 MB of lines); past it the
// spool stops reading (and the CLI waits on its pipe) until the reader
// catches up.
const spoolCap = 64 << 20

// spool reads r eagerly into memory so the CLI never waits on the bridge.
//
// Why (the CLI 2.1.328): a per-turn process whose stdout is read slowly
// exits (status 0) with output still unwritten, and loses its last lines,
// the result among them (docs/performance.md, 'Figures behind the code').
// The host reads the bridge's stdout at its own pace, so the bridge
// takes the CLI's output as fast as it comes and queues it here.
type spool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	chunks [][]byte // unread output, oldest first; the first read from off
	off    int      // bytes of chunks[0] already read
	size   int      // unread bytes
	err    error    // why reading stopped, once it has
	batch  bool     // pause between reads while output flows (fill)
	limit  int      // unread bytes past which fill waits: spoolCap unless limited

	// fill's clock: time.Now and time.Sleep but in tests, which count
	// the pauses without depending on how busy the machine is.
	now   func() time.Time
	sleep func(time.Duration)
}

// newSpool starts reading r. batch is for a pipe: reads from a terminal
// return a few KiB at most, which fill would take for output trickling.
func newSpool(r io.Reader, batch bool) *spool {
	return startSpool(&spool{batch: batch, now: time.Now, sleep: time.Sleep}, r)
}

// startSpool starts s reading r; s has its batch and clock set.
func startSpool(s *spool, r io.Reader) *spool {
	s.cond = sync.NewCond(&s.mu)
	if s.limit == 0 {
		s.limit = spoolCap
	}
	go s.fill(r)
	return s
}

// spoolChunk is the size of the reads from the CLI and of the chunks the
// spool keeps.
const spoolChunk = 64 << 10

// While the CLI's output flows (burstReads reads in a row each found data
// within burstWait), fill pauses burstPause after a read that did not fill
// half its buffer, so the next read takes many lines at once.
//
// The CLI writes each line on its own, a line per API delta: read a line
// at a time, a long reply in small deltas is a read per delta, each waking
// the spool, the turn's reader, the run and the writer in turn, and those
// wake-ups were most of the bridge's CPU (docs/performance.md, 'Figures
// behind the code'). A model streaming at its own pace (a delta every few
// ms or more) never trips this; a flood does, and its lines then wait up
// to a pause (Go's shortest sleep on Linux, whatever is asked) before the
// bridge reads them.
// A read that fills half its buffer is followed by the next at once, so
// the pipe never stays full (a CLI that exits with its output unwritten
// loses it, see spool).
const (
	burstWait  = time.Millisecond
	burstReads = 4
	burstPause = time.Millisecond
)

func (s *spool) fill(r io.Reader) {
	// The CLI writes a line at a time: reads are often a few hundred bytes.
	// They are copied into the last chunk while it has room, so the spool
	// holds about what it queues, not a 64 KiB buffer per read (which, for
	// a reply of 200,000 deltas, would be gigabytes allocated).
	buf := make([]byte, spoolChunk)
	flowing := 0 // reads in a row that found data within burstWait
	for {
		start := s.now()
		n, err := r.Read(buf)
		if n > 0 && s.now().Sub(start) < burstWait {
			flowing++
		} else {
			flowing = 0
		}
		s.mu.Lock()
		if n > 0 {
			s.push(buf[:n])
		}
		if err != nil {
			s.err = err
		}
		s.cond.Broadcast()
		for s.err == nil && s.size > s.limit {
			s.cond.Wait()
		}
		stop := s.err != nil
		s.mu.Unlock()
		if stop {
			return
		}
		if s.batch && flowing >= burstReads && n < spoolChunk/2 {
			s.sleep(burstPause)
		}
	}
}

// limitTo makes fill wait once n bytes are unread, for a process that
// outlives its turns: nothing is lost by making it wait (a per-turn
// process is never limited: one that exits with output unwritten loses
// it), and a burst of output (a long reply's complete line, 2.3 times
// the reply with its result) is not held here as well as by its reader.
func (s *spool) limitTo(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
	s.cond.Broadcast()
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
