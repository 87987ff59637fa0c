package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/transform"
)

// Todos (xcsh's set_todos and get_state.todoPhases), kept in step with the
// CLI's task tools. Measured on 2.1.328: the CLI offers no todo tool unless
// CLAUDE_CODE_ENABLE_TODO_TOOLS=1, which brings TaskCreate {subject,
// description}, TaskUpdate {taskId, status}, TaskList and TaskGet (TodoWrite
// itself is "disabled for this session"). Their results say what changed:
// TaskCreate {task:{id, subject}}, TaskUpdate {success, taskId,
// statusChange:{from, to}} (to "deleted" removes it), TaskList {tasks:[{id,
// subject, status}]}. The bridge turns them on (a pi host expects todos)
// unless the environment already says otherwise.

// todoToolsEnv enables the CLI's task tools.
const todoToolsEnv = "CLAUDE_CODE_ENABLE_TODO_TOOLS"

// todoTask and todoPhase are xcsh's TodoTask and TodoPhase.
type todoTask struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

type todoPhase struct {
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	Tasks []todoTask `json:"tasks"`
}

// cliTodoPhase is the phase holding the CLI's tasks.
const cliTodoPhase = "claude"

var todoStatuses = []string{"pending", "in_progress", "completed"}

// noteTodos follows the CLI's task tool calls in a run's events: a call's
// arguments at its start, the change once its result came back without
// error. Called on the run's goroutine.
func (s *server) noteTodos(r *run, evs []transform.Event) {
	for i := range evs {
		e := &evs[i]
		if !strings.HasPrefix(e.ToolName, "Task") {
			continue
		}
		switch e.Type {
		case transform.EventToolExecutionStart:
			if r.taskArgs == nil {
				r.taskArgs = map[string]json.RawMessage{}
			}
			r.taskArgs[e.ToolCallID] = e.Args
		case transform.EventToolExecutionEnd:
			args := r.taskArgs[e.ToolCallID]
			delete(r.taskArgs, e.ToolCallID)
			if e.IsError || e.Result == nil {
				continue
			}
			s.mu.Lock()
			s.applyTask(e.ToolName, gjson.ParseBytes(args), gjson.ParseBytes(e.Result.Details))
			s.mu.Unlock()
		}
	}
}

// applyTask changes the CLI's phase by one task tool's result. Called with
// s.mu held.
func (s *server) applyTask(tool string, args, res gjson.Result) {
	i := slices.IndexFunc(s.todos, func(p todoPhase) bool { return p.ID == cliTodoPhase })
	if i < 0 {
		s.todos = append(s.todos, todoPhase{ID: cliTodoPhase, Name: "Todos"})
		i = len(s.todos) - 1
	}
	p := &s.todos[i]
	find := func(id string) int { return slices.IndexFunc(p.Tasks, func(t todoTask) bool { return t.ID == id }) }
	switch tool {
	case "TaskCreate":
		if id := res.Get("task.id").String(); id != "" && find(id) < 0 {
			p.Tasks = append(p.Tasks, todoTask{ID: id, Content: res.Get("task.subject").String(), Status: "pending"})
		}
	case "TaskUpdate":
		j := find(res.Get("taskId").String())
		if !res.Get("success").Bool() || j < 0 {
			return
		}
		switch to := res.Get("statusChange.to").String(); {
		case to == "deleted":
			p.Tasks = slices.Delete(p.Tasks, j, j+1)
			return
		case slices.Contains(todoStatuses, to):
			p.Tasks[j].Status = to
		}
		if subject := args.Get("subject").String(); subject != "" {
			p.Tasks[j].Content = subject
		}
	case "TaskList":
		if !res.Get("tasks").IsArray() {
			return
		}
		p.Tasks = p.Tasks[:0]
		for _, t := range res.Get("tasks").Array() {
			st := t.Get("status").String()
			if !slices.Contains(todoStatuses, st) {
				st = "pending"
			}
			p.Tasks = append(p.Tasks, todoTask{ID: t.Get("id").String(), Content: t.Get("subject").String(), Status: st})
		}
	}
}

// setTodos handles set_todos: the host's phases replace the todo state
// (the CLI's own task list is the CLI's: it is not told). Ids missing are
// given ("phase-N", "task-N"); the answer is the normalized list.
func (s *server) setTodos(c command) {
	v := c.raw.Get("phases")
	if !v.IsArray() {
		s.w.send(errResponse(c.id, c.typ, fmt.Sprintf("%s: \"phases\" must be an array, got %s", c.typ, jsonKind(v))))
		return
	}
	phases := []todoPhase{}
	for i, ph := range v.Array() {
		p := todoPhase{ID: ph.Get("id").String(), Name: ph.Get("name").String(), Tasks: []todoTask{}}
		if p.ID == "" {
			p.ID = "phase-" + strconv.Itoa(i+1)
		}
		var err error
		switch {
		case !ph.IsObject():
			err = fmt.Errorf("phases[%d] must be an object", i)
		case strings.TrimSpace(p.Name) == "":
			err = fmt.Errorf("phases[%d] needs a name", i)
		case ph.Get("tasks").Exists() && !ph.Get("tasks").IsArray():
			err = fmt.Errorf("phases[%d].tasks must be an array", i)
		}
		for j, t := range ph.Get("tasks").Array() {
			task := todoTask{ID: t.Get("id").String(), Content: t.Get("content").String(), Status: t.Get("status").String()}
			if task.ID == "" {
				task.ID = "task-" + strconv.Itoa(j+1)
			}
			if task.Status == "" {
				task.Status = "pending"
			}
			switch {
			case err != nil:
			case !t.IsObject() || strings.TrimSpace(task.Content) == "":
				err = fmt.Errorf("phases[%d].tasks[%d] needs a \"content\"", i, j)
			case !slices.Contains(todoStatuses, task.Status):
				err = fmt.Errorf("phases[%d].tasks[%d]: status must be one of %s, got %q", i, j, strings.Join(todoStatuses, ", "), task.Status)
			}
			p.Tasks = append(p.Tasks, task)
		}
		if err != nil {
			s.w.send(errResponse(c.id, c.typ, c.typ+": "+err.Error()))
			return
		}
		phases = append(phases, p)
	}
	s.mu.Lock()
	s.todos = phases
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"todoPhases": phases}))
}

// todoPhases is get_state's copy. Called with s.mu held.
func (s *server) todoPhases() []todoPhase {
	out := make([]todoPhase, len(s.todos))
	for i, p := range s.todos {
		out[i] = todoPhase{ID: p.ID, Name: p.Name, Tasks: append([]todoTask{}, p.Tasks...)}
	}
	return out
}
