package writer

import "github.com/claude-rpc/claude-rpc/transform"

// orderQueue is the frame writer's first stage: the items queued by the
// bridge's goroutines (ch), in the order they were queued, except that a
// response may overtake message_update events.
//
// In full mode every message_update carries the whole message so far (a 2
// MB reply's last update and its text_end are 4 and 6 MB), which a host's
// get_state would otherwise wait behind. So overtake hands over, ahead of
// the update the writer is about to write, every queued response that has
// only message_update events ahead of it. A response never passes another
// kind of event (message_end, agent_end, a tool event), another frame the
// bridge made (agent_settled, a request to the host, another response), nor
// a filter change; the other items never change order.
//
// Owned by the writer goroutine; nothing in it blocks.
type orderQueue struct {
	ch <-chan item
	// pending holds the items taken off ch ahead of their turn (overtake),
	// handed out before anything still in ch.
	pending   []item
	responses int  // responses in pending
	closed    bool // ch was found closed: nothing more comes
}

// take returns the next item without waiting: the oldest pending one, else
// one from ch. It returns false when there is none at once (closed tells
// whether one may come later).
func (q *orderQueue) take() (item, bool) {
	if len(q.pending) > 0 {
		it := q.pending[0]
		if q.pending = q.pending[1:]; len(q.pending) == 0 {
			q.pending = nil // the array goes with its events
		}
		if it.response {
			q.responses--
		}
		return it, true
	}
	if q.closed {
		return item{}, false
	}
	select {
	case it, ok := <-q.ch:
		if !ok {
			q.closed = true
		}
		return it, ok
	default:
		return item{}, false
	}
}

// overtake calls write, in order, with each response that has only
// message_update events ahead of it, first taking into pending what ch
// holds at once (up to its capacity). The caller must hold no item but a
// message_update (which is what the responses overtake).
func (q *orderQueue) overtake(write func(*item)) {
drain:
	for len(q.pending) < cap(q.ch) && !q.closed {
		select {
		case it, ok := <-q.ch:
			if !ok {
				q.closed = true
				break drain
			}
			q.pending = append(q.pending, it)
			if it.response {
				q.responses++
			}
		default:
			break drain
		}
	}
	for i := 0; i < len(q.pending) && q.responses > 0; {
		switch p := &q.pending[i]; {
		case p.response:
			write(p)
			q.responses--
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
		case isUpdate(p):
			i++
		default:
			return
		}
	}
}

// isUpdate reports whether it is a message_update event.
func isUpdate(it *item) bool {
	return it.frame == nil && it.filter == nil && it.ev.Type == transform.EventMessageUpdate
}
