package transform

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Statuses of a todo task: those of xcsh's TodoStatus. The CLI's todo tools
// know the first three (and "deleted", which removes a task).
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
	TodoAbandoned  = "abandoned"
)

// TodoStatuses are the statuses a task may have, in the order of work.
var TodoStatuses = []string{TodoPending, TodoInProgress, TodoCompleted, TodoAbandoned}

// The phase the CLI's tasks go to when the list has none: the CLI's tools
// know no phases.
const (
	defaultTodoPhaseID   = "phase-1"
	defaultTodoPhaseName = "Todos"
)

// TodoPhase is a named group of tasks: xcsh's TodoPhase, as get_state's
// todoPhases and set_todos carry it.
type TodoPhase struct {
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	Tasks []TodoTask `json:"tasks"`
}

// TodoTask is one task: xcsh's TodoItem. Notes is the CLI task's
// description; ActiveForm (claude-rpc's addition) is the CLI's
// present-continuous form of the task ("Running tests").
type TodoTask struct {
	ID         string `json:"id"`
	Content    string `json:"content"`
	Status     string `json:"status"`
	Notes      string `json:"notes,omitempty"`
	ActiveForm string `json:"activeForm,omitempty"`

	// cliID is the id of the CLI task this one is, "" for a task only the
	// host knows (set with set_todos and not yet created by the model).
	cliID string
}

// Names of the CLI's todo tools (2.1.328). TaskCreate, TaskGet, TaskList and
// TaskUpdate are on with CLAUDE_CODE_ENABLE_TODO_TOOLS=1; TodoWrite, their
// predecessor, replaces them when CLAUDE_CODE_ENABLE_TASKS=0 is set too.
const (
	toolTaskCreate = "TaskCreate"
	toolTaskGet    = "TaskGet"
	toolTaskList   = "TaskList"
	toolTaskUpdate = "TaskUpdate"
	toolTodoWrite  = "TodoWrite"
)

// Todos is a session's todo list, kept in step with the CLI's todo tools by
// [Todos.Observe] and replaced by the host with [Todos.Set]. The CLI keeps
// its own task list (per session, on disk, across --resume); Todos mirrors
// it from the results of the tool calls that change or read it, so a
// change shows once the CLI has made it, never when the model merely asked.
//
// Tasks the model created carry the CLI's ids ("1", "2", …) unless the
// host's list uses that id already. A task the host set and the model then
// creates with the same text becomes that task: it keeps the host's id and
// follows the CLI's updates.
//
// The zero value is an empty list. Not safe for concurrent use.
type Todos struct {
	phases []TodoPhase
	calls  map[string]*todoCall // todo tool calls started, not yet answered, by tool call id
	// writesStarted counts the calls that change the CLI's list, and
	// writing those running: a list read while one ran may be stale.
	writesStarted, writing int
}

// todoCall is a running call of a todo tool.
type todoCall struct {
	name string
	args gjson.Result
	// For a read: whether a write could have changed the list while it
	// ran (one was running when it started, or one started since).
	writing    bool
	writesSeen int
}

// Phases returns a copy of the list, as the host sees it; never nil.
func (t *Todos) Phases() []TodoPhase {
	out := make([]TodoPhase, len(t.phases))
	for i, p := range t.phases {
		out[i] = TodoPhase{ID: p.ID, Name: p.Name, Tasks: make([]TodoTask, len(p.Tasks))}
		for j, k := range p.Tasks {
			k.cliID = ""
			out[i].Tasks[j] = k
		}
	}
	return out
}

// Set replaces the list with phases (valid and normalized: see the bridge's
// set_todos). A task keeping the id of a task that was a CLI task stays
// that CLI task, so a host that sends back the list with a status changed
// keeps it in step with what the model does next.
func (t *Todos) Set(phases []TodoPhase) {
	cli := map[string]string{}
	for _, p := range t.phases {
		for _, k := range p.Tasks {
			if k.cliID != "" {
				cli[k.ID] = k.cliID
			}
		}
	}
	t.phases = make([]TodoPhase, len(phases))
	for i, p := range phases {
		p.Tasks = slices.Clone(p.Tasks)
		for j := range p.Tasks {
			p.Tasks[j].cliID = cli[p.Tasks[j].ID]
		}
		t.phases[i] = p
	}
}

