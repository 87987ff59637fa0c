package claudecli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCaps: what CapsOf says of a transport before it is made is what the
// one New makes says (the bridge decides by it until the CLI's plan is
// made), and each transport has the funcs it documents.
func TestCaps(t *testing.T) {
	for _, name := range []string{TransportStream, TransportPipe, TransportPTY} {
		tr, err := New(name, Config{}, 0)
		if name == TransportPTY && !ptySupported {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, name)
		c := tr.Caps()
		assert.Equal(t, Caps{Persistent: c.Persistent, Steer: c.Steer, Control: c.Control}, CapsOf(name), "%s: the flags, no funcs", name)
		stream := name == TransportStream
		assert.Equal(t, stream, c.Persistent && c.Steer && c.Control, name)
		assert.Equal(t, stream, c.LiveInfo != nil && c.Rename != nil && c.Warm != nil && c.OnOwnTurn != nil, "%s: all or none", name)
		assert.Equal(t, stream, c.LiveInfo != nil || c.Rename != nil || c.Warm != nil || c.OnOwnTurn != nil, "%s: all or none", name)
		assert.Equal(t, !stream, c.Quiesce != nil, name)
	}
}
