package writer

import (
	"io"
	"time"
)

// While frames of growAt bytes or more go out, the sink makes a pipe on
// stdout bigPipe bytes (Linux: F_SETPIPE_SZ, pipesize_linux.go), and gives
// it back its size once shrinkAfter has passed without one.
//
// A pipe holds 64 KiB by default: a frame goes through it in refills, each
// a wake-up of the host's reader, then of the writer, and on a busy machine
// either may wait for a CPU. In full mode a 2 MB reply's last updates are 4
// MB and its end 12 MB (text_end 6, message_end, turn_end, agent_end 2
// each): ~190 refills of 64 KiB, which a response written after them waits
// for. The grown pipe makes that wait 16 times fewer refills; the bound on
// get_state's answer during a long reply (BenchmarkGetStateDuringReply,
// scripts/bench) relies on it. 1 MiB is the most an unprivileged
// process may set (fs.pipe-max-size); the pages count against the user's
// pipe-buffer quota (fs.pipe-user-pages-soft, 64 MiB by default), which is
// why the pipe is grown only while large frames stream and not for good:
// past the quota the call fails and the pipe stays as it was.
const (
	growAt      = 256 << 10
	bigPipe     = 1 << 20
	shrinkAfter = time.Second
)

// sink is the last stage of the frame writer: the host's stdout. It writes
// what it is given as it is (it never buffers, splits or reorders), sizes
// the pipe under it while large frames go through (see growAt), and, when
// tracing, reports each traced frame once it has reached stdout.
//
// Owned by the writer goroutine; nothing in it blocks but the writes to
// stdout themselves (the host being slow to read).
type sink struct {
	out  io.Writer
	pipe *pipeSizer // out's, when it is a pipe that can be resized; else nil
	// n counts the bytes of the frame being written (Write, between
	// startFrame and endFrame) since startFrame.
	n int
	// shrinkAfter is how long after the last large frame a grown pipe
	// gets its size back (the constant; tests shorten it).
	shrinkAfter time.Duration
	nextShrink  time.Time // when a grown pipe is next given its size back
	shrinkTimer *time.Timer

	// trace, when set, gets for each traced frame the time the CLI line
	// that made it was read and the time it reached stdout (benchmarks).
	trace  func(read, written time.Time, held bool)
	traced []tracedFrame // written through the encoder's buffer, not yet flushed
}

// tracedFrame is a frame made from a CLI line read at read; held: it was
// held for coalescing.
type tracedFrame struct {
	read time.Time
	held bool
}

func newSink(out io.Writer, trace func(read, written time.Time, held bool)) *sink {
	s := &sink{out: out, pipe: newPipeSizer(out), shrinkAfter: shrinkAfter, trace: trace,
		shrinkTimer: time.NewTimer(time.Hour)}
	s.shrinkTimer.Stop()
	return s
}

// Write writes p to stdout, counting it toward the frame being written: the
// pipe is grown once that frame reaches growAt bytes, before its bulk.
func (s *sink) Write(p []byte) (int, error) {
	if s.n += len(p); s.n >= growAt && s.pipe != nil {
		s.pipe.grow()
	}
	return s.out.Write(p)
}

// writeUncounted writes p to stdout without counting it toward the frame
// (rpc_chunk lines: see frameEncoder).
func (s *sink) writeUncounted(p []byte) error {
	_, err := s.out.Write(p)
	return err
}

// startFrame and endFrame bracket the writing of one frame: a frame of
// growAt bytes or more keeps a grown pipe grown for shrinkAfter more.
func (s *sink) startFrame() { s.n = 0 }

func (s *sink) endFrame() {
	if s.n >= growAt {
		s.nextShrink = time.Now().Add(s.shrinkAfter)
	}
}

// shrinkC is, while the pipe is grown, a channel that delivers when it is
// time to give it its size back (call shrink then); else nil. Call it
// anew each time the writer waits.
func (s *sink) shrinkC() <-chan time.Time {
	if s.pipe == nil || !s.pipe.grown {
		return nil
	}
	s.shrinkTimer.Reset(time.Until(s.nextShrink))
	return s.shrinkTimer.C
}

// shrink gives the pipe back its size. That fails while the host has not
// read what the pipe holds beyond it; it is then tried again a quarter of
// shrinkAfter later.
func (s *sink) shrink() {
	if s.pipe.shrink(); s.pipe.grown {
		s.nextShrink = time.Now().Add(s.shrinkAfter / 4)
	}
}

// note records, when tracing, that a frame made from a line read at read
// was written (to the encoder: it reaches stdout at the next flushed).
func (s *sink) note(read time.Time, held bool) {
	if s.trace != nil && !read.IsZero() {
		s.traced = append(s.traced, tracedFrame{read, held})
	}
}

// flushed reports the noted frames, which are now on stdout, to the trace.
func (s *sink) flushed() {
	if s.trace == nil {
		return
	}
	now := time.Now()
	for _, f := range s.traced {
		s.trace(f.read, now, f.held)
	}
	s.traced = s.traced[:0]
}
