package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/claude-rpc/claude-rpc/bridge/rpcframe"
	"github.com/claude-rpc/claude-rpc/transform"
)

// DefaultCoalesce is the default [Options.Coalesce]: a quarter of a 60 Hz
// display frame, so merging deltas never costs a host a frame it could have
// shown, while the bursts in which the CLI prints deltas (several lines per
// read of the API's stream) go out as one frame each.
const DefaultCoalesce = 4 * time.Millisecond

// coalesceBudget is how many bytes of message_update frames one coalescing
// window may carry: a frame of B bytes is followed by at least B/budget
// windows before the next update. Every update carries the whole message
// so far (twice: message and partial), so frames of a long message are
// spaced in proportion to its size, and the bytes written per second stay
// under budget/window (8 MiB/s at the default): a 64 KB message updates
// about every 16 ms, a 2 MB one about every half second.
const coalesceBudget = 32 << 10

// While frames of growAt bytes or more go out, the writer makes a pipe on
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

// The shapes of message_update ([Options.MessageUpdates]).
const (
	UpdatesFull  = "full"
	UpdatesDelta = "delta"
)

// frameWriter owns the host's stdout: one goroutine writes every frame, in
// the order they were sent, each a complete line.
//
// Events are encoded by that goroutine as they are written
// ([transform.Encoder]), so nothing holds more than the frame being written,
// and not even that whole: the queue holds events, which view the message
// text the translator keeps. Text, thinking and tool-input deltas of one
// content block that come within the coalescing window are written as one
// message_update carrying their concatenated delta and the latest message;
// any other event (message_end, a tool event, a delta of another block)
// first writes the held update, so no event is reordered or held back but
// the deltas themselves. A frame the bridge makes (a response) goes out
// ahead of the held update, and a response ahead of the message_update
// frames queued before it: in full mode each of those carries the whole
// message so far (a 2 MB reply's last update and its text_end are 4 and
// 6 MB), which a host's get_state would otherwise wait behind.
// It never passes another kind of event (message_end, agent_end, a tool
// event) nor another frame the bridge made.
type frameWriter struct {
	out  io.Writer
	sink *sink // what enc writes to: out, or one frame at a time once chunking
	// shrinkAfter is how long after the last large frame a grown pipe
	// gets its size back (the constant; tests shorten it).
	shrinkAfter time.Duration
	enc         *transform.Encoder
	log         *slog.Logger
	ch          chan item
	done        chan struct{}
	coalesce    time.Duration
	// trace, when set, gets for each frame the time the CLI line that made
	// it was read and the time it was written (benchmarks).
	trace    func(read, written time.Time, held bool)
	lastRead atomic.Int64 // UnixNano of the last CLI line read, when tracing

	mu     sync.Mutex // guards closed, and sending on ch against closing it
	closed bool
}

// item is one frame to write: an event, or a response already encoded.
type item struct {
	ev    transform.Event
	frame []byte // set for a frame the bridge made (a response, a request to the host)
	// response: frame is a response to a host's command, which may go out
	// ahead of message_update frames queued before it (run).
	response bool
	read     time.Time // when the line that made ev was read; zero when not traced
	held     bool      // held for coalescing
	// chunk: after this frame (negotiate_protocol's answer), frames over
	// rpcframe.MaxFrameBytes go out as rpc_chunk frames (omp's protocol v2).
	chunk bool
	// filter, when set, is no frame: from here on only events of these
	// types are written (an empty map: no filter).
	filter map[string]bool
}

// sink is the encoder's writer: stdout itself, or, once frames are
// chunked, a buffer holding one frame until it is split.
type sink struct {
	out   io.Writer
	frame *bytes.Buffer // nil: write through
	pipe  *pipeSizer    // out's, when it is a pipe that can be resized
	n     int           // bytes of the frame being written so far
}

func (s *sink) Write(p []byte) (int, error) {
	if s.frame != nil {
		return s.frame.Write(p)
	}
	if s.n += len(p); s.n >= growAt && s.pipe != nil {
		s.pipe.grow() // before the bulk of a large frame, not after it
	}
	return s.out.Write(p)
}

