package transform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replay runs a recording through a translator and a todo list, as the
// bridge does, and returns the list after each change.
func replay(t *testing.T, name string, todos *Todos) [][]TodoPhase {
	t.Helper()
	for _, rec := range recordings(t) {
		if rec.name != name {
			continue
		}
		var states [][]TodoPhase
		for _, ev := range translate(rec, rec.lines, finish) {
			if todos.Observe(&ev) {
				states = append(states, todos.Phases())
			}
		}
		return states
	}
	t.Fatalf("no recording %s: run go run ./scripts/record -run %s", name, name)
	return nil
}

func phase(tasks ...TodoTask) []TodoPhase {
	return []TodoPhase{{ID: defaultTodoPhaseID, Name: defaultTodoPhaseName, Tasks: tasks}}
}

// TestTodosFromTaskTools replays the CLI's task tools (recorded): created
// tasks carry the CLI's ids, updates and deletes apply once the CLI
// answered them, the refused and the failed update change nothing, and the
// list and get that end the run agree with what came before.
func TestTodosFromTaskTools(t *testing.T) {
	var todos Todos
	states := replay(t, "todos-tasks", &todos)
	parser := TodoTask{ID: "1", Content: "Write the parser", Status: TodoPending, Notes: "Parse the input", ActiveForm: "Writing the parser"}
	test := TodoTask{ID: "2", Content: "Test it", Status: TodoPending, Notes: "Add tests"}
	require.GreaterOrEqual(t, len(states), 7, "%v", states)
	assert.Equal(t, phase(parser), states[0], "TaskCreate")
	assert.Equal(t, phase(parser, test), states[1], "TaskCreate")
	parser.Status = TodoInProgress
	assert.Equal(t, phase(parser, test), states[2], "TaskUpdate status")
	test.Content, test.Status = "Test the parser", TodoCompleted
	assert.Equal(t, phase(parser, test), states[3], "TaskUpdate subject and status")
	drop := TodoTask{ID: "3", Content: "Drop me", Status: TodoPending, Notes: "Not needed"}
	assert.Equal(t, phase(parser, test, drop), states[4], "TaskCreate")
	assert.Equal(t, phase(parser, test), states[5], "TaskUpdate deleted")
	ship := TodoTask{ID: "4", Content: "Ship it", Status: TodoPending, Notes: "Release"}
	assert.Equal(t, phase(parser, test, ship), states[6], "TaskCreate after a failed and a refused update")
	assert.Equal(t, phase(parser, test, ship), todos.Phases(), "TaskList and TaskGet agree")
	for _, s := range states[7:] {
		assert.Equal(t, phase(parser, test, ship), s)
	}
}

// TestTodosFromTodoWrite replays the CLI's older TodoWrite (recorded): each
// write is the whole list; a task keeps its id while its text stays.
func TestTodosFromTodoWrite(t *testing.T) {
	var todos Todos
	states := replay(t, "todos-todowrite", &todos)
	require.Len(t, states, 2)
	assert.Equal(t, phase(
		TodoTask{ID: "task-1", Content: "Write the parser", Status: TodoInProgress, ActiveForm: "Writing the parser"},
		TodoTask{ID: "task-2", Content: "Test it", Status: TodoPending, ActiveForm: "Testing it"},
	), states[0])
	assert.Equal(t, phase(
		TodoTask{ID: "task-1", Content: "Write the parser", Status: TodoCompleted, ActiveForm: "Writing the parser"},
		TodoTask{ID: "task-3", Content: "Ship it", Status: TodoInProgress, ActiveForm: "Shipping it"},
	), states[1])
}

// call and result are the events of one tool call.
func call(id, name, args string) Event {
	return Event{Type: EventToolExecutionStart, ToolCallID: id, ToolName: name, Args: json.RawMessage(args)}
}

func result(id, text, details string) Event {
	ev := Event{Type: EventToolExecutionEnd, ToolCallID: id, Result: &ToolResult{Content: []Content{TextContent(text)}}}
	if details != "" {
		ev.Result.Details = json.RawMessage(details)
	}
	return ev
}

