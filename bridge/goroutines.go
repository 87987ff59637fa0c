package bridge

import "sync"

// goroutines are the server's goroutines, which shutdown waits for
// (wait). Starting one is sound wherever it is asked, by construction:
// from one of them, the count is not zero and wait has not returned;
// before wait began, wait sees it. Only after wait began, from a goroutine
// that is not one of them (a timer, the transport's, the extension host's
// reader) and with none left running, is a start refused: the bridge is
// shutting down, and the caller does without (it says what it does).
type goroutines struct {
	mu      sync.Mutex
	n       int           // running
	waiting bool          // wait began
	none    chan struct{} // closed when n is 0 while waiting
}

// start runs f on a goroutine of the server's; false: refused (above),
// f does not run.
func (g *goroutines) start(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting && g.n == 0 {
		return false
	}
	g.n++
	go func() {
		defer g.done()
		f()
	}()
	return true
}

func (g *goroutines) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 && g.waiting {
		close(g.none)
	}
}

// wait returns once none runs; from then on every start is refused. Called
// once, by shutdown.
func (g *goroutines) wait() {
	g.mu.Lock()
	g.waiting, g.none = true, make(chan struct{})
	if g.n == 0 {
		close(g.none)
	}
	none := g.none
	g.mu.Unlock()
	<-none
}
