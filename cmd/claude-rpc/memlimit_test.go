package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSetMemoryLimit: without GOMEMLIMIT the limit is 10 MiB plus the
// profiler's table, which the runtime maps at start-up (at most 4 MiB
// more), and memory profiling is off; GOMEMLIMIT is left alone.
func TestSetMemoryLimit(t *testing.T) {
	rate, limit := runtime.MemProfileRate, debug.SetMemoryLimit(-1)
	t.Cleanup(func() { runtime.MemProfileRate = rate; debug.SetMemoryLimit(limit) })
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Setenv("GOMEMLIMIT", v)
		os.Unsetenv("GOMEMLIMIT")
	}
	setMemoryLimit()
	got := debug.SetMemoryLimit(-1)
	assert.Equal(t, 0, runtime.MemProfileRate)
	assert.GreaterOrEqual(t, got, int64(defaultMemoryLimit))
	assert.LessOrEqual(t, got, int64(defaultMemoryLimit+4<<20))
	assert.Equal(t, int64(defaultMemoryLimit)+profilerTable(), got)

	debug.SetMemoryLimit(123 << 20)
	t.Setenv("GOMEMLIMIT", "123MiB")
	setMemoryLimit()
	assert.Equal(t, int64(123<<20), debug.SetMemoryLimit(-1), "GOMEMLIMIT is the runtime's")
}
