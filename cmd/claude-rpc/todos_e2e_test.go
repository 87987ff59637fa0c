//go:build linux

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// todoPhases returns get_state's todoPhases, compacted.
func (b *rpcProc) todoPhases() string {
	b.t.Helper()
	st := b.call(map[string]any{"type": "get_state"})
	require.True(b.t, st.Get("data.todoPhases").IsArray(), "get_state has todoPhases: %s", st.Raw)
	return st.Get("data.todoPhases").Raw
}

// taskTool is a [[tool]] marker for one of the CLI's task tools.
func taskTool(name, input string) string { return "[[tool:" + name + ":" + input + "]]" }

func TestTodosFromTheModel(t *testing.T) { forStreamAndPipe(t, testTodosFromTheModel) }

// The model's TaskCreate and TaskUpdate calls (the CLI's todo tools, which
// the bridge turns on) show in get_state's todoPhases with the CLI's task
// ids, by the time the host sees each call's tool_execution_end. The CLI
// keeps its list per session across processes (the per-turn transports
// resume it), and a new session starts with none.
func testTodosFromTheModel(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	assert.JSONEq(t, `[]`, b.todoPhases())

	prompt := "Plan it " +
		taskTool("TaskCreate", `{"subject":"Write the parser","description":"Parse the input","activeForm":"Writing the parser"}`) +
		taskTool("TaskCreate", `{"subject":"Test it","description":"Add tests"}`) +
		taskTool("TaskUpdate", `{"taskId":"1","status":"in_progress"}`)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
	b.until(60*time.Second, func(f gjson.Result) bool {
		return f.Get("type").String() == "tool_execution_end" && f.Get("toolName").String() == "TaskCreate"
	})
	b.sendJSON(map[string]any{"type": "get_state", "id": "mid"})
	frames := b.until(10*time.Second, isResponse("get_state"))
	st := frames[len(frames)-1]
	assert.Equal(t, "Write the parser", st.Get(`data.todoPhases.0.tasks.#(id=="1").content`).String(),
		"the created task is there when its tool_execution_end is: %s", st.Raw)
	if !slices.ContainsFunc(frames, isType("agent_end")) { // it may have come before the answer, settled frames after it
		b.until(60*time.Second, isType("agent_end"))
	}
	assert.JSONEq(t, `[{"id":"phase-1","name":"Todos","tasks":[
		{"id":"1","content":"Write the parser","status":"in_progress","notes":"Parse the input","activeForm":"Writing the parser"},
		{"id":"2","content":"Test it","status":"pending","notes":"Add tests"}]}]`, b.todoPhases())

	// The next prompt: a new CLI process on the per-turn transports.
	frames = b.runPrompt(taskTool("TaskUpdate", `{"taskId":"2","subject":"Test the parser","status":"completed"}`) +
		taskTool("TaskUpdate", `{"taskId":"1","status":"deleted"}`))
	for _, f := range frames {
		if f.Get("type").String() == "tool_execution_end" {
			assert.False(t, f.Get("isError").Bool(), "%s", f.Raw)
		}
	}
	assert.JSONEq(t, `[{"id":"phase-1","name":"Todos","tasks":[
		{"id":"2","content":"Test the parser","status":"completed","notes":"Add tests"}]}]`, b.todoPhases())

	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	assert.JSONEq(t, `[]`, b.todoPhases(), "a new session has no todos")
	frames = b.runPrompt(taskTool("TaskUpdate", `{"taskId":"2","status":"pending"}`))
	assert.Contains(t, last(frames, "message_end", "assistant").Get("message.content.0.text").String(), "Task not found",
		"the new session's CLI list is empty too")
	assert.JSONEq(t, `[]`, b.todoPhases())
}

func TestSetTodos(t *testing.T) { forStreamAndPipe(t, testSetTodos) }

