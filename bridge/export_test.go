package bridge

import "time"

// SetTrace sets o's trace (see Options), for the external benchmarks.
func SetTrace(o *Options, trace func(read, written time.Time, held bool)) { o.trace = trace }
