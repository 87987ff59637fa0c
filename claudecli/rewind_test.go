package claudecli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/gjson"
)

// TestRewindAsks: the dry run first, for what the rewind changes; the
// rewind only when it changes something; the CLI's reasons as errors.
func TestRewindAsks(t *testing.T) {
	dry := `{"subtype":"success","response":{"canRewind":true,"filesChanged":["/w/a","/w/b"],"insertions":3,"deletions":1}}`
	done := `{"subtype":"success","response":{"canRewind":true,"skippedLinks":1}}`
	for _, c := range []struct {
		name    string
		answers []string // the CLI's response to each request, in turn; "!" an error
		want    Rewound
		err     string
		asked   int
	}{
		{"restored", []string{dry, done}, Rewound{Files: []string{"/w/a", "/w/b"}, Insertions: 3, Deletions: 1, SkippedLinks: 1}, "", 2},
		{"nothing changed", []string{`{"subtype":"success","response":{"canRewind":true,"filesChanged":[],"insertions":0,"deletions":0}}`}, Rewound{}, "", 1},
		{"no checkpoint", []string{`{"subtype":"success","response":{"canRewind":false,"error":"No file checkpoint found for this message."}}`}, Rewound{}, "No file checkpoint found for this message.", 1},
		{"refused without a reason", []string{`{"subtype":"success","response":{"canRewind":false}}`}, Rewound{}, "claude cannot rewind to that message", 1},
		{"dry run not answered", []string{"!"}, Rewound{}, "no answer", 1},
		{"rewind refused", []string{dry, "!"}, Rewound{}, "no answer", 2},
		{"rewind not done", []string{dry, `{"subtype":"success","response":{"canRewind":false,"error":"disk full"}}`}, Rewound{}, "claude did not rewind: disk full", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []map[string]any
			got, err := rewind("u-1", func(req map[string]any) (gjson.Result, error) {
				asked = append(asked, req)
				a := c.answers[len(asked)-1]
				if a == "!" {
					return gjson.Result{}, errors.New("no answer")
				}
				return gjson.Parse(a), nil
			})
			if c.err != "" {
				assert.EqualError(t, err, c.err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, c.want, got)
			assert.Len(t, asked, c.asked)
			assert.Equal(t, map[string]any{"subtype": "rewind_files", "user_message_id": "u-1", "dry_run": true}, asked[0])
			if len(asked) > 1 {
				assert.Equal(t, map[string]any{"subtype": "rewind_files", "user_message_id": "u-1"}, asked[1])
			}
		})
	}
}

// TestFileCheckpointsEnv: FileCheckpoints sets the variable, and only it.
func TestFileCheckpointsEnv(t *testing.T) {
	on := Config{Env: []string{"PATH=/bin"}, FileCheckpoints: true}
	assert.Contains(t, on.Environ(), checkpointEnv+"=true")
	off := Config{Env: []string{"PATH=/bin"}}
	for _, kv := range off.Environ() {
		assert.NotContains(t, kv, checkpointEnv)
	}
}
