package claudecli

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestQueryStopsWithContext: a Query whose CLI does not answer ends when
// its context does, with the context's cause, its process stopped.
func TestQueryStopsWithContext(t *testing.T) {
	stop := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(stop) })
	start := time.Now()
	_, err := Query(ctx, fake(t, "relay"), 30*time.Second) // relay echoes requests: no answer
	took := time.Since(start)
	assert.ErrorIs(t, err, stop)
	assert.Less(t, took, 300*time.Millisecond+stopGrace, "it waited for its timeout")

	err = RenameSession(ctx, fake(t, "relay"), Session{ID: "x", Exists: true}, "n", 30*time.Second)
	assert.ErrorIs(t, err, stop, "an ended context starts nothing")
}