// Reset empties the list (a new session).
func (t *Todos) Reset() { *t = Todos{} }

// Observe follows the CLI's todo tool calls in a run's events: a call's
// start keeps its arguments, its successful end applies it. It reports
// whether the list changed.
func (t *Todos) Observe(ev *Event) bool {
	switch ev.Type {
	case EventMessageStart:
		if ev.Message.Role == RoleAssistant {
			// The CLI answers every call before the next model call: calls
			// still open were never answered (an aborted run).
			t.calls, t.writing = nil, 0
		}
	case EventToolExecutionStart:
		if !isTodoTool(ev.ToolName) {
			return false
		}
		c := &todoCall{name: ev.ToolName, args: gjson.ParseBytes(ev.Args), writing: t.writing > 0, writesSeen: t.writesStarted}
		if isTodoWrite(c.name) {
			t.writesStarted++
			t.writing++
		}
		if t.calls == nil {
			t.calls = map[string]*todoCall{}
		}
		t.calls[ev.ToolCallID] = c
	case EventToolExecutionEnd:
		c := t.calls[ev.ToolCallID]
		if c == nil {
			return false
		}
		delete(t.calls, ev.ToolCallID)
		if isTodoWrite(c.name) {
			t.writing--
		}
		if ev.IsError || ev.Result == nil {
			return false
		}
		var details gjson.Result
		if len(ev.Result.Details) > 0 {
			details = gjson.ParseBytes(ev.Result.Details)
		}
		var text string
		if len(ev.Result.Content) > 0 {
			text = ev.Result.Content[0].Text
		}
		switch c.name {
		case toolTaskCreate:
			return t.created(c.args, details, text)
		case toolTaskUpdate:
			return t.updated(c.args, details, text)
		case toolTodoWrite:
			return t.wrote(c.args, details)
		}
		// A read shows the CLI's list as it was when it ran; one that a
		// write may have overtaken is not trusted.
		if c.writing || c.writesSeen != t.writesStarted {
			return false
		}
		if c.name == toolTaskList {
			return t.listed(details.Get("tasks"))
		}
		if task := details.Get("task"); task.IsObject() {
			return t.got(task)
		}
	}
	return false
}

func isTodoTool(name string) bool {
	switch name {
	case toolTaskCreate, toolTaskGet, toolTaskList, toolTaskUpdate, toolTodoWrite:
		return true
	}
	return false
}

// isTodoWrite tells the tools that change the CLI's list.
func isTodoWrite(name string) bool {
	return name == toolTaskCreate || name == toolTaskUpdate || name == toolTodoWrite
}

// createdRE reads the task id from TaskCreate's text result, for when the
// structured result is missing.
var createdRE = regexp.MustCompile(`^Task #(\S+) created successfully`)

// created applies a TaskCreate, whose result names the new task's id
// ({"task":{"id":"1","subject":…,"description":…}}); the task is pending.
func (t *Todos) created(args, details gjson.Result, text string) bool {
	id := details.Get("task.id").String()
	if id == "" {
		if m := createdRE.FindStringSubmatch(text); m != nil {
			id = m[1]
		}
	}
	subject := args.Get("subject").String()
	if subject == "" {
		subject = details.Get("task.subject").String()
	}
	if id == "" || subject == "" {
		return false
	}
	notes, active := args.Get("description").String(), args.Get("activeForm").String()
	if k := t.find(func(k *TodoTask) bool { return k.cliID == id }); k != nil {
		// The CLI reused an id (its list was reset): the task is new.
		k.Content, k.Status, k.Notes, k.ActiveForm = subject, TodoPending, notes, active
		return true
	}
	// The model created a task the host set: that task it is, with the
	// host's id and status.
	if k := t.find(func(k *TodoTask) bool { return k.cliID == "" && sameText(k.Content, subject) }); k != nil {
		k.cliID = id
		if notes != "" {
			k.Notes = notes
		}
		if active != "" {
			k.ActiveForm = active
		}
		return true
	}
	t.add(TodoTask{ID: t.freeID(id), Content: subject, Status: TodoPending, Notes: notes, ActiveForm: active, cliID: id})
	return true
}

