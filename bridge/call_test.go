package bridge

import (
	"bytes"
	"testing"

	"github.com/claude-rpc/claude-rpc/bridge/writer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line    string
		typ     string
		id      string // raw JSON
		errPart string
	}{
		{`{"type":"get_state"}`, "get_state", "", ""},
		{`{"id":"x","type":"prompt","message":"hi"}`, "prompt", `"x"`, ""},
		{`{"id":7,"type":"abort"}`, "abort", `7`, ""},
		{`{"id":null,"type":"abort"}`, "abort", "null", ""},
		{`{"id":1.50,"type":"abort"}`, "abort", "1.50", ""},
		{`{"id":{"a": [1, 2]},"type":"abort"}`, "abort", `{"a": [1, 2]}`, ""},
		{``, "", "", "empty line"},
		{`   `, "", "", "empty line"},
		{`nope`, "", "", "not valid JSON"},
		{`{"type":"prompt"`, "", "", "not valid JSON"},
		{`[]`, "", "", "got an array"},
		{`"prompt"`, "", "", "got a string"},
		{`42`, "", "", "got a number"},
		{`null`, "", "", "got null"},
		{`{}`, "", "", `no "type"`},
		{`{"id":3}`, "", "3", `no "type"`},
		{`{"id":"i","type":1}`, "", `"i"`, `"type" must be a string, got a number`},
		{`{"type":{"a":1}}`, "", "", "got an object"},
		// Invalid UTF-8 inside a string is accepted, as pi (JavaScript)
		// does; encoding it again writes U+FFFD.
		{"{\"type\":\"a\xffb\"}", "a\xffb", "", ""},
	}
	for _, tt := range tests {
		c, err := parseCall([]byte(tt.line))
		if tt.errPart != "" {
			require.Error(t, err, tt.line)
			assert.Contains(t, err.Error(), tt.errPart, tt.line)
		} else {
			require.NoError(t, err, tt.line)
			assert.Equal(t, tt.typ, c.typ, tt.line)
		}
		assert.Equal(t, tt.id, string(c.id), tt.line)
	}
}

func TestCallCheck(t *testing.T) {
	def := &commandDef{name: "x", fields: []field{
		{name: "s", kind: fString, required: true},
		{name: "o", kind: fString},
		{name: "b", kind: fBool},
		{name: "a", kind: fArray},
		{name: "j", kind: fObject},
		{name: "any", kind: fAny},
	}}
	tests := []struct{ line, err string }{
		{`{"type":"x","s":"m"}`, ""},
		{`{"type":"x","s":"m","o":null,"any":[1],"b":false,"a":[],"j":{}}`, ""},
		{`{"type":"x"}`, `x: missing required field "s"`},
		{`{"type":"x","s":null}`, `x: missing required field "s"`},
		{`{"type":"x","s":3}`, `x: field "s" must be a string, got a number`},
		{`{"type":"x","s":"m","o":{}}`, `x: field "o" must be a string, got an object`},
		{`{"type":"x","s":"m","b":"yes"}`, `x: field "b" must be a boolean, got a string`},
		{`{"type":"x","s":"m","a":{}}`, `x: field "a" must be an array, got an object`},
		{`{"type":"x","s":"m","j":[]}`, `x: field "j" must be an object, got an array`},
	}
	for _, tt := range tests {
		c, err := parseCall([]byte(tt.line))
		require.NoError(t, err)
		c.def = def
		if tt.err == "" {
			assert.NoError(t, c.check(), tt.line)
		} else {
			assert.EqualError(t, c.check(), tt.err, tt.line)
		}
	}
}

// TestCommandTable: names are unique, and a field is listed once.
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commandTable {
		assert.False(t, seen[c.name], "%s is listed twice", c.name)
		seen[c.name] = true
		require.NotNil(t, c.handle, c.name)
		fields := map[string]bool{}
		for _, f := range c.fields {
			assert.False(t, fields[f.name], "%s lists %s twice", c.name, f.name)
			fields[f.name] = true
		}
		if c.kind == preempt {
			assert.Zero(t, c.reads|c.writes, "%s preempts: it waits for nothing", c.name)
		}
		assert.Zero(t, c.early&^c.writes, "%s settles early only what it writes", c.name)
	}
}

func TestExcerptIsBounded(t *testing.T) {
	e := excerpt(bytes.Repeat([]byte("q"), 10_000))
	assert.Less(t, len(e), 200)
	assert.Contains(t, e, "10000 bytes")
}

func TestEncodeFrame(t *testing.T) {
	b, err := writer.EncodeFrame(okResponse([]byte(`"1"`), "x", map[string]any{"text": "<a> & \u2028 é 😀"}))
	require.NoError(t, err)
	assert.Equal(t, `{"id":"1","type":"response","command":"x","success":true,"data":{"text":"<a> & \u2028 é 😀"}}`+"\n", string(b))
	b, err = writer.EncodeFrame(errResponse(nil, "parse", "bad"))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"response","command":"parse","success":false,"error":"bad"}`+"\n", string(b))
}
