package rpcframe

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// ompVersion is the omp whose rpc-frame.ts this package follows.
const ompVersion = "18.3.4"

// ompDir returns the folder scripts/install-omp installs omp's RPC sources
// and Bun into, running the script when omp is not there yet (it fails the
// test if that fails). omp comes from npm, so a test that needs it is an
// end-to-end test: it runs by claudetest's one rule, [claudetest.EndToEnd].
func ompDir(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		// scripts/install-omp is a bash script installing a Linux or macOS
		// omp; the framing compared is the same on every OS.
		t.Skip("omp is installed and run by scripts/install-omp, a Unix script; the round trip is checked on Linux")
	}
	claudetest.EndToEnd(t)
	dir := os.Getenv("OMP_DIR")
	if dir == "" {
		cache := os.Getenv("CLAUDE_RPC_CACHE")
		if cache == "" {
			base := os.Getenv("XDG_CACHE_HOME")
			if base == "" {
				home, _ := os.UserHomeDir()
				base = filepath.Join(home, ".cache")
			}
			cache = filepath.Join(base, "claude-rpc")
		}
		dir = filepath.Join(cache, "omp-"+ompVersion)
	}
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return dir
	}
	out, err := exec.Command("../../scripts/install-omp").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("scripts/install-omp: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("scripts/install-omp: %v", err)
	}
	return strings.TrimSpace(string(out))
}

type ompOp struct {
	Op    string   `json:"op"`
	JSON  string   `json:"json,omitempty"`
	Lines []string `json:"lines,omitempty"`
}

type ompResult struct {
	Lines       []string `json:"lines"`
	Stringified string   `json:"stringified"`
	Frames      []string `json:"frames"`
	Error       *string  `json:"error"`
}

