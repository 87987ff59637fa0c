package writer

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/transform"
)

// replyEnd is the events that end the recorded 2 MB reply: from its text
// block's end (text_end) to agent_end, each of the last four carrying the
// whole text.
func replyEnd(b *testing.B) []transform.Event {
	b.Helper()
	t := &testing.T{}
	evs := recorded(t, "huge-reply")
	if t.Failed() {
		b.Fatal("huge-reply: no recording")
	}
	for i := range evs {
		if evs[i].Type == transform.EventMessageUpdate && evs[i].Update.Type == transform.TextEnd {
			return evs[i:]
		}
	}
	b.Fatal("huge-reply: no text_end")
	return nil
}

// marked signals on marks, with the bytes written since the last signal,
// each time a write ends with the marker frame "{}\n".
type marked struct {
	n     int
	marks chan int
}

func (m *marked) Write(p []byte) (int, error) {
	m.n += len(p)
	if bytes.HasSuffix(p, []byte("{}\n")) {
		m.marks <- m.n
		m.n = 0
	}
	return len(p), nil
}

// BenchmarkReplyEnd writes the frames that end a 2 MB reply (text_end,
// message_end, turn_end, agent_end: ~12 MB with message_update's message
// and partial in --message-updates full, ~8 MB in delta) through the frame writer, then a
// response, and times until the response is out: what a get_state sent as
// the reply ends waits at most. "discard" writes to memory (the encoding
// alone); "pipe" to an os.Pipe read as a host reads it (bufio, 1 MiB).
// MB/s counts the frames' bytes.
//
//	go test -run '^$' -bench ReplyEnd -benchmem ./bridge
func BenchmarkReplyEnd(b *testing.B) {
	evs := replyEnd(b)
	for _, mode := range []string{"full", "delta"} {
		b.Run(mode+"/discard", func(b *testing.B) {
			m := &marked{marks: make(chan int, 1)}
			timeReplyEnd(b, evs, m, m.marks, mode)
		})
		b.Run(mode+"/pipe", func(b *testing.B) {
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			marks := make(chan int, 1)
			go func() {
				r := bufio.NewReaderSize(pr, 1<<20)
				n := 0
				for {
					line, err := r.ReadSlice('\n')
					n += len(line)
					if err == bufio.ErrBufferFull {
						continue
					}
					if err != nil {
						return
					}
					if string(line) == "{}\n" {
						marks <- n
						n = 0
					}
				}
			}()
			timeReplyEnd(b, evs, pw, marks, mode)
		})
	}
}

// timeReplyEnd writes evs and a response through a frame writer on out
// once per iteration; marks says when the response is out, and the bytes
// written.
func timeReplyEnd(b *testing.B, evs []transform.Event, out io.Writer, marks <-chan int, mode string) {
	w := New(out, Config{Delta: mode == "delta"})
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		w.Events(evs)
		w.Send(struct{}{})
		b.SetBytes(int64(<-marks))
		lat = append(lat, time.Since(start))
	}
	w.Close()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/reply-end")
}
