package transform

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	OnUnknownEvent = panicOnUnknownEvent
	os.Exit(m.Run())
}

// panicOnUnknownEvent is the tests' OnUnknownEvent: an event type without
// its encoding fails the test that made it.
func panicOnUnknownEvent(typ string) {
	panic(fmt.Sprintf("transform: event type %q has no encoding (its case in Encoder.event and Event.MarshalJSON)", typ))
}
