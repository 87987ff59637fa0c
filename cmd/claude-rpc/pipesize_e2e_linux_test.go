//go:build linux

package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pipeSize is the size of the bridge's stdout pipe, or -1.
func (b *rpcProc) pipeSize() int {
	rc, err := b.stdout.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	_ = rc.Control(func(fd uintptr) { n, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	return n
}

// TestStdoutPipeGrowsForALongReply: while a reply's frames pass 256 KiB
// (full mode: each update carries the message so far) the bridge's stdout
// pipe is 1 MiB; a second after, it has its size back. Small replies leave
// it alone.
func TestStdoutPipeGrowsForALongReply(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	base := b.pipeSize()
	require.Positive(t, base)
	require.Less(t, base, 1<<20)

	var largest atomic.Int64
	watch := func() (stop func()) {
		largest.Store(0)
		done := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				if n := int64(b.pipeSize()); n > largest.Load() {
					largest.Store(n)
				}
				select {
				case <-done:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		return func() { close(done); <-stopped }
	}

	stop := watch()
	frames := b.runPrompt("[[say:a short reply]]")
	stop()
	assert.Contains(t, frames[len(frames)-1].Raw, "a short reply")
	assert.Equal(t, int64(base), largest.Load(), "a short reply leaves the pipe alone")

	stop = watch()
	frames = b.runPrompt("[[huge:400000]][[chunk:100]]")
	stop()
	require.Equal(t, "agent_end", frames[len(frames)-1].Get("type").String())
	assert.Equal(t, int64(1<<20), largest.Load(), "grown while the long reply's frames went out")
	assert.Eventually(t, func() bool { return b.pipeSize() == base }, 10*time.Second, 50*time.Millisecond,
		"its size back after the reply")
}
