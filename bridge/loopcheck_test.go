package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunnerChecksItsLoop: a method marked "On the loop." panics when
// called from another goroutine (the check is on in these tests), and
// runs when called on the loop.
func TestRunnerChecksItsLoop(t *testing.T) {
	o := newRunner(&server{})
	go o.loop()
	defer o.close()
	for name, f := range map[string]func(){
		"idle":         o.idle,
		"queueChanged": o.queueChanged,
		"newRun":       func() { o.newRun() },
	} {
		assert.PanicsWithValue(t, errOffLoop, f, "%s off the loop", name)
	}
	var recovered any
	o.do(func() {
		defer func() { recovered = recover() }()
		o.idle()
	})
	assert.Nil(t, recovered, "idle on the loop")
}
