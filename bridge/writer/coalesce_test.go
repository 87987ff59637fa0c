package writer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/transform"
)

// deltaItem is a message_update of type typ on block index adding delta.
func deltaItem(typ string, index int, delta string) item {
	return item{ev: transform.Event{Type: transform.EventMessageUpdate,
		Update: transform.AssistantEvent{Type: typ, ContentIndex: index, Delta: delta}}}
}

// TestCoalescerTakes: only deltas are held, and only with a window.
func TestCoalescerTakes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		it     item
		window time.Duration
		takes  bool
	}{
		{"text_delta", deltaItem(transform.TextDelta, 0, "a"), time.Second, true},
		{"thinking_delta", deltaItem(transform.ThinkingDelta, 0, "a"), time.Second, true},
		{"toolcall_delta", deltaItem(transform.ToolcallDelta, 0, "a"), time.Second, true},
		{"no window", deltaItem(transform.TextDelta, 0, "a"), 0, false},
		{"text_end", deltaItem(transform.TextEnd, 0, ""), time.Second, false},
		{"text_start", deltaItem(transform.TextStart, 0, ""), time.Second, false},
		{"message_end", item{ev: transform.Event{Type: transform.EventMessageEnd}}, time.Second, false},
		{"a response", item{frame: []byte(`{"type":"response"}`), response: true}, time.Second, false},
		{"a filter", item{filter: map[string]bool{}}, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.takes, newCoalescer(tc.window, true).takes(&tc.it))
		})
	}
}

// TestCoalescerMerges: deltas of the held block merge into it (their
// concatenation, the latest event's other fields, the oldest read time,
// marked held); a delta of another block or type is not merged.
func TestCoalescerMerges(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, tc := range []struct {
		name   string
		adds   []item
		merged []bool // add's answer for adds[1:]
		delta  string // the held update's delta at the end
	}{
		{"one block", []item{deltaItem(transform.TextDelta, 0, "Hel"), deltaItem(transform.TextDelta, 0, "lo"), deltaItem(transform.TextDelta, 0, ", world")},
			[]bool{true, true}, "Hello, world"},
		{"another block", []item{deltaItem(transform.TextDelta, 0, "a"), deltaItem(transform.TextDelta, 1, "b")},
			[]bool{false}, "a"},
		{"another type", []item{deltaItem(transform.ThinkingDelta, 0, "a"), deltaItem(transform.TextDelta, 0, "b")},
			[]bool{false}, "a"},
		{"unicode", []item{deltaItem(transform.TextDelta, 2, "héllo "), deltaItem(transform.TextDelta, 2, "wörld 😀")},
			[]bool{true}, "héllo wörld 😀"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoalescer(time.Hour, true)
			first := tc.adds[0]
			first.read = t0
			merged, _ := c.add(first)
			require.False(t, merged, "nothing held yet")
			c.hold(first)
			require.True(t, c.holding())
			for i, it := range tc.adds[1:] {
				it.read = t0.Add(time.Duration(i+1) * time.Second)
				merged, due := c.add(it)
				assert.Equal(t, tc.merged[i], merged, "add %d", i+1)
				assert.False(t, due, "within the window")
			}
			got := c.take()
			assert.False(t, c.holding())
			assert.Equal(t, tc.delta, got.ev.Update.Delta)
			assert.True(t, got.held)
			assert.Equal(t, t0, got.read, "the oldest delta's read time")
			last := tc.adds[len(tc.adds)-1]
			if tc.merged[len(tc.merged)-1] {
				assert.Equal(t, last.ev.Update.ContentIndex, got.ev.Update.ContentIndex)
			}
		})
	}
}

// TestCoalescerDue: a held update is due a window after it was first
// held, or later by the back-off after a large update (B/coalesceBudget
// windows after it was written); a merge past the due time reports it
// due; the timer fires then.
func TestCoalescerDue(t *testing.T) {
	const window = 10 * time.Millisecond
	for _, tc := range []struct {
		name     string
		lastSize int64 // the size of the update written just before, 0: none
		delta    bool  // delta mode: no back-off
		wait     time.Duration
	}{
		{"no update before", 0, false, window},
		{"a small update before", coalesceBudget - 1, false, window},
		{"a large update before", 20 * coalesceBudget, false, 20 * window},
		{"a large update before, delta mode", 20 * coalesceBudget, true, window},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoalescer(window, !tc.delta)
			if tc.lastSize > 0 {
				c.wrote(tc.lastSize)
			}
			start := time.Now()
			c.hold(deltaItem(transform.TextDelta, 0, "a"))
			assert.WithinDuration(t, start.Add(tc.wait), c.due, window/2)
			<-c.C()
			assert.GreaterOrEqual(t, time.Since(start), tc.wait*9/10, "the timer fires when due")
			merged, due := c.add(deltaItem(transform.TextDelta, 0, "b"))
			assert.True(t, merged)
			assert.True(t, due, "past the window: due at once")
			assert.Equal(t, "ab", c.take().ev.Update.Delta)
		})
	}
}

// TestCoalescerTakeStopsTheTimer: a released update's timer delivers
// nothing later.
func TestCoalescerTakeStopsTheTimer(t *testing.T) {
	c := newCoalescer(time.Millisecond, true)
	c.hold(deltaItem(transform.TextDelta, 0, "a"))
	c.take()
	select {
	case <-c.C():
		t.Fatal("a stopped timer fired")
	case <-time.After(20 * time.Millisecond):
	}
}

// TestCoalescerKeepsNoLargeBuffer: the merge buffer of a held update is
// reused after it is taken, unless a flood made it large: then it goes
// with the update, whose delta it still holds.
func TestCoalescerKeepsNoLargeBuffer(t *testing.T) {
	c := newCoalescer(time.Hour, false)
	c.hold(deltaItem(transform.TextDelta, 0, "a"))
	c.add(deltaItem(transform.TextDelta, 0, "b"))
	assert.Equal(t, "ab", c.take().ev.Update.Delta)
	assert.NotNil(t, c.merged, "a small buffer is kept")
	big := strings.Repeat("x", mergedKept)
	c.hold(deltaItem(transform.TextDelta, 0, "a"))
	c.add(deltaItem(transform.TextDelta, 0, big))
	it := c.take()
	assert.Nil(t, c.merged, "a large one is not")
	assert.Equal(t, "a"+big, it.ev.Update.Delta)
}

// TestConcat: concat appends in place when a is what it returned last,
// and copies a otherwise.
func TestConcat(t *testing.T) {
	s, buf := concat("ab", "cd", make([]byte, 0, 16))
	assert.Equal(t, "abcd", s)
	s2, buf2 := concat(s, "ef", buf)
	assert.Equal(t, "abcdef", s2)
	assert.Same(t, &buf[0], &buf2[0], "appended in place")
	s3, _ := concat("xy", "z", buf2[:0])
	assert.Equal(t, "xyz", s3)
}
