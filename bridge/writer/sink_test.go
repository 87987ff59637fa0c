package writer

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSinkWrites: the sink writes what it is given as it is, counts a
// frame's bytes, and keeps a grown pipe grown for shrinkAfter after a
// frame of growAt bytes or more (and only then).
func TestSinkWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []int // the frame's writes, in bytes
		large  bool
	}{
		{"small", []int{100}, false},
		{"just under", []int{growAt - 1}, false},
		{"large", []int{growAt}, true},
		{"large in pieces", []int{growAt / 2, growAt / 2}, true},
		{"no frame", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newSink(&out, nil)
			s.startFrame()
			want := 0
			for _, n := range tc.writes {
				k, err := s.Write(bytes.Repeat([]byte("x"), n))
				require.NoError(t, err)
				assert.Equal(t, n, k)
				want += n
			}
			before := time.Now()
			s.endFrame()
			assert.Equal(t, want, out.Len(), "written as is")
			assert.Equal(t, want, s.n)
			if tc.large {
				assert.WithinDuration(t, before.Add(shrinkAfter), s.nextShrink, 100*time.Millisecond)
			} else {
				assert.True(t, s.nextShrink.IsZero(), "a small frame does not keep the pipe grown")
			}
			assert.Nil(t, s.shrinkC(), "not a pipe: nothing to shrink")
		})
	}
}

// TestSinkTrace: each frame noted with a read time is reported once, at
// the next flushed, with its read time and held flag; frames with no read
// time, and everything without a trace, are not.
func TestSinkTrace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type report struct {
		read time.Time
		held bool
	}
	for _, tc := range []struct {
		name  string
		notes []report
		want  []report
	}{
		{"none", nil, nil},
		{"two", []report{{t0, false}, {t0.Add(time.Second), true}}, []report{{t0, false}, {t0.Add(time.Second), true}}},
		{"no read time", []report{{time.Time{}, false}, {t0, true}}, []report{{t0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []report
			var written time.Time
			s := newSink(&bytes.Buffer{}, func(read, w time.Time, held bool) {
				got = append(got, report{read, held})
				written = w
			})
			for _, n := range tc.notes {
				s.note(n.read, n.held)
			}
			assert.Empty(t, got, "reported at the flush, not before")
			before := time.Now()
			s.flushed()
			assert.Equal(t, tc.want, got)
			if len(got) > 0 {
				assert.False(t, written.Before(before), "the time of the flush")
			}
			got = nil
			s.flushed()
			assert.Empty(t, got, "reported once")
		})
	}
	s := newSink(&bytes.Buffer{}, nil)
	s.note(t0, false)
	s.flushed()
	assert.Empty(t, s.traced, "no trace: nothing noted")
}

// TestSinkWriteError: a failed write is returned as it is.
func TestSinkWriteError(t *testing.T) {
	s := newSink(failingWriter{}, nil)
	_, err := s.Write([]byte("x\n"))
	assert.ErrorIs(t, err, errHostGone)
	assert.ErrorIs(t, s.writeUncounted([]byte("x\n")), errHostGone)
}

var errHostGone = errors.New("host gone")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errHostGone }
