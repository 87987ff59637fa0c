package bridge

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
)

// frameWriter owns the host's stdout: one goroutine writes every frame, each
// as one complete line in one Write, in the order they were sent.
type frameWriter struct {
	out  io.Writer
	log  *slog.Logger
	ch   chan []byte
	done chan struct{}

	mu     sync.Mutex // guards closed, and sending on ch against closing it
	closed bool
}

func newFrameWriter(out io.Writer, log *slog.Logger) *frameWriter {
	w := &frameWriter{out: out, log: log, ch: make(chan []byte, 256), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *frameWriter) run() {
	defer close(w.done)
	failed := false
	for b := range w.ch {
		if failed {
			continue // keep draining so senders never block on a dead host
		}
		if _, err := w.out.Write(b); err != nil {
			w.log.Error("writing to stdout; dropping further frames", "err", err)
			failed = true
		}
	}
}

// send encodes v as one frame and queues it. It blocks while the host is
// slow to read (back-pressure reaches the CLI through its stdout pipe), and
// drops the frame after close.
func (w *frameWriter) send(v any) {
	b, err := encodeFrame(v)
	if err != nil {
		w.log.Error("encoding frame", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.ch <- b
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
