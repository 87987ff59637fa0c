package bridge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/transform"
)

// todoToolsEnv turns on the CLI's todo tools (TaskCreate, TaskGet,
// TaskList, TaskUpdate). On 2.1.328 they are off by default for current
// models, and a host speaking pi's protocol expects todos (todoPhases in
// get_state), so the bridge sets it ([server.cliConfig]) unless the
// environment says otherwise: CLAUDE_CODE_ENABLE_TODO_TOOLS=0 keeps them
// off. With CLAUDE_CODE_ENABLE_TASKS=0 as well, the CLI offers its older
// TodoWrite instead, which [transform.Todos] follows too.
const todoToolsEnv = "CLAUDE_CODE_ENABLE_TODO_TOOLS"

// todoState is the session's todo list (todoPhases) and whether the model
// is to hear of it. Guarded by state.mu.
type todoState struct {
	list transform.Todos
	// tell is set when the host set the list: the next prompt carries it
	// to the model, which otherwise would not know (the CLI keeps its own
	// task list).
	tell bool
}

// setTodos handles set_todos: the host replaces the session's todo list.
// The answer is the list as stored (ids and statuses filled in), as xcsh
// answers: {todoPhases}. The model hears of it with the next prompt.
func (s *server) setTodos(c *call) (any, error) {
	phases, err := parseTodoPhases(c.raw.Get("phases"))
	if err != nil {
		return nil, fmt.Errorf("set_todos: %w", err)
	}
	return todosData{TodoPhases: s.st.setTodos(phases)}, nil
}

// parseTodoPhases validates set_todos' phases and normalizes them: names
// and texts trimmed, missing ids given ("phase-N", "task-N", after the
// highest given), missing statuses "pending". Ids must be unique (phases
// among phases, tasks among all tasks). Fields it does not know are
// dropped.
func parseTodoPhases(v gjson.Result) ([]transform.TodoPhase, error) {
	if !v.Exists() || v.Type == gjson.Null {
		return nil, fmt.Errorf("missing required field \"phases\"")
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("\"phases\" must be an array, got %s", jsonKind(v))
	}
	var phases []transform.TodoPhase
	phaseIDs, taskIDs := map[string]bool{}, map[string]bool{}
	for i, pv := range v.Array() {
		at := fmt.Sprintf("phases[%d]", i)
		if !pv.IsObject() {
			return nil, fmt.Errorf("%s must be an object, got %s", at, jsonKind(pv))
		}
		var p transform.TodoPhase
		var err error
		if p.ID, err = optText(pv, at, "id"); err != nil {
			return nil, err
		}
		if p.Name, err = optText(pv, at, "name"); err != nil {
			return nil, err
		}
		if p.Name == "" {
			return nil, fmt.Errorf("%s.name: a phase needs a name", at)
		}
		if p.ID != "" && phaseIDs[p.ID] {
			return nil, fmt.Errorf("%s.id: %q is the id of another phase", at, p.ID)
		}
		phaseIDs[p.ID] = true
		tv := pv.Get("tasks")
		if tv.Exists() && tv.Type != gjson.Null && !tv.IsArray() {
			return nil, fmt.Errorf("%s.tasks must be an array, got %s", at, jsonKind(tv))
		}
		p.Tasks = []transform.TodoTask{}
		for j, kv := range tv.Array() {
			at := fmt.Sprintf("%s.tasks[%d]", at, j)
			k, err := parseTodoTask(kv, at)
			if err != nil {
				return nil, err
			}
			if k.ID != "" && taskIDs[k.ID] {
				return nil, fmt.Errorf("%s.id: %q is the id of another task", at, k.ID)
			}
			taskIDs[k.ID] = true
			p.Tasks = append(p.Tasks, k)
		}
		phases = append(phases, p)
	}
	fillIDs(phases)
	return phases, nil
}

func parseTodoTask(v gjson.Result, at string) (transform.TodoTask, error) {
	var k transform.TodoTask
	if !v.IsObject() {
		return k, fmt.Errorf("%s must be an object, got %s", at, jsonKind(v))
	}
	var err error
	for _, f := range []struct {
		name string
		to   *string
	}{{"id", &k.ID}, {"content", &k.Content}, {"status", &k.Status}, {"notes", &k.Notes}, {"activeForm", &k.ActiveForm}} {
		if *f.to, err = optText(v, at, f.name); err != nil {
			return k, err
		}
	}
	switch {
	case k.Content == "":
		return k, fmt.Errorf("%s.content: a task needs a text", at)
	case k.Status == "":
		k.Status = transform.TodoPending
	case !slices.Contains(transform.TodoStatuses, k.Status):
		return k, fmt.Errorf("%s.status must be one of %s, got %q", at, strings.Join(transform.TodoStatuses, ", "), k.Status)
	}
	return k, nil
}

// optText returns an optional string field, trimmed ("" when absent or
// null).
func optText(obj gjson.Result, at, field string) (string, error) {
	v := obj.Get(gjson.Escape(field))
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return "", nil
	case v.Type != gjson.String:
		return "", fmt.Errorf("%s.%s must be a string, got %s", at, field, jsonKind(v))
	}
	return strings.TrimSpace(v.String()), nil
}

// fillIDs gives the phases and tasks without an id the next "phase-N" and
// "task-N".
func fillIDs(phases []transform.TodoPhase) {
	var pids, tids []string
	for _, p := range phases {
		pids = append(pids, p.ID)
		for _, k := range p.Tasks {
			tids = append(tids, k.ID)
		}
	}
	np, nt := transform.NextTodoNumber(pids, "phase-"), transform.NextTodoNumber(tids, "task-")
	for i := range phases {
		if phases[i].ID == "" {
			phases[i].ID = "phase-" + strconv.Itoa(np)
			np++
		}
		for j := range phases[i].Tasks {
			if phases[i].Tasks[j].ID == "" {
				phases[i].Tasks[j].ID = "task-" + strconv.Itoa(nt)
				nt++
			}
		}
	}
}

// noteTodos keeps the todo list in step with the CLI's todo tool calls
// among a line's events. Most lines have none; only those take the lock.
func (s *server) noteTodos(evs []transform.Event) {
	for i := range evs {
		switch evs[i].Type {
		case transform.EventToolExecutionStart, transform.EventToolExecutionEnd, transform.EventMessageStart:
		default:
			continue
		}
		s.st.observeTodos(evs[i:])
		return
	}
}

// takeTodoContext returns the todo list for the model, to follow the next
// prompt's text, once after the host set it; else "". It follows rather
// than leads, as the CLI's own reminders do: the user's words come first.
// Called with st.mu held.
func (ls *lockedState) takeTodoContext() string {
	if !ls.todos.tell {
		return ""
	}
	ls.todos.tell = false
	return "\n\n" + ls.todos.list.Reminder()
}
