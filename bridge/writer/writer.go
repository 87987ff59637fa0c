// Package writer is the protocol writer: the one owner of the host's
// stdout. Frames and events go in (Writer's methods, from any goroutine),
// whole lines come out, in order but for a response overtaking queued
// message_update frames, with back-pressure: a queuer waits while the host
// is slow to read. It knows no command and no run; the bridge hands it
// what to write.
package writer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-rpc/claude-rpc/transform"
)

// Writer owns the host's stdout: one goroutine (run) writes every
// frame, each a complete line, in the order they were queued but for the
// two exceptions below. It is a chain of stages, each its own type with its
// own contract, all owned by that goroutine and called in turn for each
// item (no goroutine, copy or allocation between them):
//
//   - orderQueue (order.go): what was queued (ch), in order, except
//     that a response overtakes the message_update events queued ahead of
//     it, never another kind of event or another frame the bridge made;
//   - coalescer (coalesce.go): holds one delta at a time and merges
//     into it the deltas of its block that come within the window (and its
//     back-off after large updates, in full mode); any other item writes
//     it first;
//   - frameEncoder (frame.go): omp's message ids, set_event_filter,
//     encoding ([transform.Encoder]: the queue holds events, which view
//     the translator's text, and nothing holds a whole frame), and
//     rpc_chunk framing once negotiated;
//   - sink (sink.go): stdout itself, the pipe's size while large
//     frames go through, and the trace.
//
// The rules between stages are in run: a frame the bridge made (a
// response, a request to the host) goes out ahead of the held update,
// since writing the update first would write the whole message so far once
// per command (a host polling get_state during a long reply), and no
// ordering hosts rely on puts a response after a delta; and before an
// update is written (the held one or another), the responses queued behind
// only updates go first. What is written is flushed to stdout as soon as
// nothing more is queued.
type Writer struct {
	sink     *sink // the last stage; run's stages are made with it
	delta    bool  // --message-updates delta
	coalesce time.Duration
	log      *slog.Logger
	ch       chan item
	done     chan struct{}
	trace    bool         // Config.Trace is set
	lastRead atomic.Int64 // UnixNano of the last CLI line read, when tracing

	// mu guards closed, and sending on ch against closing it. It is held
	// across the send, which blocks while ch is full (queue): that is the
	// back-pressure, on purpose. A slow host makes every queuer wait in
	// line, the runner's loop among them, and through it the CLI's stdout
	// pipe; nothing is dropped and the order of queueing is kept. No
	// other lock is taken under it, and the one goroutine that drains ch
	// (run) never takes it, so the wait ends when the host reads.
	mu     sync.Mutex
	closed bool

	// tap, once set, is handed a copy of each event frame written whose
	// type it wants (the extension host's: extensions.Pump). Both run on the
	// writer's goroutine and must not block.
	tap atomic.Pointer[frameTap]
}

// Config is how a Writer writes.
type Config struct {
	// Delta: message_update frames carry the change only (pi 1.5's
	// shape), else the message so far too.
	Delta bool
	// Coalesce is the window within which deltas of one block become one
	// update (0: one frame per delta; DefaultCoalesce is the flag's
	// default).
	Coalesce time.Duration
	// Log takes what goes wrong (nil: discarded).
	Log *slog.Logger
	// Trace, when set, is called for each frame made from a CLI line with
	// when the line was read and when the frame was written (held: it
	// waited for coalescing).
	Trace func(read, written time.Time, held bool)
}

// frameTap is a reader of the events written besides the host.
type frameTap struct {
	wants func(typ string) bool
	take  func(frame []byte)
}

// SetTap sets the writer's tap: wants says which event types take is
// handed, each as its frame is written (the extension host's pump). Both
// run on the writer's goroutine and must not block.
func (w *Writer) SetTap(wants func(string) bool, take func([]byte)) {
	w.tap.Store(&frameTap{wants: wants, take: take})
}

