package claudecli

import (
	"bytes"
	"errors"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// The CLI's tasks: what it runs beside the turn (a sub-agent, task_type
// local_agent; a Bash command, local_bash; a Monitor) announces itself
// with a system task_started line and ends with task_notification, both
// naming its task_id. A task lives in the process that started it: the
// stream transport's process keeps a [taskSet] of what it printed, and a
// host stops one by id (the control request stop_task) or reads a shell
// task's output (get_task_output). Checked on 2.1.328: stop_task answers
// an empty success for any id, one it never ran or that ended too, so
// which ids are the process's is known only from its lines; the stopped
// task ends with task_updated (status killed) and task_notification
// (status stopped).

// Task is a task a CLI process started, as of when it was looked up.
type Task struct {
	// ID is the CLI's task_id.
	ID string
	// Type is its task_type: local_agent (a sub-agent), local_bash (a
	// Bash command), monitor_mcp and others a newer CLI adds.
	Type string
	// ToolUseID is the tool call that started it.
	ToolUseID string
	// Ended: its task_notification came (completed, failed, stopped).
	Ended bool
	// done is closed when its task_notification comes.
	done chan struct{}
}

// Done is closed when the CLI reports the task's end (task_notification).
func (t Task) Done() <-chan struct{} { return t.done }

// keptTasks bounds how many ended tasks a process's set remembers.
const keptTasks = 1024

// taskSet is the tasks one process printed, fed by its reader. Its mutex
// is held for a map access only.
type taskSet struct {
	mu    sync.Mutex
	tasks map[string]*Task
	ended []string // ids of ended tasks, oldest first, at most keptTasks
}

// taskLinePrefix begins every task_* system line (the CLI writes type,
// then subtype, first).
var taskLinePrefix = []byte(`{"type":"system","subtype":"task_`)

// line notes what a line the process printed says about its tasks.
func (ts *taskSet) line(line []byte) {
	if !bytes.HasPrefix(line, taskLinePrefix) {
		return
	}
	v := gjson.GetManyBytes(line, "subtype", "task_id", "task_type", "tool_use_id")
	id := v[1].String()
	if id == "" {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tasks == nil {
		ts.tasks = map[string]*Task{}
	}
	switch v[0].String() {
	case "task_started":
		if ts.tasks[id] == nil {
			ts.tasks[id] = &Task{ID: strings.Clone(id), Type: strings.Clone(v[2].String()), ToolUseID: strings.Clone(v[3].String()),
				done: make(chan struct{})}
		}
	case "task_notification":
		t := ts.tasks[id]
		if t == nil || t.Ended {
			return
		}
		t.Ended = true
		close(t.done)
		ts.ended = append(ts.ended, t.ID)
		if len(ts.ended) > keptTasks {
			delete(ts.tasks, ts.ended[0])
			ts.ended = ts.ended[1:]
		}
	}
}

// get is the task id, when the process printed its start.
func (ts *taskSet) get(id string) (Task, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.tasks[id]; t != nil {
		return *t, true
	}
	return Task{}, false
}

// running is a task of the set's that has not ended, if any.
func (ts *taskSet) running() (string, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, t := range ts.tasks {
		if !t.Ended {
			return id, true
		}
	}
	return "", false
}

// ErrUnknownTask is [Caps.Task]'s answer for an id the running process
// printed no task_started for.
var ErrUnknownTask = errors.New("the running CLI process started no task with this id")

// Task is [Caps.Task]: the task id of the process in use.
func (s *stream) Task(id string) (Task, error) {
	s.mu.Lock()
	sp := s.proc
	s.mu.Unlock()
	if sp == nil || sp.isDead() {
		return Task{}, ErrNotRunning
	}
	if t, ok := sp.tasks.get(id); ok {
		return t, nil
	}
	return Task{}, ErrUnknownTask
}
