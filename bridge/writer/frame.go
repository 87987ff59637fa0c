package writer

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"

	"github.com/claude-rpc/claude-rpc/bridge/rpcframe"
	"github.com/claude-rpc/claude-rpc/transform"
)

// frameEncoder is the frame writer's encoding stage: it turns each item it
// is given, in the order given, into the bytes of one frame on the sink.
// Events get omp's message ids (messageIDs), pass set_event_filter's filter
// or are dropped, and are encoded as they are written
// ([transform.Encoder]: nothing holds a whole frame, the text is copied
// from the translator's message, never re-escaped); frames the bridge made
// are written as they were encoded. Once negotiate_protocol's answer is
// written (an item with chunk set), every frame is gathered whole and
// written as omp's protocol v2 frames it ([rpcframe]: whole when it fits a
// line, else rpc_chunk frames, else the overflow frame).
//
// Writes may stay in the encoder's buffer until flush. Owned by the writer
// goroutine.
type frameEncoder struct {
	enc  *transform.Encoder // writes to sink, or to frame once chunking
	sink *sink
	log  *slog.Logger
	ids  messageIDs
	only map[string]bool // set_event_filter's types; nil: all

	chunker *rpcframe.Chunker // set once frames are chunked
	frame   bytes.Buffer      // the frame being gathered, once chunking
}

func newFrameEncoder(s *sink, delta bool, log *slog.Logger) *frameEncoder {
	f := &frameEncoder{enc: transform.NewEncoder(s), sink: s, log: log}
	// The seam where the wire's shape of message_update is chosen: no
	// handler and no event knows which one goes out.
	f.enc.Delta = delta
	return f
}

// setFilter makes the encoder drop, from now on, the events whose type is
// not in only (nil or empty: drop none).
func (f *frameEncoder) setFilter(only map[string]bool) {
	if len(only) == 0 {
		only = nil
	}
	f.only = only
}

// encode writes it as one frame. It returns the frame's size in bytes (as
// encoded, before any chunking), false when the filter dropped it
// (nothing written), and an error: [transform.ErrInvalidJSON] for an event
// that cannot be encoded (nothing of it written: the next frames go on),
// or the sink's (the host gone: every later call returns it too).
func (f *frameEncoder) encode(it *item) (size int64, written bool, err error) {
	f.sink.startFrame()
	defer f.sink.endFrame()
	before := f.enc.Written() + int64(f.enc.Buffered())
	if it.frame != nil {
		err = f.enc.Line(bytes.TrimSuffix(it.frame, []byte("\n")))
	} else {
		f.ids.assign(&it.ev) // also to the events the filter drops, as omp
		if f.only != nil && !f.only[it.ev.Type] {
			return 0, false, nil
		}
		err = f.enc.Event(&it.ev)
	}
	if err == nil && f.chunker != nil {
		err = f.writeChunked()
	}
	size = f.enc.Written() + int64(f.enc.Buffered()) - before
	if err == nil && it.chunk && f.chunker == nil {
		// The answer is written whole; the frames after it are gathered
		// and may be chunked.
		if err = f.enc.Flush(); err == nil {
			delta := f.enc.Delta
			f.chunker, f.enc = &rpcframe.Chunker{}, transform.NewEncoder(&f.frame)
			f.enc.Delta = delta
		}
	}
	return size, true, err
}

// flush writes what the encoder holds to the sink.
func (f *frameEncoder) flush() error { return f.enc.Flush() }

// writeChunked writes the frame gathered: whole when it fits in one line,
// else as rpc_chunk frames, or, over the reassembly limit, as the overflow
// frame omp writes in its place. (Its lines do not count toward growing
// the pipe: sink.writeUncounted.)
func (f *frameEncoder) writeChunked() error {
	if err := f.enc.Flush(); err != nil {
		return err
	}
	frame := f.frame.Bytes()
	defer f.frame.Reset()
	lines, err := f.chunker.Split(frame)
	if errors.Is(err, rpcframe.ErrFrameTooLarge) {
		f.log.Error("a frame is over the transport limit; writing omp's overflow frame instead", "bytes", len(frame))
		lines = [][]byte{rpcframe.Overflow(bytes.TrimSuffix(frame, []byte("\n")))}
	}
	for _, l := range lines {
		if err := f.sink.writeUncounted(l); err != nil {
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
