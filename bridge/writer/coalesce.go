package writer

import (
	"time"
	"unsafe"

	"github.com/claude-rpc/claude-rpc/transform"
)

// DefaultCoalesce is the default [Config.Coalesce]: a quarter of a 60 Hz
// display frame, so merging deltas never costs a host a frame it could have
// shown, while the bursts in which the CLI prints deltas (several lines per
// read of the API's stream) go out as one frame each.
const DefaultCoalesce = 4 * time.Millisecond

// coalesceBudget is how many bytes of message_update frames one coalescing
// window may carry, in full mode: a frame of B bytes is followed by at
// least B/budget windows before the next update. Every update carries the
// whole message so far (twice: message and partial), so frames of a long
// message are spaced in proportion to its size, and the bytes written per
// second stay under budget/window (8 MiB/s at the default): a 64 KB
// message updates about every 16 ms, a 2 MB one about every half second.
//
// Not in delta mode, where an update carries what came since the last:
// spacing them saves no bytes (each is written once whatever the spacing),
// and a model faster than the budget (a flood, 8 MiB/s or more) made each
// held delta larger than the last and so the next wait longer, until the
// held delta was most of the reply: 16 MB of a 32 MB one, in memory beside
// the text (issue 44).
const coalesceBudget = 32 << 10

// mergedKept is the largest merge buffer the coalescer keeps for the next
// merges once its update is written; a larger one goes with its update.
const mergedKept = 64 << 10

// coalescer is the frame writer's coalescing stage: it holds at most one
// message_update, a delta (isDelta), and merges into it the deltas of the
// same content block that come before it is released: the held update
// then carries their concatenated delta and the latest message. It holds
// nothing else: the writer releases the held update before writing any
// other event (message_end, a tool event, a delta of another block), so no
// event is reordered or held back but the deltas themselves.
//
// An update is due a window after it was first held, or, after an update
// frame of B bytes was written (wrote), no sooner than B/coalesceBudget
// windows after that frame: the back-off. Its timer (C) fires when the
// held update is due; a merge past that time reports it due at once (a
// stream of deltas without a pause still ends its window).
//
// Owned by the writer goroutine; nothing in it blocks.
type coalescer struct {
	window  time.Duration // 0: no coalescing (takes is false)
	backOff bool          // space updates by their size (full mode; coalesceBudget)
	held    item
	active  bool      // held is an update being coalesced
	due     time.Time // when held is written if nothing else comes first
	merged  []byte    // the concatenated deltas held views, when not contiguous
	timer   *time.Timer

	lastEnd  time.Time // when the last update frame was written
	lastSize int64     // its size
}

func newCoalescer(window time.Duration, backOff bool) *coalescer {
	c := &coalescer{window: window, backOff: backOff, timer: time.NewTimer(time.Hour)}
	c.timer.Stop()
	return c
}

// takes reports whether it is an item the coalescer holds: a delta, when
// coalescing.
func (c *coalescer) takes(it *item) bool { return c.window > 0 && isDelta(&it.ev) }

// holding reports whether an update is held.
func (c *coalescer) holding() bool { return c.active }

// C delivers when the held update is due (release it then). A stopped or
// reset timer delivers no stale tick.
func (c *coalescer) C() <-chan time.Time { return c.timer.C }

// add takes a delta (takes(it)). It reports merged when it is now part of
// the held update, and due when that update should be released now; when
// not merged (another block, or nothing held) the caller releases the held
// update, if any, and then calls hold(it).
func (c *coalescer) add(it item) (merged, due bool) {
	if !c.active || c.held.ev.Update.Type != it.ev.Update.Type || c.held.ev.Update.ContentIndex != it.ev.Update.ContentIndex {
		return false, false
	}
	it.ev.Update.Delta, c.merged = concat(c.held.ev.Update.Delta, it.ev.Update.Delta, c.merged)
	it.read, it.held = c.held.read, true // the latency of the oldest delta in the frame
	c.held = it
	return true, !time.Now().Before(c.due)
}

// hold starts holding it (a delta; nothing is held), due a window from now
// or at the back-off's end, whichever is later.
func (c *coalescer) hold(it item) {
	now := time.Now()
	due := now.Add(c.window)
	if gap := c.lastEnd.Add(time.Duration(c.lastSize/coalesceBudget) * c.window); gap.After(due) {
		due = gap
	}
	it.held = true
	c.held, c.active, c.due = it, true, due
	c.timer.Reset(due.Sub(now))
}

// take stops holding and returns the held update (holding() must be true).
// Its delta may view the coalescer's buffer: write it before the next add.
func (c *coalescer) take() item {
	c.active = false
	c.timer.Stop()
	it := c.held
	c.held = item{}
	if cap(c.merged) > mergedKept {
		c.merged = nil // a flood's: not kept for the bridge's life
	} else {
		c.merged = c.merged[:0] // reused by the next merge only, after it is written
	}
	return it
}

// wrote notes that a message_update frame of size bytes was just written
// (held or not): the back-off of the next held update counts from it.
func (c *coalescer) wrote(size int64) {
	if !c.backOff {
		return
	}
	c.lastEnd, c.lastSize = time.Now(), size
}

// isDelta reports whether ev is a message_update that only adds text to a
// block: the kind that is coalesced.
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
