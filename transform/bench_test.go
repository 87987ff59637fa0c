package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkTranslate translates recorded streams, and for comparison decodes
// the same lines with encoding/json into maps (what a straightforward
// bridge would do before it even begins to map them). Compare the MB/s of
// the two sub-benchmarks of each recording; allocs/op divided by the lines
// per op is the allocations per line.
func BenchmarkTranslate(b *testing.B) {
	for _, name := range []string{"huge-reply", "tools-many"} {
		data, err := os.ReadFile("../testdata/cli/" + name + ".jsonl")
		if err != nil {
			b.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		b.Run(name+"/translator", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var evs []Event
			for b.Loop() {
				tr := NewTranslator(func() int64 { return 0 })
				evs = tr.Start(UserMessage([]Content{TextContent("x")}, 0))
				for _, l := range lines {
					evs = tr.Append(evs[:0], l)
				}
			}
			_ = evs
			b.ReportMetric(float64(len(lines)), "lines/op")
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for _, l := range lines {
					var v map[string]any
					if err := json.Unmarshal(l, &v); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(lines)), "lines/op")
		})
	}
}

// BenchmarkDeltaLine feeds one recorded delta line again and again to a
// message being streamed: allocs/op is the allocations per delta line.
func BenchmarkDeltaLine(b *testing.B) {
	for _, tc := range []struct{ name, rec, kind string }{
		{"text", "text", "text_delta"},
		{"toolcall", "tool-bash", "input_json_delta"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data, err := os.ReadFile("../testdata/cli/" + tc.rec + ".jsonl")
			if err != nil {
				b.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			tr := NewTranslator(func() int64 { return 0 })
			evs := tr.Start(UserMessage(nil, 0))
			var delta []byte
			for _, l := range lines {
				if bytes.Contains(l, []byte(`"type":"`+tc.kind+`"`)) {
					delta = l
					break
				}
				evs = tr.Append(evs[:0], l)
			}
			if delta == nil {
				b.Fatal("no delta line")
			}
			b.SetBytes(int64(len(delta)))
			b.ReportAllocs()
			for b.Loop() {
				evs = tr.Append(evs[:0], delta)
			}
			if len(evs) != 1 {
				b.Fatalf("%d events per delta", len(evs))
			}
		})
	}
}

// BenchmarkEscape escapes 2 MB of text as a frame writes a message's text
// when it has no escape offsets (message_end, turn_end, agent_end): the
// fake API's long reply (a line end every 64 bytes), text without escapes,
// and text in a script of multi-byte characters.
func BenchmarkEscape(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"reply", hugeText(2_000_000)},
		{"plain", strings.Repeat("the quick brown fox jumps over the lazy dog ", 2_000_000/44)},
		{"cjk", strings.Repeat("敏捷的棕色狐狸跳过了懒狗。", 2_000_000/39)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.text)))
			buf := make([]byte, 0, 2*len(tc.text))
			for b.Loop() {
				buf = appendEscaped(buf[:0], tc.text)
			}
		})
	}
}

// hugeText is the fake API's long reply (fakeapi.HugeText).
func hugeText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:n]
}
