package extensions

import (
	"context"
	"sync"
	"time"
)

// queue holds what the extensions asked without waiting (API calls,
// ctx.ui's notices), in the order asked; one goroutine at a time (started
// by push, ending when the queue is empty) carries them out. settle waits
// for what was asked before it: pi carries such calls out before the
// handler that made them returns, so the bridge settles the queue after
// an awaited handler (input, a command, agent_end) before it goes on.
// Its mutex is taken only in its methods, for short sections that call
// nothing.
type queue struct {
	start func(func()) bool // starts the goroutine (Session.Go)

	mu      sync.Mutex
	q       []func()
	running bool
	pushed  uint64 // how many were ever pushed
	done    uint64 // how many of them were carried out (or dropped)
	waiters []actionWaiter
}

// settleWait bounds how long settle waits for the queue.
const settleWait = 5 * time.Second

// actionWaiter is a settle waiting until done reaches upTo.
type actionWaiter struct {
	upTo uint64
	ch   chan struct{}
}

// push queues f and starts the queue's goroutine unless it runs. Never
// blocks (the host's reader calls it).
func (q *queue) push(f func()) {
	q.mu.Lock()
	q.q = append(q.q, f)
	q.pushed++
	if q.running {
		q.mu.Unlock()
		return
	}
	q.running = true
	q.mu.Unlock()
	if !q.start(func() {
		for {
			q.mu.Lock()
			if len(q.q) == 0 {
				q.running = false
				q.mu.Unlock()
				return
			}
			f := q.q[0]
			q.q = q.q[1:]
			q.mu.Unlock()
			f()
			q.carried(1)
		}
	}) {
		q.mu.Lock()
		n := len(q.q)
		q.q, q.running = nil, false // shutting down
		q.mu.Unlock()
		q.carried(uint64(n))
	}
}

// carried counts n more as carried out and releases the settles they
// waited for.
func (q *queue) carried(n uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done += n
	kept := q.waiters[:0]
	for _, w := range q.waiters {
		if w.upTo <= q.done {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	q.waiters = kept
}

// settle returns once everything pushed before it was carried out, ctx
// ends, or settleWait passed (a compact the extension did not wait for
// runs on; pi does not wait for it either). It must not be called from
// the queue's own goroutine.
func (q *queue) settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	q.mu.Lock()
	if q.done >= q.pushed {
		q.mu.Unlock()
		return
	}
	w := actionWaiter{upTo: q.pushed, ch: make(chan struct{})}
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()
	select {
	case <-w.ch:
	case <-ctx.Done():
	}
}
