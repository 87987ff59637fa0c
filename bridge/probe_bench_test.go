package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// tenByteReply is the recorded 2 MB reply (huge-reply) with its text
// streamed in 10-byte deltas, as BenchmarkGetStateDuringReply's fake API
// sends it (cmd/claude-rpc, F4): its first lines, 200,000 delta lines, and
// its last lines (the assistant line, content_block_stop, message_delta,
// message_stop, the result).
func tenByteReply(b *testing.B) [][]byte {
	b.Helper()
	rec, err := claudetest.LoadRecording("..", "huge-reply")
	if err != nil {
		b.Fatal(err)
	}
	text := fakeapi.HugeText(2_000_000)
	if gjson.GetBytes(rec.Lines[len(rec.Lines)-5], "message.content.0.text").String() != text {
		b.Fatal("huge-reply: not the text of HugeText(2,000,000)")
	}
	tmpl := rec.Lines[4]
	i := bytes.Index(tmpl, []byte(`"text":"`)) + len(`"text":`)
	j := i + len(gjson.GetBytes(tmpl, "event.delta.text").Raw)
	lines := slices.Clone(rec.Lines[:4])
	for k := 0; k < len(text); k += 10 {
		q, _ := json.Marshal(text[k:min(k+10, len(text))])
		lines = append(lines, slices.Concat(tmpl[:i], q, tmpl[j:]))
	}
	return append(lines, rec.Lines[len(rec.Lines)-5:]...)
}

// BenchmarkProbeDuringReply is F4 (cmd/claude-rpc's
// BenchmarkGetStateDuringReply) in process, without the CLI: the bridge
// with default options replays a 2 MB reply in 10-byte deltas (paced:
// 100 lines every 3 ms, about the CLI's rate) on the scripted transport,
// writing to an os.Pipe read as a host reads it, while get_state is sent
// every 5 ms; each probe's time is from writing it to reading its answer.
// It reports the median, 99th percentile and slowest probe of all rounds,
// and the slowest of those answered once the reply's text_end was read
// (behind the frames that carry the whole reply).
//
//	go test -run '^$' -bench ProbeDuringReply -benchtime 3x ./bridge
func BenchmarkProbeDuringReply(b *testing.B) {
	lines := tenByteReply(b)
	scenario := func(t *claudetest.Turn) {
		for k := 0; k < len(lines); k += 100 {
			if !t.Emit(lines[k:min(k+100, len(lines))]...) {
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
		<-t.Released()
	}
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{scenario}}
	dir := b.TempDir()
	opts := Options{UseTransport: fake, Coalesce: DefaultCoalesce, CLI: claudecli.Config{Dir: dir, Env: []string{"CLAUDE_CONFIG_DIR=" + b.TempDir()}},
		query: func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error) {
			return claudecli.Info{}, errors.New("no CLI")
		}}
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, outW, opts); _ = outW.Close() }()
	defer func() {
		_ = inW.Close()
		<-done
		_ = outR.Close()
	}()
	type frame struct {
		typ, id string
		at      time.Time
	}
	frames := make(chan frame, 1<<16)
	go func() {
		defer close(frames)
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadSlice('\n')
			head := bytes.Clone(line[:min(len(line), 256)])
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			f := frame{typ: gjson.GetBytes(head, "type").String(), id: gjson.GetBytes(head, "id").String(), at: time.Now()}
			if f.typ == "message_update" && gjson.GetBytes(head, "assistantMessageEvent.type").String() == "text_end" {
				f.typ = "text_end"
			}
			frames <- f
		}
	}()
	var mu sync.Mutex
	send := func(format string, args ...any) time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := time.Now()
		fmt.Fprintf(inW, format+"\n", args...)
		return t
	}
	var all, tail []time.Duration
	for b.Loop() {
		sent := map[string]time.Time{}
		var smu sync.Mutex
		stop := make(chan struct{})
		ticking := make(chan struct{})
		send(`{"type":"prompt","message":"reply"}`)
		go func() {
			defer close(ticking)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				id := fmt.Sprintf("p%d", k)
				smu.Lock()
				sent[id] = send(`{"type":"get_state","id":%q}`, id)
				smu.Unlock()
			}
		}()
		var textEnd time.Time
		ended, settled := false, false
		for f := range frames {
			switch f.typ {
			case "text_end":
				textEnd = f.at
			case "agent_end":
				if !ended {
					ended = true
					close(stop)
					<-ticking
				}
			case "session_settled":
				settled = true
			case "response":
				smu.Lock()
				if t, ok := sent[f.id]; ok {
					delete(sent, f.id)
					all = append(all, f.at.Sub(t))
					if !textEnd.IsZero() {
						tail = append(tail, f.at.Sub(t))
					}
				}
				smu.Unlock()
			}
			smu.Lock()
			over := settled && len(sent) == 0
			smu.Unlock()
			if over {
				break
			}
		}
	}
	slices.Sort(all)
	slices.Sort(tail)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(ms(all[len(all)-1]), "max-ms")
	if len(tail) > 0 {
		b.ReportMetric(ms(tail[len(tail)-1]), "tail-max-ms")
	}
	b.ReportMetric(float64(len(all))/float64(b.N), "probes/reply")
}