// item is one frame to write: an event, or a response already encoded.
type item struct {
	ev    transform.Event
	frame []byte // set for a frame the bridge made (a response, a request to the host)
	// response: frame is a response to a host's command, which may go out
	// ahead of message_update frames queued before it (orderQueue).
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

// queuedFrames is how many frames wait for the writer before a queuer
// blocks. An item is ~700 bytes, and the queue's buffer is allocated for as
// long as the bridge runs.
const queuedFrames = 64

// New starts a Writer on out (the host's stdout): its goroutine runs until
// Close.
func New(out io.Writer, cfg Config) *Writer {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{sink: newSink(out, cfg.Trace), delta: cfg.Delta,
		coalesce: cfg.Coalesce, log: cfg.Log, ch: make(chan item, queuedFrames), done: make(chan struct{}),
		trace: cfg.Trace != nil}
	go w.run()
	return w
}

// Send encodes v (a frame the bridge made: a request to the host, a
// notice) as one frame and queues it. It blocks while the host is slow to
// read (back-pressure reaches the CLI through its stdout pipe), and drops
// the frame after Close.
func (w *Writer) Send(v any) { w.sendItem(v, false, false) }

// Respond is Send for a response to a host's command, which may go out
// ahead of the message_update frames queued before it.
func (w *Writer) Respond(v any) { w.sendItem(v, true, false) }

// RespondThenChunk responds with v (negotiate_protocol's answer), after
// which every frame too long for one line goes out as rpc_chunk frames.
func (w *Writer) RespondThenChunk(v any) { w.sendItem(v, true, true) }

func (w *Writer) sendItem(v any, response, chunk bool) {
	b, err := EncodeFrame(v)
	if err != nil {
		w.log.Error("encoding frame", "err", err)
		return
	}
	w.lastRead.Store(0) // frames after a response come from no CLI line until one is read
	w.queue(item{frame: b, chunk: chunk, response: response})
}

// Events queues events. The first events queued after a CLI line was read
// (LineRead) are the ones made from it, and carry its time for the trace;
// others (agent_start, a message the bridge delivers) carry none.
func (w *Writer) Events(evs []transform.Event) {
	var read time.Time
	if w.trace {
		if ns := w.lastRead.Swap(0); ns != 0 {
			read = time.Unix(0, ns)
		}
	}
	for i := range evs {
		w.queue(item{ev: evs[i], read: read})
	}
}

// SetFilter makes the writer write, of the events queued after this call,
// only those of the given types (set_event_filter); nil writes all.
func (w *Writer) SetFilter(types []string) {
	m := map[string]bool{}
	for _, t := range types {
		m[t] = true
	}
	if types == nil {
		m = map[string]bool{} // empty: no filter
	}
	w.queue(item{filter: m})
}

// LineRead notes that a CLI line was just read, for the trace.
func (w *Writer) LineRead() {
	if w.trace {
		w.lastRead.Store(time.Now().UnixNano())
	}
}

// queue hands it to the writer's goroutine, waiting while its queue is
// full (back-pressure: see mu); after close it drops it.
func (w *Writer) queue(it item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.ch <- it
}

// Close writes what is queued and stops the writer; what is queued after
// it is dropped.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}

// stages is the frame writer's chain, as run drives it.
type stages struct {
	q      orderQueue
	c      *coalescer
	f      *frameEncoder
	s      *sink
	log    *slog.Logger
	failed bool // stdout failed: every later item is dropped
	tap    *atomic.Pointer[frameTap]
}

// run is the writer goroutine: it takes each item in turn and hands it
// through the stages (see Writer for the rules between them).
func (w *Writer) run() {
	defer close(w.done)
	p := &stages{q: orderQueue{ch: w.ch}, c: newCoalescer(w.coalesce, !w.delta),
		f: newFrameEncoder(w.sink, w.delta, w.log), s: w.sink, log: w.log, tap: &w.tap}
	for {
		it, ok := p.next()
		switch {
		case !ok:
			p.release(false)
			p.flush()
			return
		case it.filter != nil:
			p.release(false)
			p.f.setFilter(it.filter)
		case it.frame != nil && p.c.holding():
			p.write(&it) // ahead of the held update
		case !p.c.takes(&it):
			upd := isUpdate(&it)
			p.release(upd)
			if upd {
				// Again: a response that came while the held update was
				// written goes ahead of this one too (a reply's last
				// update, then its text_end: 4 and 6 MB in full mode).
				p.q.overtake(p.write)
			}
			p.write(&it)
		default:
			if merged, due := p.c.add(it); !merged {
				p.release(true) // it is a delta: responses may pass the held one
				p.c.hold(it)
			} else if due {
				p.release(true)
			}
		}
	}
}

// next returns the next item in order, waiting for one when there is none
// at once: what is written is flushed to stdout then, the held update is
// released when due, and a grown pipe is given back its size. false: the
// queue is closed and empty.
func (p *stages) next() (item, bool) {
	for {
		if it, ok := p.q.take(); ok || p.q.closed {
			return it, ok
		}
		p.flush()
		select {
		case it, ok := <-p.q.ch:
			return it, ok
		case <-p.c.C():
			p.release(true)
		case <-p.s.shrinkC():
			p.s.shrink()
		}
	}
}

// release writes the held update, if any; mayOvertake when the caller
// holds no item but a message_update, so the responses queued behind
// updates go first.
func (p *stages) release(mayOvertake bool) {
	if !p.c.holding() {
		return
	}
	if mayOvertake {
		p.q.overtake(p.write)
	}
	it := p.c.take()
	p.write(&it)
}

// write hands it to the encoder, and notes what the other stages need: an
// update's size for the coalescer's back-off, a traced frame for the sink.
func (p *stages) write(it *item) {
	if p.failed {
		return // keep draining so senders never block on a dead host
	}
	size, written, err := p.f.encode(it)
	if errors.Is(err, transform.ErrInvalidJSON) {
		p.log.Error("encoding frame", "type", it.ev.Type, "err", err) // nothing written: the next frames go on
	} else if err != nil {
		p.log.Error("writing to stdout; dropping further frames", "err", err)
		p.failed = true
		return
	}
	if !written {
		return
	}
	if it.ev.Type == transform.EventMessageUpdate {
		p.c.wrote(size)
	}
	p.s.note(it.read, it.held)
	if t := p.tap.Load(); t != nil && it.frame == nil && t.wants(it.ev.Type) {
		// Encoded again, whole (full message_update): what pi's handlers
		// are given. Only for the types an extension handles.
		var buf bytes.Buffer
		enc := transform.NewEncoder(&buf)
		if err := enc.Event(&it.ev); err == nil && enc.Flush() == nil {
			t.take(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		}
	}
}

// flush writes what the encoder holds to stdout, then reports the frames
// noted to the trace.
func (p *stages) flush() {
	if err := p.f.flush(); err != nil && !p.failed {
		p.log.Error("writing to stdout; dropping further frames", "err", err)
		p.failed = true
	}
	p.s.flushed()
}

// EncodeFrame encodes v as JSON followed by LF, without HTML escaping.
// encoding/json still writes U+2028 and U+2029 as \u2028 and \u2029: the
// same strings to any JSON parser, and safe for hosts that split lines on
// them (JavaScript's line terminators).
func EncodeFrame(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