func newFrameWriter(out io.Writer, opts Options) *frameWriter {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	sk := &sink{out: out, pipe: newPipeSizer(out)}
	w := &frameWriter{out: out, sink: sk, shrinkAfter: shrinkAfter, enc: transform.NewEncoder(sk), log: opts.Log, ch: make(chan item, 256),
		done: make(chan struct{}), coalesce: opts.Coalesce, trace: opts.Trace}
	// The seam where the wire's shape of message_update is chosen: no
	// handler and no event knows which one goes out.
	w.enc.Delta = opts.MessageUpdates == UpdatesDelta
	go w.run()
	return w
}

// send encodes v (a response) as one frame and queues it. It blocks while
// the host is slow to read (back-pressure reaches the CLI through its stdout
// pipe), and drops the frame after close.
func (w *frameWriter) send(v any) { w.sendItem(v, false) }

// sendThenChunk sends v (negotiate_protocol's answer), after which every
// frame too long for one line goes out as rpc_chunk frames.
func (w *frameWriter) sendThenChunk(v any) { w.sendItem(v, true) }

func (w *frameWriter) sendItem(v any, chunk bool) {
	b, err := encodeFrame(v)
	if err != nil {
		w.log.Error("encoding frame", "err", err)
		return
	}
	w.lastRead.Store(0) // frames after a response come from no CLI line until one is read
	_, resp := v.(response)
	w.queue(item{frame: b, chunk: chunk, response: resp})
}

// events queues events. The first events queued after a CLI line was read
// (lineRead) are the ones made from it, and carry its time for the trace;
// others (agent_start, a message the bridge delivers) carry none.
func (w *frameWriter) events(evs []transform.Event) {
	var read time.Time
	if w.trace != nil {
		if ns := w.lastRead.Swap(0); ns != 0 {
			read = time.Unix(0, ns)
		}
	}
	for i := range evs {
		w.queue(item{ev: evs[i], read: read})
	}
}

// setFilter makes the writer write, of the events queued after this call,
// only those of the given types (set_event_filter); nil writes all.
func (w *frameWriter) setFilter(types []string) {
	m := map[string]bool{}
	for _, t := range types {
		m[t] = true
	}
	if types == nil {
		m = map[string]bool{} // empty: no filter
	}
	w.queue(item{filter: m})
}

// lineRead notes that a CLI line was just read, for the trace.
func (w *frameWriter) lineRead() {
	if w.trace != nil {
		w.lastRead.Store(time.Now().UnixNano())
	}
}

func (w *frameWriter) queue(it item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.ch <- it
}

// close writes what is queued and stops the writer.
func (w *frameWriter) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}

// held is the message_update being coalesced.
type held struct {
	item
	active bool
	due    time.Time // when it is written if nothing else comes first
}