func observe(todos *Todos, evs ...Event) (changed bool) {
	for i := range evs {
		if todos.Observe(&evs[i]) {
			changed = true
		}
	}
	return changed
}

// TestTodosHostListMeetsTheModel: tasks the host set become the model's
// when it creates them with the same text, keep the host's ids and follow
// the CLI's updates; a CLI id the host uses already is not reused; a list
// sent back by the host keeps its CLI tasks.
func TestTodosHostListMeetsTheModel(t *testing.T) {
	var todos Todos
	todos.Set([]TodoPhase{
		{ID: "p1", Name: "Plan", Tasks: []TodoTask{{ID: "1", Content: "Read the code", Status: TodoInProgress}}},
		{ID: "p2", Name: "Build", Tasks: []TodoTask{{ID: "b", Content: "Write the parser", Status: TodoPending}}},
	})
	assert.Contains(t, todos.Reminder(), "- [in_progress] Read the code\n")
	assert.Contains(t, todos.Reminder(), "Build:\n- [pending] Write the parser\n")

	require.True(t, observe(&todos,
		call("c1", toolTaskCreate, `{"subject":"write the parser ","description":"Parse"}`),
		result("c1", "Task #1 created successfully: write the parser ", `{"task":{"id":"1","subject":"write the parser "}}`),
		call("c2", toolTaskCreate, `{"subject":"Something else","description":"x"}`),
		result("c2", "Task #2 created successfully: Something else", ""), // no structured result: the text says the id
		call("c3", toolTaskUpdate, `{"taskId":"1","status":"in_progress"}`),
		result("c3", "Updated task #1 status", `{"success":true}`),
	))
	got := todos.Phases()
	assert.Equal(t, []TodoTask{{ID: "1", Content: "Read the code", Status: TodoInProgress}}, got[0].Tasks, "not the CLI's task 1")
	assert.Equal(t, []TodoTask{
		{ID: "b", Content: "Write the parser", Status: TodoInProgress, Notes: "Parse"},
		{ID: "2", Content: "Something else", Status: TodoPending, Notes: "x"},
	}, got[1].Tasks)
	assert.Contains(t, todos.Reminder(), "- [in_progress] #1 Write the parser\n")

	// The host sends the list back with a change: the CLI's tasks stay
	// linked, so the model's next update still lands.
	got[1].Tasks[0].Status = TodoCompleted
	todos.Set(got)
	require.True(t, observe(&todos,
		call("c4", toolTaskUpdate, `{"taskId":"2","status":"completed"}`),
		result("c4", "Updated task #2 status", `{"success":true}`),
	))
	assert.Equal(t, TodoCompleted, todos.Phases()[1].Tasks[1].Status)

	// The CLI's task 3 while the host has a task "3" of its own.
	todos.Set([]TodoPhase{{ID: "p", Name: "P", Tasks: []TodoTask{{ID: "3", Content: "Mine", Status: TodoPending}}}})
	require.True(t, observe(&todos,
		call("c5", toolTaskCreate, `{"subject":"Theirs","description":""}`),
		result("c5", "Task #3 created successfully: Theirs", `{"task":{"id":"3"}}`),
	))
	assert.Equal(t, []TodoTask{{ID: "3", Content: "Mine", Status: TodoPending}, {ID: "claude-3", Content: "Theirs", Status: TodoPending}},
		todos.Phases()[0].Tasks)
}

