package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGoroutines: wait waits for every goroutine started, those that
// running ones start while it waits among them; after it returned, a
// start is refused.
func TestGoroutines(t *testing.T) {
	var g goroutines
	release := make(chan struct{})
	var ran []string
	done := make(chan string, 2)
	assert.True(t, g.start(func() {
		<-release
		assert.True(t, g.start(func() { done <- "inner" }), "started by a running one while wait waits")
		done <- "outer"
	}))
	waited := make(chan struct{})
	go func() {
		g.wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("wait returned with one running")
	default:
	}
	close(release)
	<-waited
	close(done)
	for s := range done {
		ran = append(ran, s)
	}
	assert.ElementsMatch(t, []string{"outer", "inner"}, ran, "wait returned after both")
	assert.False(t, g.start(func() { t.Error("ran after wait") }), "refused once wait returned with none running")
}
