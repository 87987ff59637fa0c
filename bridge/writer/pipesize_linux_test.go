package writer

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLargeFramesGrowThePipe: on a pipe, the writer leaves the size alone
// for small frames, makes it bigPipe for a frame of growAt bytes or more,
// and gives it back its size once shrinkAfter has passed without one and
// the host has read what it held.
func TestLargeFramesGrowThePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = pr.Close(); _ = pw.Close() })
	size := func() int {
		n, err := unix.FcntlInt(pw.Fd(), unix.F_GETPIPE_SZ, 0)
		require.NoError(t, err)
		return n
	}
	base := size()
	require.Less(t, base, bigPipe)

	w := New(pw, Config{})
	w.sink.shrinkAfter = 200 * time.Millisecond
	read := make(chan int, 16)
	go func() {
		buf := make([]byte, 1<<20)
		n := 0
		for {
			k, err := pr.Read(buf)
			for _, b := range buf[:k] {
				if n++; b == '\n' {
					read <- n
					n = 0
				}
			}
			if err != nil {
				close(read)
				return
			}
		}
	}()

	w.Respond(okResponse(json.RawMessage(`"small"`), "get_state", map[string]string{"s": strings.Repeat("x", 1000)}))
	<-read
	assert.Equal(t, base, size(), "a small frame leaves the pipe alone")

	w.Respond(okResponse(json.RawMessage(`"large"`), "get_state", map[string]string{"s": strings.Repeat("x", growAt)}))
	assert.Greater(t, <-read, growAt)
	assert.Equal(t, bigPipe, size(), "grown for a large frame")

	assert.Eventually(t, func() bool { return size() == base }, 5*time.Second, 20*time.Millisecond,
		"back to its size after shrinkAfter")
	w.Close()
	_ = pw.Close()
	for range read {
	}
}

// TestPipeSizerNeedsAPipe: no sizer for what is not a pipe.
func TestPipeSizerNeedsAPipe(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, newPipeSizer(f))
	assert.Nil(t, newPipeSizer(io.Discard))
	_, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	assert.NotNil(t, newPipeSizer(pw))
}

// TestSinkSizesThePipe: the sink grows a pipe once a frame reaches growAt
// bytes, and gives it back its size only once the host has read what the
// pipe holds beyond it (shrink tries again a quarter of shrinkAfter later).
func TestSinkSizesThePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = pr.Close(); _ = pw.Close() })
	size := func() int {
		n, err := unix.FcntlInt(pw.Fd(), unix.F_GETPIPE_SZ, 0)
		require.NoError(t, err)
		return n
	}
	base := size()
	require.Less(t, base, bigPipe)
	s := newSink(pw, nil)
	require.NotNil(t, s.pipe)
	assert.Nil(t, s.shrinkC(), "not grown: no timer")

	s.startFrame()
	_, err = s.Write(make([]byte, base/2))
	require.NoError(t, err)
	assert.Equal(t, base, size(), "under growAt: left alone")
	s.n = growAt - 100 // as if the frame had come that far
	_, err = s.Write(make([]byte, 100))
	require.NoError(t, err)
	require.Equal(t, bigPipe, size(), "grown as the frame reaches growAt")
	_, err = s.Write(make([]byte, base)) // more than the old size: fits now
	require.NoError(t, err)
	s.endFrame()
	assert.NotNil(t, s.shrinkC(), "grown: a timer to give the size back")

	s.shrink()
	assert.Equal(t, bigPipe, size(), "the pipe holds more than its old size: not yet")
	assert.WithinDuration(t, time.Now().Add(shrinkAfter/4), s.nextShrink, 100*time.Millisecond, "tried again later")
	_, err = io.ReadFull(pr, make([]byte, base/2+100+base))
	require.NoError(t, err)
	s.shrink()
	assert.Equal(t, base, size(), "read: back to its size")
	assert.Nil(t, s.shrinkC())
}
