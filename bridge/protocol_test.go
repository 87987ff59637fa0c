package bridge

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFramesCoverCommands: Frames describes a response for every command of
// the table that answers with one of its own, in the table's order and
// with its data's type, and none for the host's answers to the bridge's
// requests (package bridge/reference checks the reference has exactly
// these).
func TestFramesCoverCommands(t *testing.T) {
	f := Frames()
	var want, got []string
	for _, c := range commandTable {
		if c.answers() {
			want = append(want, c.name)
		}
	}
	for _, r := range f.Responses {
		got = append(got, r.Command)
		c := commandsByName[r.Command]
		if assert.NotNil(t, c, r.Command) {
			assert.Equal(t, reflect.TypeOf(c.data), r.Data, r.Command)
		}
	}
	assert.Equal(t, want, got)
	assert.NotContains(t, got, "extension_ui_response")
	assert.Equal(t, reflect.TypeFor[response](), f.Envelope)
}
