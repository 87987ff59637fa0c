//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTodosFollowTheCLIsTasks(t *testing.T) { forEachTransport(t, testTodos) }

func testTodos(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	phases := func() string { return b.call(map[string]any{"type": "get_state"}).Get("data.todoPhases").Raw }
	assert.Equal(t, "[]", phases())

	b.runPrompt(`[[tool:TaskCreate:{"subject":"Write tests","description":"cover the parser"}]][[tool:TaskCreate:{"subject":"Ship","description":"release it"}]]`)
	assert.JSONEq(t, `[{"id":"claude","name":"Todos","tasks":[
		{"id":"1","content":"Write tests","status":"pending"},
		{"id":"2","content":"Ship","status":"pending"}]}]`, phases())

	b.runPrompt(`[[tool:TaskUpdate:{"taskId":"1","status":"completed"}]][[tool:TaskUpdate:{"taskId":"2","status":"deleted"}]]`)
	assert.JSONEq(t, `[{"id":"claude","name":"Todos","tasks":[{"id":"1","content":"Write tests","status":"completed"}]}]`, phases())

	// A call the CLI refuses changes nothing.
	b.runPrompt(`[[tool:TaskUpdate:{"taskId":"99","status":"completed"}]]`)
	assert.JSONEq(t, `[{"id":"claude","name":"Todos","tasks":[{"id":"1","content":"Write tests","status":"completed"}]}]`, phases())

	// The host's phases replace them; ids are filled in.
	r := b.call(map[string]any{"type": "set_todos", "phases": []any{map[string]any{"name": "Plan", "tasks": []any{
		map[string]any{"content": "Map the tools", "status": "in_progress"}, map[string]any{"id": "t9", "content": "Edit"}}}}})
	require.True(t, r.Get("success").Bool(), r.Raw)
	want := `[{"id":"phase-1","name":"Plan","tasks":[{"id":"task-1","content":"Map the tools","status":"in_progress"},{"id":"t9","content":"Edit","status":"pending"}]}]`
	assert.JSONEq(t, want, r.Get("data.todoPhases").Raw)
	assert.JSONEq(t, want, phases())

	for _, bad := range []map[string]any{
		{"type": "set_todos"},
		{"type": "set_todos", "phases": "plan"},
		{"type": "set_todos", "phases": []any{map[string]any{"tasks": []any{}}}},
		{"type": "set_todos", "phases": []any{map[string]any{"name": "P", "tasks": []any{map[string]any{"content": "x", "status": "done"}}}}},
		{"type": "set_todos", "phases": []any{map[string]any{"name": "P", "tasks": []any{map[string]any{"status": "pending"}}}}},
		{"type": "set_todos", "phases": []any{map[string]any{"name": "P", "tasks": "x"}}},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), "%v: %s", bad, r.Raw)
	}
	assert.JSONEq(t, want, phases(), "refused changes leave the todos as they were")

	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	assert.Equal(t, "[]", phases())
}