// run is the writer goroutine.
func (w *frameWriter) run() {
	defer close(w.done)
	var (
		h        held
		merged   []byte    // concatenated deltas that were not contiguous
		lastEnd  time.Time // when the last update frame was written
		lastSize int64     // its size
		timer    = time.NewTimer(time.Hour)
		traced   []item // frames written and not yet flushed, for the trace
		// When a grown pipe is next given its size back (see growAt).
		nextShrink  time.Time
		shrinkTimer = time.NewTimer(time.Hour)
	)
	timer.Stop()
	shrinkTimer.Stop()
	failed := false
	var chunker *rpcframe.Chunker // set once frames are chunked
	var only map[string]bool      // set_event_filter's types; nil: all
	ids := messageIDs{}
	flush := func() {
		if err := w.enc.Flush(); err != nil && !failed {
			w.log.Error("writing to stdout; dropping further frames", "err", err)
			failed = true
		}
		if w.trace != nil {
			now := time.Now()
			for i := range traced {
				w.trace(traced[i].read, now, traced[i].held)
			}
			traced = traced[:0]
		}
	}
	write := func(it *item) {
		if failed {
			return // keep draining so senders never block on a dead host
		}
		before := w.enc.Written() + int64(w.enc.Buffered())
		w.sink.n = 0
		defer func() {
			if w.sink.n >= growAt {
				nextShrink = time.Now().Add(w.shrinkAfter)
			}
		}()
		var err error // an event that cannot be encoded, or the host gone
		if it.frame != nil {
			err = w.enc.Line(bytes.TrimSuffix(it.frame, []byte("\n")))
		} else {
			ids.assign(&it.ev) // also to the events the filter drops, as omp
			if only != nil && !only[it.ev.Type] {
				return
			}
			err = w.enc.Event(&it.ev)
		}
		if err == nil && chunker != nil {
			err = w.writeChunked(chunker)
		}
		if errors.Is(err, transform.ErrInvalidJSON) {
			w.log.Error("encoding frame", "type", it.ev.Type, "err", err) // nothing written: the next frames go on
		} else if err != nil {
			w.log.Error("writing to stdout; dropping further frames", "err", err)
			failed = true
			return
		}
		if it.ev.Type == transform.EventMessageUpdate {
			lastEnd, lastSize = time.Now(), w.enc.Written()+int64(w.enc.Buffered())-before
		}
		if it.chunk && chunker == nil {
			// The answer is written whole; the frames after it may be
			// chunked.
			if err := w.enc.Flush(); err != nil {
				failed = true
				return
			}
			chunker, w.sink.frame = &rpcframe.Chunker{}, &bytes.Buffer{}
		}
		if w.trace != nil && !it.read.IsZero() {
			traced = append(traced, item{read: it.read, held: it.held})
		}
	}
	// pending holds items taken off the channel ahead of their turn
	// (overtake), written before anything read from the channel after
	// them; chDone says the channel was found closed meanwhile.
	var pending []item
	queued := 0 // responses in pending
	chDone := false
	// overtake writes the responses queued behind only message_updates,
	// before the message_update about to be written. The caller holds no
	// item that is not a message_update: a response may not pass it.
	overtake := func() {
	drain:
		for len(pending) < cap(w.ch) && !chDone {
			select {
			case it, ok := <-w.ch:
				if !ok {
					chDone = true
					break drain
				}
				pending = append(pending, it)
				if it.response {
					queued++
				}
			default:
				break drain
			}
		}
		for i := 0; i < len(pending) && queued > 0; {
			switch p := &pending[i]; {
			case p.response:
				write(p)
				queued--
				pending = append(pending[:i], pending[i+1:]...)
			case isUpdate(p):
				i++
			default:
				return
			}
		}
	}
	// release writes the held update; mayOvertake when the caller holds no
	// item other than a message_update.
	release := func(mayOvertake bool) {
		if h.active {
			if mayOvertake {
				overtake()
			}
			h.active = false
			timer.Stop()
			write(&h.item)
			merged = merged[:0] // written: the held delta no longer views it
		}
	}
	for {
		var it item
		ok := true
		switch {
		case len(pending) > 0:
			it = pending[0]
			pending = pending[1:]
			if it.response {
				queued--
			}
			if len(pending) == 0 {
				pending = nil // the array goes with its events
			}
		case chDone:
			ok = false
		default:
			select {
			case it, ok = <-w.ch:
			default:
				// Nothing more at once: what is written reaches the host
				// now, and a held update waits for its window or the next
				// frame.
				flush()
				var shrinkC <-chan time.Time
				if w.sink.pipe != nil && w.sink.pipe.grown {
					shrinkTimer.Reset(time.Until(nextShrink))
					shrinkC = shrinkTimer.C
				}
				select {
				case it, ok = <-w.ch:
				case <-timer.C: // (a stopped or reset timer delivers no stale tick)
					release(true)
					continue
				case <-shrinkC:
					// The pipe gives back its size once the host has read
					// what it holds beyond it; until then, try again.
					if w.sink.pipe.shrink(); w.sink.pipe.grown {
						nextShrink = time.Now().Add(w.shrinkAfter / 4)
					}
					continue
				}
			}
		}
		if !ok {
			release(false)
			flush()
			return
		}
		if it.filter != nil {
			release(false)
			only = it.filter
			if len(only) == 0 {
				only = nil
			}
			continue
		}
		if it.frame != nil && h.active {
			// A frame the bridge made (a response, a request to the host)
			// goes out ahead of the update being held: writing the update
			// first would write the whole message so far once per command
			// (a host polling get_state during a long reply), and no
			// ordering hosts rely on puts a response after a delta.
			write(&it)
			continue
		}
		if w.coalesce <= 0 || !isDelta(&it.ev) {
			upd := isUpdate(&it)
			release(upd)
			if upd {
				// Again: a response that came while the held update
				// was written goes ahead of it too (a reply's last
				// update, then its text_end: 4 and 6 MB in full mode).
				overtake()
			}
			write(&it)
			continue
		}
		if h.active && h.ev.Update.Type == it.ev.Update.Type && h.ev.Update.ContentIndex == it.ev.Update.ContentIndex {
			it.ev.Update.Delta, merged = concat(h.ev.Update.Delta, it.ev.Update.Delta, merged)
			it.read, it.held = h.read, true // the latency of the oldest delta in the frame
			h.item = it
			if !time.Now().Before(h.due) {
				release(true) // deltas come without a pause: the window still ends
			}
			continue
		}
		release(true) // it is a delta
		now := time.Now()
		due := now.Add(w.coalesce)
		if gap := lastEnd.Add(time.Duration(lastSize/coalesceBudget) * w.coalesce); gap.After(due) {
			due = gap
		}
		it.held = true
		h = held{item: it, active: true, due: due}
		timer.Reset(due.Sub(now))
	}
}