// updated applies a TaskUpdate, which changes the fields its arguments name;
// status "deleted" removes the task. A failed update ("Task not found") is
// no error for the CLI: its result says success:false.
func (t *Todos) updated(args, details gjson.Result, text string) bool {
	if ok := details.Get("success"); ok.Exists() && !ok.Bool() || !ok.Exists() && !strings.HasPrefix(text, "Updated task #") {
		return false
	}
	id := args.Get("taskId").String()
	k := t.find(func(k *TodoTask) bool { return k.cliID == id })
	if id == "" || k == nil {
		return false // a task this list never saw created
	}
	if args.Get("status").String() == "deleted" {
		t.remove(k)
		return true
	}
	if s := args.Get("status").String(); slices.Contains(TodoStatuses, s) {
		k.Status = s
	}
	if v := args.Get("subject"); v.Type == gjson.String && v.String() != "" {
		k.Content = v.String()
	}
	if v := args.Get("description"); v.Type == gjson.String {
		k.Notes = v.String()
	}
	if v := args.Get("activeForm"); v.Type == gjson.String {
		k.ActiveForm = v.String()
	}
	return true
}

// wrote applies a TodoWrite: the whole list, without ids
// ({"oldTodos":[…],"newTodos":[{content,status,activeForm}]}). A task keeps
// its id and phase when one with the same text was there; new ones get the
// next "task-N" and go to the last phase; the others are gone, and so are
// the phases left empty.
func (t *Todos) wrote(args, details gjson.Result) bool {
	todos := details.Get("newTodos")
	if !todos.IsArray() {
		todos = args.Get("todos")
	}
	if !todos.IsArray() {
		return false
	}
	if len(t.phases) == 0 {
		t.phases = []TodoPhase{{ID: defaultTodoPhaseID, Name: defaultTodoPhaseName}}
	}
	next := nextNumber(t.phases, "task-")
	used := map[*TodoTask]bool{}
	placed := make([][]TodoTask, len(t.phases))
	for _, td := range todos.Array() {
		content := td.Get("content").String()
		if content == "" {
			continue
		}
		status := td.Get("status").String()
		if !slices.Contains(TodoStatuses, status) {
			status = TodoPending
		}
		task := TodoTask{Content: content, Status: status, ActiveForm: td.Get("activeForm").String()}
		phase := len(t.phases) - 1
		for i := range t.phases {
			for j := range t.phases[i].Tasks {
				k := &t.phases[i].Tasks[j]
				if !used[k] && task.ID == "" && sameText(k.Content, content) {
					used[k] = true
					task.ID, task.Notes, phase = k.ID, k.Notes, i
				}
			}
		}
		if task.ID == "" {
			task.ID = "task-" + strconv.Itoa(next)
			next++
		}
		placed[phase] = append(placed[phase], task)
	}
	var phases []TodoPhase
	for i, p := range t.phases {
		if len(placed[i]) > 0 {
			phases = append(phases, TodoPhase{ID: p.ID, Name: p.Name, Tasks: placed[i]})
		}
	}
	t.phases = phases
	return true
}

// listed applies a TaskList: every CLI task, {id, subject, status}. Tasks
// the CLI no longer has are gone; host tasks the model has not created
// stay.
func (t *Todos) listed(tasks gjson.Result) bool {
	if !tasks.IsArray() {
		return false
	}
	have := map[string]bool{}
	for _, task := range tasks.Array() {
		have[task.Get("id").String()] = true
		t.got(task)
	}
	for i := range t.phases {
		t.phases[i].Tasks = slices.DeleteFunc(t.phases[i].Tasks, func(k TodoTask) bool { return k.cliID != "" && !have[k.cliID] })
	}
	return true
}

// got applies what a TaskGet or TaskList says of one CLI task.
func (t *Todos) got(task gjson.Result) bool {
	id, subject := task.Get("id").String(), task.Get("subject").String()
	if id == "" || subject == "" {
		return false
	}
	status := task.Get("status").String()
	if !slices.Contains(TodoStatuses, status) {
		status = TodoPending
	}
	k := t.find(func(k *TodoTask) bool { return k.cliID == id })
	if k == nil {
		k = t.find(func(k *TodoTask) bool { return k.cliID == "" && sameText(k.Content, subject) })
	}
	if k == nil {
		t.add(TodoTask{ID: t.freeID(id), Content: subject, Status: status, Notes: task.Get("description").String(), cliID: id})
		return true
	}
	k.cliID, k.Content, k.Status = id, subject, status
	if d := task.Get("description"); d.Exists() {
		k.Notes = d.String()
	}
	return true
}

