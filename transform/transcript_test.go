package transform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// conversation returns the user and assistant lines of a recorded
// transcript in file order (one branch, no side chains).
func conversation(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "cli", name+".transcript.jsonl"))
	require.NoError(t, err, "run go run ./scripts/record")
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if typ := gjson.GetBytes(l, "type").String(); typ == "user" || typ == "assistant" {
			out = append(out, l)
		}
	}
	return out
}

func TestFromTranscript(t *testing.T) {
	msgs := FromTranscript(conversation(t, "transcript"), toolNamesClaude)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	// Two prompts: the first answered with thinking and text, the second
	// with text and a Bash call, its result, and the answer to it.
	require.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult", "assistant"}, roles)
	assert.Equal(t, "first [[think:Let me see.]][[say:one]]", msgs[0].Text())
	assert.Equal(t, "thinking", msgs[1].Content[0].Type)
	assert.Equal(t, "Let me see.", msgs[1].Content[0].Thinking)
	assert.Equal(t, "one", msgs[1].Content[1].Text)
	assert.Equal(t, StopStop, msgs[1].StopReason)
	assert.Equal(t, "Running it.", msgs[3].Content[0].Text)
	assert.Equal(t, "toolCall", msgs[3].Content[1].Type)
	assert.Equal(t, "Bash", msgs[3].Content[1].Name)
	assert.JSONEq(t, `{"command":"echo tool-out","description":"Run echo tool-out"}`, string(msgs[3].Content[1].Arguments))
	assert.Equal(t, StopToolUse, msgs[3].StopReason)
	assert.Equal(t, msgs[3].Content[1].ID, msgs[4].ToolCallID)
	assert.Equal(t, "tool-out", msgs[4].Text())
	assert.Equal(t, "tool-out", gjson.GetBytes(msgs[4].Details, "stdout").String(), "Bash's details, as live")
	assert.Equal(t, "tool said: tool-out", msgs[5].Text())
	for _, m := range msgs {
		assert.Positive(t, m.Timestamp, "timestamps come from the transcript")
	}

	golden := filepath.Join("testdata", "transcript.messages.golden.json")
	got, err := json.MarshalIndent(msgs, "", "  ")
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "go test ./transform -update")
	assert.JSONEq(t, string(want), string(got))
}

func TestFromTranscriptTolerance(t *testing.T) {
	conv := conversation(t, "transcript")
	// Entries from before the first prompt (a fork's copy starts mid-way)
	// and kinds it does not know are passed over.
	odd := append([][]byte{conv[len(conv)-1], []byte(`{"type":"user","message":{"role":"user","content":[{"type":"mystery"}]}}`)}, conv...)
	assert.Len(t, FromTranscript(odd, toolNamesPi), 6)
	assert.Empty(t, FromTranscript(nil, toolNamesPi))
	text, ok := TranscriptPrompt(conv[0])
	assert.True(t, ok)
	assert.Equal(t, "first [[think:Let me see.]][[say:one]]", text)
}

// TestFromTranscriptLeavesOutModelCommands: a model changed on a running
// CLI (set_model) is recorded as a local /model command and its output
// ("Set model to …"); a session loaded again shows the two prompts and
// their answers only.
func TestFromTranscriptLeavesOutModelCommands(t *testing.T) {
	msgs := FromTranscript(conversation(t, "transcript-model-command"), toolNamesPi)
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+": "+m.Text())
	}
	assert.Equal(t, []string{"user: first [[say:one]]", "assistant: one", "user: second [[say:two]]", "assistant: two"}, got)
}