// writeChunked writes the frame the encoder gathered: whole when it fits
// in one line, else as rpc_chunk frames, or, over the reassembly limit,
// as the overflow frame omp writes in its place.
func (w *frameWriter) writeChunked(c *rpcframe.Chunker) error {
	if err := w.enc.Flush(); err != nil {
		return err
	}
	frame := w.sink.frame.Bytes()
	defer w.sink.frame.Reset()
	lines, err := c.Split(frame)
	if errors.Is(err, rpcframe.ErrFrameTooLarge) {
		w.log.Error("a frame is over the transport limit; writing omp's overflow frame instead", "bytes", len(frame))
		lines = [][]byte{rpcframe.Overflow(bytes.TrimSuffix(frame, []byte("\n")))}
	}
	for _, l := range lines {
		if _, err := w.out.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// messageIDs gives message frames omp's messageId: "msg-N", minted at
// message_start and kept until its message_end; an update carries the
// innermost open message's. Owned by the writer goroutine.
type messageIDs struct {
	n    int
	open []string
}

func (m *messageIDs) mint() string {
	m.n++
	return "msg-" + strconv.Itoa(m.n)
}

func (m *messageIDs) assign(ev *transform.Event) {
	switch ev.Type {
	case transform.EventMessageStart:
		ev.MessageID = m.mint()
		m.open = append(m.open, ev.MessageID)
	case transform.EventMessageUpdate:
		if len(m.open) == 0 {
			m.open = append(m.open, m.mint())
		}
		ev.MessageID = m.open[len(m.open)-1]
	case transform.EventMessageEnd:
		if len(m.open) == 0 {
			ev.MessageID = m.mint()
			return
		}
		ev.MessageID = m.open[len(m.open)-1]
		m.open = m.open[:len(m.open)-1]
	case transform.EventAgentEnd:
		m.open = m.open[:0]
	}
}

// isDelta reports whether ev is a message_update that only adds text to a
// block: the kind that is coalesced.
// isUpdate reports whether it is a message_update event.
func isUpdate(it *item) bool {
	return it.frame == nil && it.filter == nil && it.ev.Type == transform.EventMessageUpdate
}

func isDelta(ev *transform.Event) bool {
	if ev.Type != transform.EventMessageUpdate {
		return false
	}
	switch ev.Update.Type {
	case transform.TextDelta, transform.ThinkingDelta, transform.ToolcallDelta:
		return true
	}
	return false
}

// concat returns a followed by b, in buf, which it returns for reuse: a
// is already there when it is what concat returned last.
func concat(a, b string, buf []byte) (string, []byte) {
	if len(buf) == 0 || len(a) != len(buf) || unsafe.StringData(a) != unsafe.SliceData(buf) {
		buf = append(buf[:0], a...)
	}
	buf = append(buf, b...)
	return unsafe.String(unsafe.SliceData(buf), len(buf)), buf
}

// encodeFrame encodes v as JSON followed by LF, without HTML escaping.
// encoding/json still writes U+2028 and U+2029 as \u2028 and \u2029: the
// same strings to any JSON parser, and safe for hosts that split lines on
// them (JavaScript's line terminators).
func encodeFrame(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
