package bridge

import "time"

// SetTrace sets o's trace (see Options), for the external benchmarks.
func SetTrace(o *Options, trace func(read, written time.Time, held bool)) { o.trace = trace }

// The runner's methods check they run on its loop in every test here.
func init() { checkLoop = true }
