package bridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestIDsEchoedAsSent: a response carries the command's id as the host
// wrote it, whatever its JSON type: open-design sends {"id":1,…} and
// matches the answer by a number, so "id":"1" would never be its answer.
// These are the ids pi 1.6.0 echoes (run with --mode rpc and get_state):
// the same values, where JavaScript would also rewrite a number's form
// (1.50 → 1.5, 1e3 → 1000), which a JSON reader takes as the same number.
// A line that is an object without a string type is answered with its id
// too (pi: "Unknown command: undefined"); a line that is no JSON object has
// no id to echo.
func TestIDsEchoedAsSent(t *testing.T) {
	r := newRig(t, &claudetest.Transport{Per: true}, Options{})
	for _, tc := range []struct{ line, id, command string }{
		{`{"id":1,"type":"get_state"}`, `1`, "get_state"},
		{`{"id":"1","type":"get_state"}`, `"1"`, "get_state"},
		{`{"id":0,"type":"get_state"}`, `0`, "get_state"},
		{`{"id":-7,"type":"get_state"}`, `-7`, "get_state"},
		{`{"id":1.50,"type":"get_state"}`, `1.50`, "get_state"},
		{`{"id":1e3,"type":"get_state"}`, `1e3`, "get_state"},
		{`{"id":12345678901234567890,"type":"get_state"}`, `12345678901234567890`, "get_state"},
		{`{"id":true,"type":"get_state"}`, `true`, "get_state"},
		{`{"id":null,"type":"get_state"}`, `null`, "get_state"},
		{`{"id":[1],"type":"get_state"}`, `[1]`, "get_state"},
		{`{"id":{"a": [1, 2]},"type":"get_state"}`, `{"a":[1,2]}`, "get_state"},
		{`{"type":"get_state", "id" : 42 }`, `42`, "get_state"},
		// Failures keep the id too.
		{`{"id":2,"type":"no_such_command"}`, `2`, "no_such_command"},
		{`{"id":3,"type":"set_model"}`, `3`, "set_model"},
		{`{"id":4}`, `4`, "parse"},
		{`{"id":5,"type":5}`, `5`, "parse"},
		{`{"id":6,"type":"abort"}`, `6`, "abort"},
	} {
		r.send(tc.line)
		f := r.next(waitFor)
		assert.Equal(t, "response", f.Get("type").String(), tc.line)
		assert.Equal(t, tc.command, f.Get("command").String(), tc.line)
		// The id's JSON text, and where it stands: first, as in pi's frames.
		assert.Equal(t, tc.id, f.Get("id").Raw, tc.line)
		assert.True(t, strings.HasPrefix(f.Raw, `{"id":`+tc.id+`,"type":"response",`), "%s: %s", tc.line, f.Raw)
	}
	for _, line := range []string{`[{"id":7,"type":"get_state"}]`, `{"id":8,`, `9`} {
		r.send(line)
		f := r.next(waitFor)
		assert.Equal(t, "parse", f.Get("command").String(), line)
		assert.False(t, f.Get("id").Exists(), "%s: no object, no id: %s", line, f.Raw)
	}
	// A command without an id is answered without one.
	r.send(`{"type":"get_state"}`)
	f := r.next(waitFor)
	assert.True(t, f.Get("success").Bool(), f.Raw)
	assert.False(t, f.Get("id").Exists(), f.Raw)
}
