package bridge

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestParseTodoPhases(t *testing.T) {
	for _, tc := range []struct {
		name, phases string
		want         string // the normalized phases, or
		err          string // the error
	}{
		{name: "empty clears", phases: `[]`, want: `[]`},
		{name: "the seed's example", phases: `[{"id":"phase-1","name":"Evaluation","tasks":[
			{"id":"task-1","content":"Map the read tool surface","status":"in_progress"},
			{"id":"task-2","content":"Exercise edit operations","status":"pending"}]}]`,
			want: `[{"id":"phase-1","name":"Evaluation","tasks":[
			{"id":"task-1","content":"Map the read tool surface","status":"in_progress"},
			{"id":"task-2","content":"Exercise edit operations","status":"pending"}]}]`},
		{name: "ids, statuses and tasks filled in, text trimmed, unknown fields dropped",
			phases: `[{"name":" A ","tasks":[{"content":" x ","priority":"high"},{"id":"task-7","content":"y","status":"abandoned","notes":"n","activeForm":"Ying"}]},
				{"id":"phase-4","name":"B"},{"name":"C","tasks":null,"id":null},{"name":"D","tasks":[{"content":"z"}]}]`,
			want: `[{"id":"phase-5","name":"A","tasks":[{"id":"task-8","content":"x","status":"pending"},{"id":"task-7","content":"y","status":"abandoned","notes":"n","activeForm":"Ying"}]},
				{"id":"phase-4","name":"B","tasks":[]},{"id":"phase-6","name":"C","tasks":[]},{"id":"phase-7","name":"D","tasks":[{"id":"task-9","content":"z","status":"pending"}]}]`},

		{name: "no phases", phases: ``, err: `missing required field "phases"`},
		{name: "null phases", phases: `null`, err: `missing required field "phases"`},
		{name: "phases an object", phases: `{"name":"A"}`, err: `"phases" must be an array, got an object`},
		{name: "phase a string", phases: `["A"]`, err: `phases[0] must be an object, got a string`},
		{name: "phase without a name", phases: `[{"tasks":[]}]`, err: `phases[0].name: a phase needs a name`},
		{name: "blank name", phases: `[{"name":"  "}]`, err: `phases[0].name: a phase needs a name`},
		{name: "name a number", phases: `[{"name":1}]`, err: `phases[0].name must be a string, got a number`},
		{name: "id a number", phases: `[{"name":"A","id":1}]`, err: `phases[0].id must be a string, got a number`},
		{name: "tasks an object", phases: `[{"name":"A","tasks":{}}]`, err: `phases[0].tasks must be an array, got an object`},
		{name: "task a string", phases: `[{"name":"A","tasks":["x"]}]`, err: `phases[0].tasks[0] must be an object, got a string`},
		{name: "task without text", phases: `[{"name":"A","tasks":[{"status":"pending"}]}]`, err: `phases[0].tasks[0].content: a task needs a text`},
		{name: "content an array", phases: `[{"name":"A","tasks":[{"content":["x"]}]}]`, err: `phases[0].tasks[0].content must be a string, got an array`},
		{name: "unknown status", phases: `[{"name":"A","tasks":[{"content":"x","status":"done"}]}]`,
			err: `phases[0].tasks[0].status must be one of pending, in_progress, completed, abandoned, got "done"`},
		{name: "status a boolean", phases: `[{"name":"A","tasks":[{"content":"x","status":true}]}]`, err: `phases[0].tasks[0].status must be a string, got a boolean`},
		{name: "notes a number", phases: `[{"name":"A","tasks":[{"content":"x","notes":1}]}]`, err: `phases[0].tasks[0].notes must be a string, got a number`},
		{name: "two phases, one id", phases: `[{"id":"p","name":"A"},{"id":"p","name":"B"}]`, err: `phases[1].id: "p" is the id of another phase`},
		{name: "two tasks, one id", phases: `[{"name":"A","tasks":[{"id":"t","content":"x"}]},{"name":"B","tasks":[{"id":"t","content":"y"}]}]`,
			err: `phases[1].tasks[0].id: "t" is the id of another task`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := gjson.Get(`{"phases":`+tc.phases+`}`, "phases")
			if tc.phases == "" {
				v = gjson.Get(`{}`, "phases")
			}
			got, err := parseTodoPhases(v)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			if got == nil {
				b = []byte(`[]`)
			}
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}
