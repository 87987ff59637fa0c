package bridge

import "time"

// SetTrace sets o's trace (see Options), for the external benchmarks.
func SetTrace(o *Options, trace func(read, written time.Time, held bool)) { o.trace = trace }

// The runner's methods check they run on its loop in every test here.
func init() { checkLoop = true }

// checkFrame checks one frame the bridge wrote against the protocol
// reference (the rig in run_test.go checks every frame with it). Package
// bridge/reference imports bridge, so only an external test file can hand
// it over: checkframe_test.go does, before any test runs.
var checkFrame func(frame []byte) error

// SetCheckFrame sets checkFrame, for checkframe_test.go.
func SetCheckFrame(check func(frame []byte) error) { checkFrame = check }