// set_todos replaces the list and answers it normalized; the next prompt
// (only that one) tells the model; a task the model then creates with the
// same text is the host's task, keeping its id and following the CLI's
// updates; get_state sent back through set_todos keeps the link.
func testSetTodos(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	resp := b.call(map[string]any{"type": "set_todos", "phases": []any{map[string]any{
		"id": "phase-1", "name": "Evaluation", "tasks": []any{
			map[string]any{"id": "task-1", "content": "Map the read tool surface", "status": "in_progress"},
			map[string]any{"content": "Exercise edit operations"},
		}}}})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	want := `[{"id":"phase-1","name":"Evaluation","tasks":[
		{"id":"task-1","content":"Map the read tool surface","status":"in_progress"},
		{"id":"task-2","content":"Exercise edit operations","status":"pending"}]}]`
	assert.JSONEq(t, want, resp.Get("data.todoPhases").Raw)
	assert.JSONEq(t, want, b.todoPhases())

	b.runPrompt("Go on " + taskTool("TaskCreate", `{"subject":"Map the read tool surface","description":"Read tools"}`) +
		taskTool("TaskUpdate", `{"taskId":"1","status":"completed"}`))
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	told := reqs[0].LastUserText()
	assert.Contains(t, told, "<system-reminder>\nThe user set your todo list")
	assert.Contains(t, told, "- [in_progress] Map the read tool surface\n- [pending] Exercise edit operations\n")
	assert.True(t, strings.HasPrefix(told, "Go on "+taskTool("TaskCreate", `{"subject":"Map the read tool surface","description":"Read tools"}`)+
		taskTool("TaskUpdate", `{"taskId":"1","status":"completed"}`)+"\n\n<system-reminder>\n"), "the list follows the prompt: %q", told)
	want = `[{"id":"phase-1","name":"Evaluation","tasks":[
		{"id":"task-1","content":"Map the read tool surface","status":"completed","notes":"Read tools"},
		{"id":"task-2","content":"Exercise edit operations","status":"pending"}]}]`
	assert.JSONEq(t, want, b.todoPhases())

	n := len(b.srv.MessagesRequests())
	b.runPrompt("[[say:ok]]")
	assert.Equal(t, "[[say:ok]]", b.srv.MessagesRequests()[n].LastUserText(), "only the first prompt after set_todos tells the model")

	// The host sends the list back with a change; the link to the CLI's
	// task 1 stays, and the model hears of the change.
	st := gjson.Parse(b.todoPhases())
	var phases any
	require.NoError(t, json.Unmarshal([]byte(st.Raw), &phases))
	phases.([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["status"] = "in_progress"
	require.True(t, b.call(map[string]any{"type": "set_todos", "phases": phases}).Get("success").Bool())
	n = len(b.srv.MessagesRequests())
	b.runPrompt("Again " + taskTool("TaskUpdate", `{"taskId":"1","status":"completed"}`))
	assert.Contains(t, b.srv.MessagesRequests()[n].LastUserText(), "- [in_progress] #1 Map the read tool surface\n")
	assert.Equal(t, "completed", gjson.Get(b.todoPhases(), `0.tasks.#(id=="task-1").status`).String())
}

func TestSetTodosBadInput(t *testing.T) { forStreamAndPipe(t, testSetTodosBadInput) }

// A malformed set_todos is refused with a message naming what is wrong,
// leaves the list as it was, and the bridge goes on serving.
func testSetTodosBadInput(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	good := []any{map[string]any{"name": "Plan", "tasks": []any{map[string]any{"content": "Read"}}}}
	require.True(t, b.call(map[string]any{"type": "set_todos", "phases": good}).Get("success").Bool())
	before := b.todoPhases()
	for _, tc := range []struct {
		phases any
		err    string
	}{
		{nil, `set_todos: missing required field "phases"`},
		{"Plan", `set_todos: "phases" must be an array, got a string`},
		{[]any{map[string]any{"tasks": []any{}}}, `set_todos: phases[0].name: a phase needs a name`},
		{[]any{map[string]any{"name": "P", "tasks": []any{map[string]any{"content": "x", "status": "done"}}}},
			`set_todos: phases[0].tasks[0].status must be one of pending, in_progress, completed, abandoned, got "done"`},
		{[]any{map[string]any{"name": "P", "tasks": []any{map[string]any{"content": 7}}}},
			`set_todos: phases[0].tasks[0].content must be a string, got a number`},
		{[]any{map[string]any{"name": "P", "tasks": []any{map[string]any{"id": "t", "content": "x"}, map[string]any{"id": "t", "content": "y"}}}},
			`set_todos: phases[0].tasks[1].id: "t" is the id of another task`},
	} {
		cmd := map[string]any{"type": "set_todos"}
		if tc.phases != nil {
			cmd["phases"] = tc.phases
		}
		resp := b.call(cmd)
		assert.False(t, resp.Get("success").Bool(), resp.Raw)
		assert.Equal(t, "set_todos", resp.Get("command").String())
		assert.Equal(t, tc.err, resp.Get("error").String())
	}
	assert.JSONEq(t, before, b.todoPhases(), "the list is unchanged")
	b.send(`{"type":"set_todos","id":"x","phases":[{"name":"P","tasks":[{"content":"x"}]}`) // cut short
	assert.Equal(t, "parse", b.next(10*time.Second).Get("command").String())
	frames := b.runPrompt("[[say:still here]]")
	assert.Equal(t, "still here", last(frames, "message_end", "assistant").Get("message.content.0.text").String())
	assert.JSONEq(t, before, b.todoPhases())
}

// TestTodosFromTodoWrite: with CLAUDE_CODE_ENABLE_TASKS=0 the CLI offers
// its older TodoWrite instead of the task tools; its lists show too.
func TestTodosFromTodoWrite(t *testing.T) {
	t.Parallel()
	b := startBridgeWith(t, bridgeOpts{env: []string{"CLAUDE_CODE_ENABLE_TASKS=0"}})
	b.runPrompt(taskTool("TodoWrite", `{"todos":[{"content":"Write the parser","status":"in_progress","activeForm":"Writing the parser"},`+
		`{"content":"Test it","status":"pending","activeForm":"Testing it"}]}`))
	assert.JSONEq(t, `[{"id":"phase-1","name":"Todos","tasks":[
		{"id":"task-1","content":"Write the parser","status":"in_progress","activeForm":"Writing the parser"},
		{"id":"task-2","content":"Test it","status":"pending","activeForm":"Testing it"}]}]`, b.todoPhases())
}

// TestTodoToolsCanBeTurnedOff: CLAUDE_CODE_ENABLE_TODO_TOOLS=0 in the
// bridge's environment wins over its default; the CLI then has no task
// tools and nothing shows.
func TestTodoToolsCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	b := startBridgeWith(t, bridgeOpts{env: []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=0"}})
	frames := b.runPrompt(taskTool("TaskCreate", `{"subject":"x","description":"y"}`))
	end := last(frames, "tool_execution_end", "")
	assert.True(t, end.Get("isError").Bool(), "%s", end.Raw)
	assert.Equal(t, "Tool TaskCreate not found", end.Get("result.content.0.text").String(), "pi's words for a tool it does not have")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "No such tool available: TaskCreate", "the model gets the CLI's")
	assert.JSONEq(t, `[]`, b.todoPhases())
}
