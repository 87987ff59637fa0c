//go:build linux

package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/reference"
	"github.com/claude-rpc/claude-rpc/bridge/schema"
)

// The protocol reference (reference.Doc: what claude-rpc schema prints
// and testdata/protocol holds, generated from the Go types) against what
// claude-rpc really writes: the harness hands every frame a bridge writes,
// read by the test or not, to a frameCheck, and the test fails if one does
// not match.

// frameCheck validates a bridge's frames as its reader reads them and
// reports the ones that do not match when the test ends. frame is called
// on the reader's goroutine, report on the test's.
type frameCheck struct {
	done chan struct{} // closed by the reader when it stops

	mu      sync.Mutex // guards the fields below
	checked int
	bad     []string // a problem report per frame that does not match
}

func newFrameCheck() *frameCheck { return &frameCheck{done: make(chan struct{})} }

func (c *frameCheck) frame(line []byte) {
	problems := schema.ValidateJSON(reference.Doc(), line)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked++
	if len(problems) > 0 {
		c.bad = append(c.bad, fmt.Sprintf("%s\n  frame: %.600s", strings.Join(problems, "\n  "), line))
	}
}

// report fails t for each frame that did not match, after reading what the
// test left unread so that every frame the bridge wrote is checked.
func (c *frameCheck) report(t *testing.T, frames <-chan []byte) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-frames:
		case <-deadline:
			t.Errorf("stdout was still open 5s after claude-rpc exited; not every frame was checked")
			open = false
		}
	}
	select {
	case <-c.done:
	case <-deadline:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range c.bad {
		if i == 5 {
			t.Errorf("… and %d more frames that do not match", len(c.bad)-i)
			break
		}
		t.Errorf("a frame does not match the protocol reference (testdata/protocol; if the change is meant, update the reference in bridge/reference/reference.go or the Go types, run go test ./bridge/reference -run TestProtocolReference -update and review the diff):\n  %s", b)
	}
}

// TestFramesMatchReference runs a session that writes most kinds of frame
// (each end-to-end test checks its own frames too), then shows that the
// check catches a frame whose shape drifted: a field added, one missing,
// one of another type, a kind the reference does not know.
func TestFramesMatchReference(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	frames := b.runPrompt("[[think:hmm]] [[bash:echo hi]]")
	require.Equal(t, "agent_end", frames[len(frames)-1].Get("type").String())
	for _, cmd := range []map[string]any{
		{"type": "get_state"},
		{"type": "get_messages"},
		{"type": "get_last_assistant_text"},
		{"type": "get_session_stats"},
		{"type": "get_fork_messages"},
		{"type": "set_session_name", "name": "reference"},
		{"type": "set_steering_mode", "mode": "all"},
		{"type": "cycle_thinking_level"},
		{"type": "bash", "command": "echo hello"},
		{"type": "abort"},
		{"type": "clone"},
		{"type": "new_session"},
		{"type": "steer"}, // no message: an error
	} {
		b.call(cmd)
	}
	b.send(`{"type":"no_such_command","id":"x"}`) // answered without its id, as pi does
	b.until(10*time.Second, isResponse("no_such_command"))
	b.send("not json")
	b.until(10*time.Second, isResponse("parse"))
	var seen []gjson.Result
	for _, f := range b.seen {
		seen = append(seen, gjson.ParseBytes(f))
	}
	kinds := shape(seen)
	for _, k := range []string{"agent_start", "turn_start", "message_start:user", "message_update:thinking_delta",
		"message_update:toolcall_end", "message_end:assistant", "tool_execution_start", "tool_execution_end",
		"message_end:toolResult", "turn_end", "agent_end", "response:get_state", "response:bash", "response:parse"} {
		assert.Contains(t, kinds, k, "the session wrote no %s frame", k)
	}
	b.check.mu.Lock()
	assert.GreaterOrEqual(t, b.check.checked, len(b.seen), "every frame read was checked")
	b.check.mu.Unlock()

	// The check is not vacuous: real frames, drifted, fail it.
	doc := reference.Doc()
	pick := func(match func(gjson.Result) bool) string {
		for _, f := range b.seen {
			if v := gjson.ParseBytes(f); match(v) {
				return v.Raw
			}
		}
		t.Fatalf("no such frame")
		return ""
	}
	state := pick(isResponse("get_state"))
	update := pick(func(v gjson.Result) bool { return v.Get("assistantMessageEvent.type").String() == "text_delta" })
	end := pick(isType("agent_end"))
	toolEnd := pick(isType("tool_execution_end"))
	require.Empty(t, schema.ValidateJSON(doc, []byte(state)))
	for _, tc := range []struct{ name, frame, want string }{
		{"a field added", strings.Replace(state, `"isStreaming"`, `"isBusy":false,"isStreaming"`, 1), `property "isBusy" is not in the reference`},
		{"a field renamed", strings.Replace(update, `"contentIndex"`, `"index"`, 1), `missing required property "contentIndex"`},
		{"a field of another type", regexp.MustCompile(`"timestamp":(\d+)`).ReplaceAllString(end, `"timestamp":"$1"`), `want integer, got "`},
		{"a nested field missing", strings.Replace(toolEnd, `"isError":`, `"failed":`, 1), `missing required property "isError"`},
		{"a kind unknown", strings.Replace(end, `"agent_end"`, `"agent_finished"`, 1), `none of the kinds in the reference`},
		{"a stop reason unknown", strings.Replace(end, `"stopReason":"stop"`, `"stopReason":"done"`, 1), `want one of`},
	} {
		problems := schema.ValidateJSON(doc, []byte(tc.frame))
		assert.NotEmpty(t, problems, "%s: the drifted frame passed the check", tc.name)
		assert.Contains(t, strings.Join(problems, "\n"), tc.want, tc.name)
	}
}
