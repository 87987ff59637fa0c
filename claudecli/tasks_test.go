package claudecli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTaskSet: the tasks a process printed, from its task_* lines as the
// CLI 2.1.328 writes them; other lines change nothing, an ended task stays
// known with its Done closed, and the set forgets the oldest ended past
// keptTasks.
func TestTaskSet(t *testing.T) {
	started := func(id, typ string) []byte {
		return fmt.Appendf(nil, `{"type":"system","subtype":"task_started","task_id":%q,"tool_use_id":"toolu_%s","description":"d","task_type":%q}`, id, id, typ)
	}
	ended := func(id string) []byte {
		return fmt.Appendf(nil, `{"type":"system","subtype":"task_notification","task_id":%q,"status":"stopped"}`, id)
	}
	var ts taskSet
	for _, l := range [][]byte{
		started("a1", "local_agent"), started("b1", "local_bash"),
		[]byte(`{"type":"system","subtype":"task_progress","task_id":"c1"}`),
		[]byte(`{"type":"assistant","message":{"content":[{"text":"\"subtype\":\"task_started\",\"task_id\":\"x1\""}]}}`),
		[]byte(`{"type":"system","subtype":"task_updated","task_id":"b1","patch":{"status":"killed"}}`),
		ended("b1"), ended("zz"),
	} {
		ts.line(l)
	}
	for _, c := range []struct {
		id, typ string
		known   bool
		ended   bool
	}{
		{"a1", "local_agent", true, false},
		{"b1", "local_bash", true, true},
		{"c1", "", false, false},
		{"x1", "", false, false},
		{"zz", "", false, false},
	} {
		got, ok := ts.get(c.id)
		assert.Equal(t, c.known, ok, c.id)
		if !ok {
			continue
		}
		assert.Equal(t, c.typ, got.Type, c.id)
		assert.Equal(t, "toolu_"+c.id, got.ToolUseID, c.id)
		assert.Equal(t, c.ended, got.Ended, c.id)
		select {
		case <-got.Done():
			assert.True(t, c.ended, "%s: Done closed while it runs", c.id)
		default:
			assert.False(t, c.ended, "%s: Done open once it ended", c.id)
		}
	}

	for i := range keptTasks {
		ts.line(started(fmt.Sprint("t", i), "local_bash"))
		ts.line(ended(fmt.Sprint("t", i)))
	}
	_, ok := ts.get("b1")
	assert.False(t, ok, "the oldest ended is forgotten")
	_, ok = ts.get("a1")
	assert.True(t, ok, "a running one is kept")
	_, ok = ts.get(fmt.Sprint("t", keptTasks-1))
	assert.True(t, ok)
}
