package bridge

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/protocol/schema.json")

// TestSchemaFile keeps the checked-in reference in step with the code
// (go test ./bridge -run TestSchemaFile -update rewrites it).
func TestSchemaFile(t *testing.T) {
	path := filepath.Join("..", "testdata", "protocol", "schema.json")
	got := Schema()
	require.True(t, json.Valid(got))
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./bridge -run TestSchemaFile -update")
	assert.Equal(t, string(want), string(got), "the reference changed: review testdata/protocol/schema.json (-update)")
}

func TestCheckFrame(t *testing.T) {
	for _, tt := range []struct {
		frame, err string
	}{
		{`{"type":"agent_start"}`, ""},
		{`{"type":"agent_start","extra":1}`, `"extra" is not in the reference`},
		{`{"type":"turn_end","message":{"role":"assistant","content":[],"timestamp":1},"toolResults":[]}`, ""},
		{`{"type":"turn_end","message":{"role":"assistant","content":[{"type":"text","text":5}],"timestamp":1},"toolResults":[]}`, "want string"},
		{`{"type":"message_end"}`, `"message" is missing`},
		{`{"type":"mystery"}`, "unknown frame type"},
		{`{"id":"1","type":"response","command":"get_state","success":true,"data":{}}`, `is missing`},
		{`{"id":"1","type":"response","command":"prompt","success":false,"error":"x"}`, ""},
		{`{"type":"auto_compaction_end","result":null,"aborted":true,"willRetry":false}`, ""},
	} {
		err := CheckFrame([]byte(tt.frame))
		if tt.err == "" {
			assert.NoError(t, err, tt.frame)
		} else if assert.Error(t, err, tt.frame) {
			assert.Contains(t, err.Error(), tt.err, tt.frame)
		}
	}
}
