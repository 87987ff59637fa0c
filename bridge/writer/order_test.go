package writer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/claude-rpc/claude-rpc/transform"
)

// orderItem makes an item from a code: u1 a message_update, e1 another
// event (message_end), r1 a response, f1 another frame the bridge made
// (agent_settled), F1 a filter change; the digits name it.
func orderItem(code string) item {
	name := []byte(code)
	switch code[0] {
	case 'u':
		return item{ev: transform.Event{Type: transform.EventMessageUpdate, ToolCallID: code}}
	case 'e':
		return item{ev: transform.Event{Type: transform.EventMessageEnd, ToolCallID: code}}
	case 'r':
		return item{frame: name, response: true}
	case 'f':
		return item{frame: name}
	case 'F':
		return item{filter: map[string]bool{code: true}}
	}
	panic(code)
}

// orderCode is orderItem's inverse.
func orderCode(it *item) string {
	switch {
	case it.filter != nil:
		for k := range it.filter {
			return k
		}
	case it.frame != nil:
		return string(it.frame)
	}
	return it.ev.ToolCallID
}

// TestOrderQueueOvertake: overtake hands over, in order, the responses
// that have only message_updates ahead of them; everything else, and what
// take returns after, keeps the order it was queued in.
func TestOrderQueueOvertake(t *testing.T) {
	for _, tc := range []struct {
		queued    string // the items in ch, in order
		overtaken string // what overtake writes
		rest      string // what take returns after, in order
	}{
		{"", "", ""},
		{"u1 u2", "", "u1 u2"},
		{"u1 u2 r1", "r1", "u1 u2"},
		{"r1 u1 r2 u2", "r1 r2", "u1 u2"},
		{"u1 r1 e1 r2", "r1", "u1 e1 r2"},                         // never past another event
		{"u1 f1 r1", "", "u1 f1 r1"},                              // nor past a frame the bridge made
		{"u1 r1 f1 r2 u2", "r1", "u1 f1 r2 u2"},                   // nor past a frame the bridge made
		{"u1 F1 r1", "", "u1 F1 r1"},                              // nor past a filter change
		{"e1 r1", "", "e1 r1"},                                    // only updates are overtaken
		{"f1 r1 u1", "", "f1 r1 u1"},                              // nor another frame the bridge made
		{"u1 r1 r2 u2 r3 e1 u3 r4", "r1 r2 r3", "u1 u2 e1 u3 r4"}, // the responses keep their order
	} {
		t.Run(tc.queued, func(t *testing.T) {
			ch := make(chan item, 16)
			for _, c := range strings.Fields(tc.queued) {
				ch <- orderItem(c)
			}
			q := orderQueue{ch: ch}
			overtaken, rest := []string{}, []string{}
			q.overtake(func(it *item) { overtaken = append(overtaken, orderCode(it)) })
			for {
				it, ok := q.take()
				if !ok {
					break
				}
				rest = append(rest, orderCode(&it))
			}
			assert.Equal(t, strings.Fields(tc.overtaken), overtaken, "overtaken")
			assert.Equal(t, strings.Fields(tc.rest), rest, "the rest, in order")
			assert.Zero(t, q.responses)
			assert.False(t, q.closed)
		})
	}
}

// TestOrderQueueTake: take hands out pending items before what is still in
// ch, returns false at once when there is nothing, and says when ch is
// closed; overtake takes no more than ch's capacity ahead of its turn.
func TestOrderQueueTake(t *testing.T) {
	ch := make(chan item, 2)
	q := orderQueue{ch: ch}
	_, ok := q.take()
	assert.False(t, ok, "nothing queued: no waiting")
	assert.False(t, q.closed)

	ch <- orderItem("u1")
	ch <- orderItem("u2")
	q.overtake(func(*item) { t.Fatal("no response to overtake") })
	assert.Len(t, q.pending, 2)
	ch <- orderItem("r1")
	q.overtake(func(*item) { t.Fatal("pending is full: r1 waits in ch") })
	var got []string
	for range 3 {
		it, ok := q.take()
		assert.True(t, ok)
		got = append(got, orderCode(&it))
	}
	assert.Equal(t, []string{"u1", "u2", "r1"}, got, "pending first, then ch")
	assert.Nil(t, q.pending, "the array goes with its items")

	ch <- orderItem("r2")
	close(ch)
	q.overtake(func(it *item) { got = append(got, orderCode(it)) })
	assert.True(t, q.closed)
	assert.Equal(t, []string{"u1", "u2", "r1", "r2"}, got)
	_, ok = q.take()
	assert.False(t, ok)
}