// find returns the first task match accepts, or nil.
func (t *Todos) find(match func(*TodoTask) bool) *TodoTask {
	for i := range t.phases {
		for j := range t.phases[i].Tasks {
			if k := &t.phases[i].Tasks[j]; match(k) {
				return k
			}
		}
	}
	return nil
}

// add appends a task to the last phase, the default one when there is none.
func (t *Todos) add(k TodoTask) {
	if len(t.phases) == 0 {
		t.phases = []TodoPhase{{ID: defaultTodoPhaseID, Name: defaultTodoPhaseName}}
	}
	p := &t.phases[len(t.phases)-1]
	p.Tasks = append(p.Tasks, k)
}

// remove takes task k (a pointer into the list) out of its phase.
func (t *Todos) remove(k *TodoTask) {
	for i := range t.phases {
		p := &t.phases[i]
		for j := range p.Tasks {
			if &p.Tasks[j] == k {
				p.Tasks = slices.Delete(p.Tasks, j, j+1)
				return
			}
		}
	}
}

// freeID is id when no task has it yet, else "claude-<id>" (then with a
// number).
func (t *Todos) freeID(id string) string {
	taken := func(s string) bool { return t.find(func(k *TodoTask) bool { return k.ID == s }) != nil }
	if !taken(id) {
		return id
	}
	c := "claude-" + id
	for n := 2; taken(c); n++ {
		c = fmt.Sprintf("claude-%s-%d", id, n)
	}
	return c
}

// NextTodoNumber returns the number for the next generated id: one more
// than the largest m for which prefix+m is in ids, 1 when there is none
// ("task-3" after "task-2").
func NextTodoNumber(ids []string, prefix string) int {
	n := 1
	for _, id := range ids {
		if m, err := strconv.Atoi(strings.TrimPrefix(id, prefix)); err == nil && strings.HasPrefix(id, prefix) && m >= n {
			n = m + 1
		}
	}
	return n
}

// nextNumber is NextTodoNumber over the ids of the list's tasks.
func nextNumber(phases []TodoPhase, prefix string) int {
	var ids []string
	for _, p := range phases {
		for _, k := range p.Tasks {
			ids = append(ids, k.ID)
		}
	}
	return NextTodoNumber(ids, prefix)
}

// sameText compares two task texts as a reader would: case and the space
// around them aside.
func sameText(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// Reminder is the todo list as context for the model, sent with the next
// prompt after the host set it: which tasks there are, and which the CLI's
// list lacks (no "#id"), so the model can bring its own list in step.
func (t *Todos) Reminder() string {
	var b strings.Builder
	b.WriteString("<system-reminder>\nThe user set your todo list")
	if n := t.count(); n == 0 {
		b.WriteString(" to empty: remove the tasks you track (TaskUpdate with status \"deleted\", or TodoWrite with no todos).\n</system-reminder>")
		return b.String()
	}
	b.WriteString(" to the following (replacing the one before).\n")
	for _, p := range t.phases {
		if len(t.phases) > 1 {
			fmt.Fprintf(&b, "%s:\n", p.Name)
		}
		for _, k := range p.Tasks {
			fmt.Fprintf(&b, "- [%s] ", k.Status)
			if k.cliID != "" {
				fmt.Fprintf(&b, "#%s ", k.cliID)
			}
			b.WriteString(k.Content)
			b.WriteByte('\n')
		}
	}
	b.WriteString("Keep your own task list in step with it: create the tasks without a #id " +
		"(TaskCreate, with the text above as the subject; or TodoWrite with the whole list), " +
		"and give those with a #id the status shown (TaskUpdate).\n</system-reminder>")
	return b.String()
}

func (t *Todos) count() int {
	n := 0
	for _, p := range t.phases {
		n += len(p.Tasks)
	}
	return n
}
