package claudecli

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCaps: what CapsOf says of a transport before it is made is what the
// one New makes says (the bridge decides by it until the CLI's plan is
// made), and each transport has the funcs it documents.
func TestCaps(t *testing.T) {
	for _, name := range Transports() {
		tr, err := New(name, Config{}, 0)
		if name == TransportPTY && !ptySupported {
			require.Error(t, err)
			assert.Equal(t, Caps{}, CapsOf(name), "%s: refused, can do nothing", name)
			continue
		}
		require.NoError(t, err, name)
		c := tr.Caps()
		assert.Equal(t, c.Flags(), CapsOf(name), "%s: the flags, no funcs", name)
		stream := name == TransportStream
		assert.Equal(t, stream, c.Persistent && c.Steer && c.Control, name)
		assert.Equal(t, stream, c.LiveInfo != nil && c.Rename != nil && c.Warm != nil && c.OnOwnTurn != nil, "%s: all or none", name)
		assert.Equal(t, stream, c.LiveInfo != nil || c.Rename != nil || c.Warm != nil || c.OnOwnTurn != nil, "%s: all or none", name)
		assert.Equal(t, !stream, c.Quiesce != nil, name)
	}
	assert.Equal(t, Caps{}, CapsOf("carrier-pigeon"))
	assert.Equal(t, TransportStream, Transports()[0], "the default first")
}

// TestCapsFlags: Flags keeps every field of Caps that is not a func and
// drops every func, so a field added to Caps is kept or dropped without
// Flags being told.
func TestCapsFlags(t *testing.T) {
	var full Caps
	v := reflect.ValueOf(&full).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
				panic("not called")
			}))
		default:
			t.Fatalf("Caps.%s is a %s: Flags and this test know bools and funcs", v.Type().Field(i).Name, f.Kind())
		}
	}
	flags := reflect.ValueOf(full.Flags())
	for i := range flags.NumField() {
		name, f := flags.Type().Field(i).Name, flags.Field(i)
		if f.Kind() == reflect.Func {
			assert.True(t, f.IsNil(), "Flags keeps the func %s", name)
		} else {
			assert.True(t, f.Bool(), "Flags drops the flag %s", name)
		}
	}
}
