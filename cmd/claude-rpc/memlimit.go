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
// The limit is soft (a run that needs more gets it, at the cost of more
// collections), and it is the room above what stays live between runs:
// releaseMemory moves it with the session's history each time the bridge
// goes idle. What it guarantees is the bound on a long reply's short-lived
// buffers (its text as it grows, the CLI's assistant and result lines, each
// as long as the reply), which the Go default alone (a heap growing to
// twice the live set) lets push the relay's peak RSS past its 20 MiB goal
// (BenchmarkRelay, scripts/bench, checks it).
//
// Its size is what a 2 MB reply needs near its end: the heap (the text,
// the CLI's assistant line being read, its output spooled) and the
// runtime's own (metadata, stacks, spans' unused room) (docs/performance.md,
// 'Figures behind the code'); with less room than that the GC runs back to
// back for the rest of the reply, and get_state answers behind it.
const defaultMemoryLimit = 25 << 19

// memoryLimit is the soft memory limit main set before anything else ran
// (setMemoryLimit), for releaseMemory to raise: 0 when GOMEMLIMIT is in
// effect, and in tests, which run the bridge through run.
var memoryLimit int64

// setMemoryLimit turns memory profiling off and applies defaultMemoryLimit
// unless GOMEMLIMIT is set. It returns the limit it set: 0 when GOMEMLIMIT
// is in effect.
//
// Nothing reads the bridge's memory profile. The runtime's first sample,
// taken during start-up before main runs, has already mapped the
// profiler's hash table; it stays mapped, and the limit
// counts it, though it stays out of RSS once MemProfileRate = 0 stops
// further samples touching it. So the limit is defaultMemoryLimit plus the
// table (profilerTable): the heap gets the room defaultMemoryLimit is
// sized for.
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
// alone, a bridge idle after a turn stays above one that never ran (its
// background scavenger only returns memory well over the heap goal;
// docs/performance.md, 'Figures behind the code'). The collection costs a few milliseconds of CPU once per run,
// after it; a prompt that comes within releaseDelay (a host prompting on
// agent_end) resets nothing: the timer fires during that run, which only
// means one more collection.
//
// The limit moves because the session's messages stay in the heap (the
// bridge answers get_messages, get_entries and the rest from them), about
// as much as each reply's text. A fixed limit would leave less room each reply,
// until the GC ran back to back; following the live heap, every run of a
// long session gets the room the first one had.
func releaseMemory(base int64) {
	debug.FreeOSMemory()
	if base > 0 {
		// The heap the collection just made found live.
		debug.SetMemoryLimit(base + bytesMetric("/gc/heap/live:bytes"))
	}
}
