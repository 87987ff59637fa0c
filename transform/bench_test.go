package transform

import (
	"bytes"
	"encoding/json"
	"os"
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
					evs = tr.Line(l)
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