// TestTodosIgnoreWhatDidNotHappen: calls that failed, were refused, were
// never answered, or name tasks the list never saw change nothing; a list
// read that a write may have overtaken is not trusted.
func TestTodosIgnoreWhatDidNotHappen(t *testing.T) {
	start := func() *Todos {
		var todos Todos
		observe(&todos, call("c0", toolTaskCreate, `{"subject":"A","description":"a"}`),
			result("c0", "Task #1 created successfully: A", `{"task":{"id":"1"}}`))
		return &todos
	}
	failed := result("c1", "<tool_use_error>InputValidationError</tool_use_error>", "")
	failed.IsError = true
	for name, evs := range map[string][]Event{
		"refused": {call("c1", toolTaskUpdate, `{"taskId":"1","status":"done"}`), failed},
		"not found": {call("c1", toolTaskUpdate, `{"taskId":"1","status":"completed"}`),
			result("c1", "Task not found", `{"success":false,"error":"Task not found"}`)},
		"unknown task": {call("c1", toolTaskUpdate, `{"taskId":"7","status":"completed"}`),
			result("c1", "Updated task #7 status", `{"success":true}`)},
		"asked only":                {call("c1", toolTaskUpdate, `{"taskId":"1","status":"completed"}`)},
		"answer to an unknown call": {result("c9", "Updated task #1 status", `{"success":true}`)},
		"other tool":                {call("c1", "Bash", `{"command":"ls"}`), result("c1", "Task #5 created successfully: x", "")},
		"list overtaken by a write": {
			call("c1", toolTaskList, `{}`), call("c2", toolTaskUpdate, `{"taskId":"9"}`),
			result("c1", "", `{"tasks":[]}`), result("c2", "Task not found", `{"success":false}`)},
		"list during a write": {
			call("c2", toolTaskUpdate, `{"taskId":"9"}`), call("c1", toolTaskList, `{}`),
			result("c2", "Task not found", `{"success":false}`), result("c1", "", `{"tasks":[]}`)},
		"a call of an aborted run": {
			call("c1", toolTaskUpdate, `{"taskId":"1","status":"completed"}`),
			{Type: EventMessageStart, Message: Message{Role: RoleAssistant}},
			result("c1", "Updated task #1 status", `{"success":true}`)},
	} {
		t.Run(name, func(t *testing.T) {
			todos := start()
			before := todos.Phases()
			assert.False(t, observe(todos, evs...))
			assert.Equal(t, before, todos.Phases())
		})
	}
}

// TestTodosListIsTheCLIs: a TaskList that ran alone is the CLI's list: its
// tasks are added or updated, CLI tasks it lacks are gone, host tasks the
// model never created stay.
func TestTodosListIsTheCLIs(t *testing.T) {
	var todos Todos
	todos.Set(phase(TodoTask{ID: "h", Content: "Host only", Status: TodoPending}))
	observe(&todos,
		call("c1", toolTaskCreate, `{"subject":"Gone","description":""}`),
		result("c1", "Task #1 created successfully: Gone", ""),
		call("c2", toolTaskCreate, `{"subject":"Kept","description":""}`),
		result("c2", "Task #2 created successfully: Kept", ""))
	require.True(t, observe(&todos,
		call("c3", toolTaskList, `{}`),
		result("c3", "", `{"tasks":[{"id":"2","subject":"Kept","status":"completed"},{"id":"5","subject":"From a subagent","status":"in_progress"}]}`)))
	assert.Equal(t, phase(
		TodoTask{ID: "h", Content: "Host only", Status: TodoPending},
		TodoTask{ID: "2", Content: "Kept", Status: TodoCompleted},
		TodoTask{ID: "5", Content: "From a subagent", Status: TodoInProgress},
	), todos.Phases())
}

func TestTodosResetAndEmpty(t *testing.T) {
	var todos Todos
	assert.Equal(t, []TodoPhase{}, todos.Phases())
	assert.Contains(t, todos.Reminder(), "to empty")
	todos.Set(phase())
	b, err := json.Marshal(todos.Phases())
	require.NoError(t, err)
	assert.JSONEq(t, `[{"id":"phase-1","name":"Todos","tasks":[]}]`, string(b))
	todos.Reset()
	assert.Equal(t, []TodoPhase{}, todos.Phases())
}

func TestNextTodoNumber(t *testing.T) {
	assert.Equal(t, 1, NextTodoNumber(nil, "task-"))
	assert.Equal(t, 3, NextTodoNumber([]string{"task-2", "x-9", "task-a", "task-1"}, "task-"))
}