// runOmp runs ops through omp's own RpcFrameEncoder/RpcFrameDecoder under Bun.
func runOmp(t *testing.T, dir string, ops []ompOp) []ompResult {
	t.Helper()
	in, err := json.Marshal(map[string]any{"ops": ops})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "bun"), "testdata/omp_frame.ts")
	cmd.Env = append(os.Environ(), "OMP_DIR="+dir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bun testdata/omp_frame.ts: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		Results []ompResult `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("omp_frame.ts printed %.200q: %v", out, err)
	}
	if len(res.Results) != len(ops) {
		t.Fatalf("omp_frame.ts answered %d of %d ops", len(res.Results), len(ops))
	}
	return res.Results
}

func toStrings(lines [][]byte) []string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = strings.TrimSuffix(string(l), "\n")
	}
	return s
}

// TestOmpRoundTrip checks this package against omp's own rpc-frame.ts, both
// ways: what omp's encoder writes, Split writes byte for byte and the
// Reassembler puts back together; what Split writes, omp's decoder puts back
// together; and bad sequences fail in both, with the same message where omp
// has one.
func TestOmpRoundTrip(t *testing.T) {
	dir := ompDir(t)

	// Frames of several sizes and kinds of text, as omp would have them.
	frames := []string{
		`{"type":"get_state","id":"1"}`,
		string(frameOf(t, MaxFrameBytes-1, "a")),
		string(frameOf(t, MaxFrameBytes, "b")),
		`{"type":"message_end","messageId":"msg-1","message":{"role":"assistant","content":[{"type":"text","text":"` +
			strings.Repeat(`é😀<&>\"\\\n\u2028 `, 150_000) + `"}]}}`,
		string(frameOf(t, 5*MaxFrameBytes+3, "0123456789")),
		`{"type":"response","id":"req_3","command":"get_messages","success":true,"data":{"messages":[` +
			strings.Repeat(`{"role":"user","content":"`+strings.Repeat("x", 1000)+`"},`, 2000) + `{}]}}`,
	}
	var ops []ompOp
	for _, f := range frames {
		ops = append(ops, ompOp{Op: "encode", JSON: f})
	}
	res := runOmp(t, dir, ops)

	// omp's lines → ours.
	var c Chunker
	var goLines [][][]byte
	for i, r := range res {
		lines, err := c.Split([]byte(r.Stringified))
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		goLines = append(goLines, lines)
		if got := toStrings(lines); strings.Join(got, "\n") != strings.Join(trimNL(r.Lines), "\n") {
			t.Errorf("frame %d (%d bytes): Split wrote %d lines, omp %d, not the same bytes", i, len(r.Stringified), len(got), len(r.Lines))
		}
		var asBytes [][]byte
		for _, l := range r.Lines {
			asBytes = append(asBytes, []byte(l))
		}
		if got := reassembleAll(t, asBytes); string(got) != r.Stringified {
			t.Errorf("frame %d: the Reassembler did not give back omp's frame from omp's lines", i)
		}
	}

	// Our lines → omp's decoder.
	ops = ops[:0]
	for _, lines := range goLines {
		ops = append(ops, ompOp{Op: "decode", Lines: toStrings(lines)})
	}
	dec := runOmp(t, dir, ops)
	for i, r := range dec {
		if r.Error != nil {
			t.Errorf("frame %d: omp's decoder: %s", i, *r.Error)
			continue
		}
		if len(r.Frames) != 1 || r.Frames[0] != res[i].Stringified {
			t.Errorf("frame %d: omp's decoder gave %d frames, not the frame", i, len(r.Frames))
		}
	}

	// Bad sequences: the same verdict, and omp's message where it has one.
	frame := frameOf(t, MaxFrameBytes+100, "0123456789")
	good, _ := c.Split(frame)
	g := toStrings(good)
	n := len(frame)
	s := func(b []byte) string { return string(b) }
	bad := [][]string{
		{g[0], `{"type":"abort"}`},
		{g[1]},
		{g[0], g[2]},
		{g[0], g[0]},
		{g[0], g[1], g[2], g[3]},
		{`[1,2]`},
		{`"x"`},
		{s(chunk("", 0, 5, n, "YWJj"))},
		{s(chunk(strings.Repeat("x", 129), 0, 5, n, "YWJj"))},
		{s(chunk(strings.Repeat("😀", 64), 0, 5, n, "YWJj"))},
		{s(chunk(strings.Repeat("😀", 65), 0, 5, n, "YWJj"))},
		{s(chunk("c", 0, 1, n, "YWJj"))},
		{s(chunk("c", 0, 257, n, "YWJj"))},
		{s(chunk("c", 0, 5, MaxFrameBytes-1, "YWJj"))},
		{s(chunk("c", 0, 5, MaxReassembledBytes+1, "YWJj"))},
		{s(chunk("c", 0.5, 5, n, "YWJj"))},
		{s(chunk("c", "0", 5, n, "YWJj"))},
		{s(chunk("c", 0, 5, n, ""))},
		{s(chunk("c", 0, 5, n, "YWJ"))},
		{s(chunk("c", 0, 5, n, "YWJ="))},
		{s(chunk("c", 0, 5, n, "YW\nJj"))},
		{s(chunk("c", 0, 5, n, b64(bytes.Repeat([]byte("a"), ChunkPayloadBytes+1))))},
		{s(chunk("c", 0, 2, MaxFrameBytes, b64(frame[:ChunkPayloadBytes]))), s(chunk("c", 1, 2, MaxFrameBytes, b64(frame[ChunkPayloadBytes:2*ChunkPayloadBytes])))},
		{`{"type":"rpc_chunk","chunkId":"c","index":0,"count":2,"byteLength":1048576,"data":"` + b64(bytes.Repeat([]byte("a"), ChunkPayloadBytes)) + `"}`,
			`{"type":"rpc_chunk","chunkId":"c","index":1.0,"count":2,"byteLength":1048576,"data":"` + b64(bytes.Repeat([]byte("a"), ChunkPayloadBytes)) + `"}`},
	}
	// A whole frame that is not JSON, or not UTF-8, once reassembled.
	for _, content := range []string{`["` + strings.Repeat("x", MaxFrameBytes) + `"]`, `{"x":"` + strings.Repeat("x", MaxFrameBytes) + "\xff\"}", `{"x":` + strings.Repeat("1", MaxFrameBytes)} {
		lines, _ := c.Split([]byte(content))
		bad = append(bad, toStrings(lines))
	}
	ops = ops[:0]
	for _, b := range bad {
		ops = append(ops, ompOp{Op: "decode", Lines: b})
	}
	verdicts := runOmp(t, dir, ops)
	for i, b := range bad {
		var r Reassembler
		var err error
		for _, l := range b {
			if _, err = r.Push([]byte(l)); err != nil {
				break
			}
		}
		omp := verdicts[i].Error
		switch {
		case omp == nil && err == nil:
		case omp == nil:
			t.Errorf("sequence %d: omp accepts it, we say %v", i, err)
		case err == nil:
			t.Errorf("sequence %d: omp says %q, we accept it", i, *omp)
		case strings.HasPrefix(*omp, "rpc ") || strings.HasPrefix(*omp, "invalid rpc"):
			if err.Error() != *omp {
				t.Errorf("sequence %d: omp says %q, we say %q", i, *omp, err)
			}
		}
	}
}

func trimNL(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSuffix(l, "\n")
	}
	return out
}
