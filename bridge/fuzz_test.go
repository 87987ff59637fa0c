package bridge

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// FuzzServe feeds the bridge arbitrary host input: whatever comes, it must
// not panic or hang, and stdout must carry only whole JSON object frames.
// The CLI is missing (prompts end with an error event) and $SHELL is
// /bin/true, so no input can run anything.
func FuzzServe(f *testing.F) {
	f.Setenv("SHELL", "/bin/true")
	for _, seed := range []string{
		`{"type":"get_state"}`,
		`{"id":"1","type":"prompt","message":"hi"}` + "\n" + `{"type":"abort"}`,
		`{"type":"steer","message":"x","images":[{"data":"AAAA","mimeType":"image/png"}]}`,
		`{"type":"set_model","provider":"anthropic","modelId":"opus"}`,
		`{"type":"extension_ui_response","id":"ui_1","value":"Allow once"}`,
		`{"type":"host_tool_result","id":"host_1","result":{"content":[]}}`,
		`{"type":"set_host_tools","tools":[{"name":"a","parameters":{"type":"object"}}]}`,
		`{"type":"bash","command":"echo hi"}` + "\n" + `{"type":"abort_bash"}`,
		`{"type":"compact","customInstructions":"x"}`,
		"[1,2]\n\x00\xff\n{\"type\":",
		`{"id":{"a":[]},"type":"set_session_name","name":"n"}`,
		`{"type":"negotiate_protocol","protocolVersion":2}` + "\n" + `{"type":"rpc_chunk","chunkId":"a","index":0,"count":2,"byteLength":1048577,"data":"AAAA"}` + "\n" + `{"type":"get_state"}`,
		`{"type":"set_event_filter","events":["agent_end"]}` + "\n" + `{"type":"get_entries","since":"x"}` + "\n" + `{"type":"clear_queue"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		var out bytes.Buffer
		opts := Options{
			CLI:       claudecli.Config{Path: "/nonexistent/claude", Dir: t.TempDir()},
			Transport: claudecli.TransportPipe,
			MaxLine:   1 << 16,
			flushWait: time.Second,
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, bytes.NewReader(input), &out, opts) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return after its input ended")
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" && out.Len() == 0 {
				continue
			}
			if !gjson.Valid(line) || !gjson.Parse(line).IsObject() || gjson.Get(line, "type").String() == "" {
				t.Fatalf("not a frame: %q", line)
			}
		}
	})
}
