package claudecli

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// readTurn reads a turn's lines up to its result (the caller decides when
// a turn is over).
func readTurn(t *testing.T, turn Turn) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	for {
		line, err := turn.Next()
		require.NoError(t, err)
		v := gjson.ParseBytes(append([]byte(nil), line...))
		out = append(out, v)
		if v.Get("type").String() == "result" {
			return out
		}
	}
}

func startOwnCLI(t *testing.T) (*stream, chan OwnTurn) {
	s := newStream(fake(t, "own"), 1<<20)
	t.Cleanup(func() { s.Close(time.Second) })
	offers := make(chan OwnTurn, 4)
	s.OnOwnTurn(func(o OwnTurn) { offers <- o })
	first, err := s.Turn(Session{ID: "s"}, UserLine("one", nil))
	require.NoError(t, err)
	lines := readTurn(t, first)
	assert.EqualValues(t, 1, lines[1].Get("turn").Int())
	first.Release()
	return s, offers
}

// TestStreamOwnTurnOffered: what the CLI prints while no turn is open
// comes as a turn of its own, offered at once, read like any turn once
// claimed.
func TestStreamOwnTurnOffered(t *testing.T) {
	s, offers := startOwnCLI(t)
	var own OwnTurn
	select {
	case own = <-offers:
	case <-time.After(5 * time.Second):
		t.Fatal("no turn of the CLI's own was offered")
	}
	require.True(t, own.Claim())
	assert.True(t, own.Claim(), "claiming again changes nothing")
	lines := readTurn(t, own)
	assert.True(t, lines[0].Get("own").Bool() && lines[1].Get("own").Bool(), "its lines")
	own.Release()
	_, err := own.Next()
	assert.Equal(t, io.EOF, err)
	// The next turn of the caller's is its own.
	next, err := s.Turn(Session{ID: "s"}, UserLine("two", nil))
	require.NoError(t, err)
	assert.EqualValues(t, 2, readTurn(t, next)[1].Get("turn").Int())
	next.Release()
}

// TestStreamOwnTurnTakenOver: a turn of the caller's started before the
// offer was claimed takes the CLI's own lines over (they come first in
// it); the offer can no longer be claimed.
func TestStreamOwnTurnTakenOver(t *testing.T) {
	s, offers := startOwnCLI(t)
	var own OwnTurn
	select {
	case own = <-offers:
	case <-time.After(5 * time.Second):
		t.Fatal("no turn of the CLI's own was offered")
	}
	next, err := s.Turn(Session{ID: "s"}, UserLine("two", nil))
	require.NoError(t, err)
	assert.False(t, own.Claim(), "taken over")
	lines := readTurn(t, next)
	assert.True(t, lines[0].Get("own").Bool(), "the CLI's own lines first: %v", lines)
	lines = readTurn(t, next)
	assert.EqualValues(t, 2, lines[1].Get("turn").Int(), "then the turn's own")
	next.Release()
}
