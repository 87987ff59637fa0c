package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSetMemoryLimit: without GOMEMLIMIT the limit is 12.5 MiB plus the
// profiler's table, which the runtime maps at start-up (at most 4 MiB
// more), and memory profiling is off; GOMEMLIMIT is left alone.
func TestSetMemoryLimit(t *testing.T) {
	rate, limit := runtime.MemProfileRate, debug.SetMemoryLimit(-1)
	t.Cleanup(func() { runtime.MemProfileRate = rate; debug.SetMemoryLimit(limit) })
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Setenv("GOMEMLIMIT", v)
		os.Unsetenv("GOMEMLIMIT")
	}
	// The profiler's table only grows, and tests running beside this one
	// may grow it while it runs: the limit counts it as it was at the call.
	before := profilerTable()
	base := setMemoryLimit()
	after := profilerTable()
	got := debug.SetMemoryLimit(-1)
	assert.Equal(t, base, got)
	assert.Equal(t, 0, runtime.MemProfileRate)
	assert.GreaterOrEqual(t, got, int64(defaultMemoryLimit))
	assert.LessOrEqual(t, got, int64(defaultMemoryLimit+4<<20))
	assert.GreaterOrEqual(t, got, int64(defaultMemoryLimit)+before)
	assert.LessOrEqual(t, got, int64(defaultMemoryLimit)+after)

	debug.SetMemoryLimit(123 << 20)
	t.Setenv("GOMEMLIMIT", "123MiB")
	assert.Zero(t, setMemoryLimit())
	assert.Equal(t, int64(123<<20), debug.SetMemoryLimit(-1), "GOMEMLIMIT is the runtime's")
}

// TestReleaseMemoryFollowsTheLiveHeap: after releaseMemory the limit is the base plus
// the heap still live, so it grows with what the bridge keeps (a session's
// messages) and comes back down when that is dropped; with base 0
// (GOMEMLIMIT) the limit is left alone.
func TestReleaseMemoryFollowsTheLiveHeap(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) })
	const base = 12 << 20
	debug.SetMemoryLimit(base)
	kept := make([]byte, 16<<20)
	releaseMemory(base)
	grown := debug.SetMemoryLimit(-1)
	assert.GreaterOrEqual(t, grown, int64(base+len(kept)), "the kept 16 MiB are above the base")
	runtime.KeepAlive(kept)

	releaseMemory(base)
	assert.Less(t, debug.SetMemoryLimit(-1), grown-8<<20, "the 16 MiB are no longer live")

	debug.SetMemoryLimit(99 << 20)
	releaseMemory(0)
	assert.Equal(t, int64(99<<20), debug.SetMemoryLimit(-1))
}
