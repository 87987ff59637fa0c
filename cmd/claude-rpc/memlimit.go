package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// defaultMemoryLimit is the soft memory limit the bridge runs with unless
// GOMEMLIMIT says otherwise (GOMEMLIMIT=off: none).
//
// The bridge's live memory is small: the session's messages and the reply
// being relayed. With the Go default alone the heap grows to twice the live
// set before a collection, and a long reply makes large, short-lived
// buffers (its text as it grows, the CLI's 2 MB assistant and result
// lines): measured relaying a 2 MB reply, a peak RSS of 28 MiB, against
// 19.6 MiB with a 10 MiB limit (scripts/bench, BenchmarkRelay). The limit
// is soft, and it is the room above what stays live between runs: it moves
// with the session's history each time the bridge goes idle (releaseMemory).
//
// 12.5 MiB, not 10: near the end of a 2 MB reply the heap holds ~5 MB
// (the text, the CLI's assistant line being read, its output spooled) and
// the runtime ~7 more (metadata, stacks, spans' unused room), so under 10
// MiB the GC ran back to back from the middle of the reply on. Relaying
// 2 MB replies in 10-byte deltas with get_state every 20 ms (F4), per
// reply, three in one session (before the limit followed the history):
// ~1,200-1,500 collections at 10 MiB, 300-500 at 12.5, ~20 at 18; the
// bridge's CPU 3.3-3.6 s, 2.9-3.2 s, 2.7 s; the slowest get_state of a
// reply up to 29 ms, 14 ms, 11 ms. BenchmarkRelay's peak RSS: 18.27
// MiB at 10, 18.86 at 12.5, 20.22 at 16 (over the relay's 20 MiB goal).
const defaultMemoryLimit = 25 << 19

// memoryLimit is the soft memory limit main set before anything else ran
// (setMemoryLimit), for releaseMemory to raise: 0 when GOMEMLIMIT is in
// effect, and in tests, which run the bridge through run.
var memoryLimit int64

// setMemoryLimit turns memory profiling off and applies defaultMemoryLimit
// unless GOMEMLIMIT is set. It returns the limit it set: 0 when GOMEMLIMIT
// is in effect.
//
// The runtime profiles allocations by default, and its first sample, taken
// during start-up, maps the profiler's 1.4 MB hash table. Nothing reads the
// bridge's memory profile. The table stays mapped, so the limit counts it,
// though it stays out of RSS: the pages are touched only by further
// samples, which MemProfileRate = 0 stops. Counted, it left the heap so
// little room under 10 MiB while a long reply streams (the rest being the
// runtime's own metadata, stacks and free pages) that the GC ran back to
// back: 895 collections relaying a 2 MB reply, against 132 with the limit
// raised by the table's size, which is what the limit does now.
func setMemoryLimit() int64 {
	runtime.MemProfileRate = 0
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0
	}
	base := defaultMemoryLimit + profilerTable()
	debug.SetMemoryLimit(base)
	return base
}

// profilerTable is the memory the runtime mapped for its profiles' hash
// table: 0 when it made none.
func profilerTable() int64 {
	return min(bytesMetric("/memory/classes/profiling/buckets:bytes"), 4<<20)
}

// bytesMetric reads a runtime/metrics figure in bytes: 0 when the runtime
// has no such metric.
func bytesMetric(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// releaseDelay is how long the bridge stays idle after a run before it
// gives its free heap back to the OS (releaseWhenIdle).
const releaseDelay = 200 * time.Millisecond

// releaseWhenIdle returns a bridge.Options.Idle that, once the bridge has
// been idle for releaseDelay, calls releaseMemory(base).
func releaseWhenIdle(base int64) func() {
	t := time.AfterFunc(time.Hour, func() { releaseMemory(base) })
	t.Stop()
	return func() { t.Reset(releaseDelay) }
}

// releaseMemory runs debug.FreeOSMemory (a collection, then every free
// page of the heap returned to the OS) and, when base is the limit
// setMemoryLimit set, moves the limit to base plus the heap still live:
// the room the GC has above what the bridge keeps stays the same as the
// session grows.
//
// A run grows the heap (the reply as it streams, the CLI's lines, the
// frames), and the Go runtime keeps what it freed for the next run: left
// alone, a bridge idle after a turn stays ~1.3 MiB above one that never
// ran (its background scavenger only returns memory beyond ~10% over the
// heap goal). The collection costs a few milliseconds of CPU once per run,
// after it; a prompt that comes within releaseDelay (a host prompting on
// agent_end) resets nothing: the timer fires during that run, which only
// means one more collection.
//
// The limit moves because the session's messages stay in the heap (the
// bridge answers get_messages, get_entries and the rest from them): each 2
// MB reply keeps ~2 MB. Under a fixed 12.5 MiB, four 2 MB replies in one
// session (10-byte deltas, get_state every 20 ms) made 32, 58, 1,466 and
// ~2,700 collections, the bridge's CPU per reply 2.9, 3.2, 3.9, 5.1 s and
// the slowest get_state 9, 8, 27, 22 ms; with the limit following the
// live heap, 78 collections in all, ~3.0 s each, the slowest 10, 10, 23,
// 6 ms.
func releaseMemory(base int64) {
	debug.FreeOSMemory()
	if base > 0 {
		// The heap the collection just made found live.
		debug.SetMemoryLimit(base + bytesMetric("/gc/heap/live:bytes"))
	}
}
