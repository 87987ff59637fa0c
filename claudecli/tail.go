package claudecli

import "sync"

// tailBuffer keeps the last max bytes written to it: the end of a child's
// stderr, for error messages. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if drop := len(t.buf) + len(p) - t.max; drop > 0 {
		t.buf = append(t.buf[:0], t.buf[drop:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
