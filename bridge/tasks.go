package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// The CLI's tasks, one at a time: stop_task, get_task_output and
// background_tasks, the host's side of the CLI's control requests of the
// same names (omp has no command for them; these are claude-rpc's). A task
// is what the CLI runs beside its turn: a sub-agent (its id is the one
// subagent_lifecycle and get_subagents show) or a background Bash command
// (its id is in the tool's result, "Command running in background with
// ID: …"). Tasks live in the CLI process, so these need the stream
// transport, whose process runs on between turns; each handler sends its
// request with no lock held, on a goroutine of its own (kind slow), and
// touches none of the bridge's state: what follows (the task's end) comes
// through the CLI's lines as any other, a sub-agent's subagent_lifecycle
// with status aborted, a Bash task's notification to the model.
//
// abort and the tasks: the bridge does not declare the CLI's
// perTaskStopAffordance in initialize, so an interrupt (abort during a
// run) stops the background tasks too, as pi's abort stops everything
// (checked on 2.1.328: a background sub-agent ends with status stopped at
// the interrupt); stop_task stops one, leaving the run and the others be.
// abort while idle sends nothing to the CLI and stops no task.

// taskCaps is the running CLI's task requests, or why there are none.
func (s *server) taskCaps(c *call) (claudecli.Caps, error) {
	t, err := s.transportCtx(c.Context())
	if err != nil {
		return claudecli.Caps{}, err
	}
	caps := t.Caps()
	if caps.ControlRequest == nil || caps.Task == nil {
		return caps, fmt.Errorf("%s needs the stream transport: with --transport %s the CLI's process, and the tasks it ran, end with each turn", c.typ, t.Name())
	}
	return caps, nil
}

// task is the task a call names by taskId, with a clear error for an id
// the running CLI does not know.
func task(c *call, caps claudecli.Caps) (claudecli.Task, error) {
	id := c.str("taskId")
	t, err := caps.Task(id)
	switch {
	case errors.Is(err, claudecli.ErrNotRunning):
		return t, fmt.Errorf("%s: no CLI process runs now, and no task with it: %s", c.typ, id)
	case errors.Is(err, claudecli.ErrUnknownTask):
		return t, fmt.Errorf("Unknown task: %q (no sub-agent or background task of the running CLI has this id)", id)
	}
	return t, err
}

// stopTaskWait bounds how long stop_task waits for the CLI to report the
// task's end once it took the request: the CLI kills the task at once and
// reports its end (docs/performance.md, 'Figures behind the code').
const stopTaskWait = 10 * time.Second

func (s *server) stopTask(c *call) (any, error) {
	caps, err := s.taskCaps(c)
	if err != nil {
		return nil, err
	}
	t, err := task(c, caps)
	if err != nil {
		return nil, err
	}
	if t.Ended {
		return stopTaskData{Stopped: false}, nil
	}
	if _, err := caps.ControlRequest(c.Context(), map[string]any{"subtype": "stop_task", "task_id": t.ID}); err != nil {
		return nil, err
	}
	select {
	case <-t.Done():
		return stopTaskData{Stopped: true}, nil
	case <-c.Context().Done():
		return nil, context.Cause(c.Context())
	case <-time.After(stopTaskWait):
		return nil, fmt.Errorf("stop_task: the CLI took the request but has not reported %s ended within %v", t.ID, stopTaskWait)
	}
}

func (s *server) getTaskOutput(c *call) (any, error) {
	caps, err := s.taskCaps(c)
	if err != nil {
		return nil, err
	}
	t, err := task(c, caps)
	if err != nil {
		return nil, err
	}
	if t.Type == "local_agent" {
		return nil, fmt.Errorf("%s is a sub-agent: its output is its transcript (get_subagent_messages with subagentId %s)", t.ID, t.ID)
	}
	r, err := caps.ControlRequest(c.Context(), map[string]any{"subtype": "get_task_output", "task_id": t.ID})
	if err != nil {
		return nil, err
	}
	return taskOutputData{Output: r.Get("output").String(), TotalBytes: r.Get("total_bytes").Int(),
		Truncated: r.Get("truncated").Bool(), Running: !t.Ended}, nil
}

func (s *server) backgroundTasks(c *call) (any, error) {
	caps, err := s.taskCaps(c)
	if err != nil {
		return nil, err
	}
	req := map[string]any{"subtype": "background_tasks"}
	if id := c.str("toolCallId"); id != "" {
		req["tool_use_id"] = id
	}
	r, err := caps.ControlRequest(c.Context(), req)
	if errors.Is(err, claudecli.ErrNotRunning) {
		return nil, fmt.Errorf("%s: no CLI process runs now, and no task with it", c.typ)
	}
	if err != nil {
		return nil, err
	}
	b := r.Get("backgrounded")
	return backgroundTasksData{Backgrounded: !b.Exists() || b.Bool()}, nil
}
