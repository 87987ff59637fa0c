package transform

import (
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// The CLI's sub-agents (its Agent tool), shown as omp shows its task
// sub-agents. The CLI prints a sub-agent's conversation on its own stdout,
// each line marked with parent_tool_use_id (the Agent call that started
// it), and system lines about it: task_started, task_progress and
// task_notification (its end), which name the same call as tool_use_id. The
// translator keeps a [Translator] per sub-agent for its lines, and writes
// omp's three frames:
//
//   - subagent_lifecycle when it starts and when it ends;
//   - subagent_progress whenever its figures change (a model call, a tool
//     call starting or ending, the CLI's task_progress);
//   - subagent_event for each pi event of its own conversation, as its own
//     run (agent_start … agent_end).
//
// Which of them reach the host is the bridge's choice (omp's
// set_subagent_subscription), as is the transcript's path (sessionFile).
const (
	EventSubagentLifecycle = "subagent_lifecycle"
	EventSubagentProgress  = "subagent_progress"
	EventSubagentEvent     = "subagent_event"
)

// Subagent is what a subagent_* event carries: one of its three payloads.
type Subagent struct {
	// Lifecycle is subagent_lifecycle's payload.
	Lifecycle *SubagentLifecycle
	// Progress is subagent_progress's payload.
	Progress *SubagentProgress
	// ID is subagent_event's sub-agent.
	ID string
	// Event is subagent_event's event of the sub-agent's conversation.
	Event *Event
}

// SubagentLifecycle is omp's SubagentLifecyclePayload: a sub-agent started
// or ended.
type SubagentLifecycle struct {
	// ID is the CLI's id of the sub-agent (its task and agent id).
	ID string `json:"id"`
	// Agent is the sub-agent's type (the Agent call's subagent_type:
	// general-purpose, Explore, Plan or one the user defined).
	Agent string `json:"agent"`
	// AgentSource is where the type is defined: bundled for the CLI's
	// own, user for any other (the CLI does not say whose it is).
	AgentSource string `json:"agentSource"`
	// Description is the Agent call's short description.
	Description string `json:"description,omitempty"`
	// Status is started, completed, failed or aborted.
	Status string `json:"status"`
	// SessionFile is the sub-agent's transcript (the CLI's JSONL file),
	// for get_subagent_messages.
	SessionFile string `json:"sessionFile,omitempty"`
	// ParentToolCallID is the Agent tool call that runs it.
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	// Index counts the run's sub-agents from 0, in the order they started.
	Index int `json:"index"`
	// Detached says it runs in the background (the parent's turn goes on).
	Detached bool `json:"detached,omitempty"`
}

// SubagentProgress is omp's SubagentProgressPayload: a sub-agent's figures.
type SubagentProgress struct {
	// Index counts the run's sub-agents from 0.
	Index int `json:"index"`
	// Agent is the sub-agent's type, as in subagent_lifecycle.
	Agent string `json:"agent"`
	// AgentSource is bundled (the CLI's own type) or user.
	AgentSource string `json:"agentSource"`
	// Task is the prompt the sub-agent was given.
	Task string `json:"task"`
	// ParentToolCallID is the Agent tool call that runs it.
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	// Progress are its figures.
	Progress AgentProgress `json:"progress"`
	// SessionFile is its transcript, as in subagent_lifecycle.
	SessionFile string `json:"sessionFile,omitempty"`
	// Detached says it runs in the background.
	Detached bool `json:"detached,omitempty"`
}

// AgentProgress is omp's AgentProgress: where a sub-agent is.
type AgentProgress struct {
	// Index counts the run's sub-agents from 0.
	Index int `json:"index"`
	// ID is the CLI's id of the sub-agent.
	ID string `json:"id"`
	// Agent is the sub-agent's type.
	Agent string `json:"agent"`
	// AgentSource is bundled (the CLI's own type) or user.
	AgentSource string `json:"agentSource"`
	// Status is running, completed, failed or aborted.
	Status string `json:"status"`
	// Task is the prompt the sub-agent was given.
	Task string `json:"task"`
	// Description is the Agent call's short description.
	Description string `json:"description,omitempty"`
	// LastIntent is what the CLI last said the sub-agent is doing (its
	// task_progress description).
	LastIntent string `json:"lastIntent,omitempty"`
	// CurrentTool names the tool running now.
	CurrentTool string `json:"currentTool,omitempty"`
	// CurrentToolArgs are its arguments (JSON).
	CurrentToolArgs string `json:"currentToolArgs,omitempty"`
	// CurrentToolStartMs is when it started (Unix ms).
	CurrentToolStartMs int64 `json:"currentToolStartMs,omitempty"`
	// RecentTools are the last tools that ended, oldest first (at most 5).
	RecentTools []RecentTool `json:"recentTools"`
	// RecentOutput are the last lines of its text, oldest first (at most 8).
	RecentOutput []string `json:"recentOutput"`
	// ToolCount is how many tools it called.
	ToolCount int `json:"toolCount"`
	// Requests is how many model calls it made.
	Requests int `json:"requests"`
	// Tokens are the tokens it used (the CLI's count).
	Tokens int64 `json:"tokens"`
	// ContextTokens is the size of its last model call's context.
	ContextTokens int64 `json:"contextTokens,omitempty"`
	// Cost is 0: the CLI does not report a sub-agent's cost apart.
	Cost float64 `json:"cost"`
	// DurationMs is how long it has run.
	DurationMs int64 `json:"durationMs"`
	// ResolvedModel is the model of its last model call.
	ResolvedModel string `json:"resolvedModel,omitempty"`
}

// RecentTool is a tool call a sub-agent made that ended.
type RecentTool struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Args are its arguments (JSON).
	Args string `json:"args"`
	// EndMs is when it ended (Unix ms).
	EndMs int64 `json:"endMs"`
}

// SubagentEventPayload is subagent_event's payload.
type SubagentEventPayload struct {
	// ID is the sub-agent's id, as in subagent_lifecycle.
	ID string `json:"id"`
	// Event is one event of the sub-agent's own conversation, shaped as
	// the parent's are (agent_start, message_start, tool_execution_end …).
	Event *Event `json:"event" schema:"ref=AgentSessionEvent"`
}

// subagentLifecycleJSON is sent when one of the CLI's sub-agents starts
// and when it ends (omp's; only to a host that subscribed with
// set_subagent_subscription).
type subagentLifecycleJSON struct {
	Type string `json:"type"`
	// Payload says which sub-agent and how it is.
	Payload *SubagentLifecycle `json:"payload"`
}

// subagentProgressJSON is sent when a sub-agent's figures change (omp's;
// only to a host that subscribed).
type subagentProgressJSON struct {
	Type string `json:"type"`
	// Payload are the sub-agent's figures.
	Payload *SubagentProgress `json:"payload"`
}

// subagentEventJSON is sent for each event of a sub-agent's own
// conversation (omp's; only to a host that subscribed to events).
type subagentEventJSON struct {
	Type string `json:"type"`
	// Payload is the sub-agent and the event.
	Payload SubagentEventPayload `json:"payload"`
}

const (
	recentTools  = 5
	recentOutput = 8
)

// builtinAgents are the CLI's own sub-agent types.
var builtinAgents = map[string]bool{"general-purpose": true, "Explore": true, "Plan": true,
	"statusline-setup": true, "claude": true, "fork": true, "output-style-setup": true}

// subagent is one running sub-agent of the run.
type subagent struct {
	life     SubagentLifecycle
	progress AgentProgress
	tr       *Translator // its conversation
	echoed   bool        // the CLI's echo of its prompt was skipped
}

func (s *subagent) progressEvent() Event {
	p := s.progress
	p.RecentTools = append([]RecentTool{}, p.RecentTools...)
	p.RecentOutput = append([]string{}, p.RecentOutput...)
	return Event{Type: EventSubagentProgress, Subagent: &Subagent{Progress: &SubagentProgress{
		Index: s.life.Index, Agent: s.life.Agent, AgentSource: s.life.AgentSource, Task: p.Task,
		ParentToolCallID: s.life.ParentToolCallID, Progress: p, Detached: s.life.Detached}}}
}

func (s *subagent) lifecycleEvent(status string) Event {
	l := s.life
	l.Status = status
	return Event{Type: EventSubagentLifecycle, Subagent: &Subagent{Lifecycle: &l}}
}

// taskLine handles the CLI's system lines about its tasks: those of a
// sub-agent (task_type local_agent; its Bash tasks are not sub-agents).
func (t *Translator) taskLine(out []Event, sub string, v *object) []Event {
	call := v.Get("tool_use_id").String()
	switch sub {
	case "task_started":
		if v.Get("task_type").String() != "local_agent" || call == "" || t.subagents[call] != nil {
			return out
		}
		agent := strings.Clone(v.Get("subagent_type").String())
		if agent == "" {
			agent = "general-purpose"
		}
		source := "user"
		if builtinAgents[agent] {
			source = "bundled"
		}
		id := strings.Clone(v.Get("task_id").String())
		s := &subagent{life: SubagentLifecycle{ID: id, Agent: agent, AgentSource: source,
			Description: strings.Clone(v.Get("description").String()), ParentToolCallID: strings.Clone(call),
			Index: t.subagentCount, Detached: v.Get("is_backgrounded").Bool()}}
		t.subagentCount++
		s.progress = AgentProgress{Index: s.life.Index, ID: id, Agent: agent, AgentSource: source, Status: "running",
			Task: strings.Clone(v.Get("prompt").String()), Description: s.life.Description,
			RecentTools: []RecentTool{}, RecentOutput: []string{}}
		s.tr = NewTranslator(t.now)
		s.tr.parent, s.tr.model, s.tr.names = s.life.ParentToolCallID, t.model, t.names
		if t.subagents == nil {
			t.subagents = map[string]*subagent{}
		}
		t.subagents[s.life.ParentToolCallID] = s
		out = append(out, s.lifecycleEvent("started"))
		out = t.subagentEvents(out, s, s.tr.Start(UserMessage([]Content{TextContent(s.progress.Task)}, t.now())))
		return append(out, s.progressEvent())
	case "task_progress":
		s := t.subagents[call]
		if s == nil {
			return out
		}
		s.usage(v.Get("usage"))
		if d := v.Get("description").String(); d != "" {
			s.progress.LastIntent = strings.Clone(d)
		}
		return append(out, s.progressEvent())
	case "task_notification":
		s := t.subagents[call]
		if s == nil {
			return out
		}
		s.usage(v.Get("usage"))
		var evs []Event
		status := "completed"
		switch st := v.Get("status").String(); st {
		case "completed":
			evs = s.tr.endRun(s.tr.flushPending(nil), StopAborted, abortedMessage) // as a result line ends a run
		case "failed":
			status = "failed"
			msg := v.Get("summary").String()
			if msg == "" {
				msg = "sub-agent failed"
			}
			evs = s.tr.Fail(strings.Clone(msg))
		default: // killed, stopped
			status = "aborted"
			evs = s.tr.Abort()
		}
		return t.endSubagent(t.subagentEvents(out, s, evs), s, status)
	}
	return out
}

// usage takes the CLI's figures for the sub-agent so far.
func (s *subagent) usage(u gjson.Result) {
	if !u.Exists() {
		return
	}
	if n := u.Get("total_tokens").Int(); n > 0 {
		s.progress.Tokens = n
	}
	if n := int(u.Get("tool_uses").Int()); n > s.progress.ToolCount {
		s.progress.ToolCount = n
	}
	if n := u.Get("duration_ms").Int(); n > 0 {
		s.progress.DurationMs = n
	}
}

// endSubagent shows a sub-agent's end and forgets it.
func (t *Translator) endSubagent(out []Event, s *subagent, status string) []Event {
	s.progress.Status = status
	s.progress.CurrentTool, s.progress.CurrentToolArgs, s.progress.CurrentToolStartMs = "", "", 0
	delete(t.subagents, s.life.ParentToolCallID)
	return append(out, s.progressEvent(), s.lifecycleEvent(status))
}

// subagentLine handles a line of a sub-agent's conversation (its
// parent_tool_use_id is call). Lines of a sub-agent the translator does
// not know (none started it) are dropped.
func (t *Translator) subagentLine(out []Event, call string, line []byte) []Event {
	s := t.subagents[call]
	if s == nil {
		return out
	}
	if !s.echoed && gjson.GetBytes(line, "type").String() == "user" {
		// The CLI prints the prompt the sub-agent was given, which its
		// agent_start already showed.
		if c := gjson.GetBytes(line, "message.content"); c.Type == gjson.String || !strings.Contains(c.Raw, `"tool_result"`) {
			s.echoed = true
			return out
		}
	}
	return t.subagentEvents(out, s, s.tr.Line(line))
}

// subagentEvents wraps a sub-agent's events in subagent_event and keeps its
// progress, with a subagent_progress when it changed.
func (t *Translator) subagentEvents(out []Event, s *subagent, evs []Event) []Event {
	changed := false
	p := &s.progress
	for i := range evs {
		ev := evs[i]
		switch ev.Type {
		case EventMessageEnd:
			if m := &ev.Message; m.Role == RoleAssistant {
				p.Requests++
				p.ContextTokens = m.Usage.Input + m.Usage.CacheRead + m.Usage.CacheWrite
				if m.Model != "" {
					p.ResolvedModel = m.Model
				}
				for _, c := range m.Content {
					if c.Type == "text" {
						p.RecentOutput = appendLast(p.RecentOutput, recentOutput, strings.Split(strings.TrimSpace(c.Whole()), "\n")...)
					}
				}
				changed = true
			}
		case EventToolExecutionStart:
			p.CurrentTool, p.CurrentToolArgs, p.CurrentToolStartMs = ev.ToolName, string(ev.Args), t.now()
			p.ToolCount++
			changed = true
		case EventToolExecutionEnd:
			args := ""
			if p.CurrentTool == ev.ToolName {
				args = p.CurrentToolArgs
			}
			p.RecentTools = appendLast(p.RecentTools, recentTools, RecentTool{Tool: ev.ToolName, Args: args, EndMs: t.now()})
			p.CurrentTool, p.CurrentToolArgs, p.CurrentToolStartMs = "", "", 0
			changed = true
		}
		out = append(out, Event{Type: EventSubagentEvent, Subagent: &Subagent{ID: s.life.ID, Event: &evs[i]}})
	}
	if changed && !s.tr.ended {
		out = append(out, s.progressEvent())
	}
	return out
}

// appendLast appends xs to s and keeps the last n.
func appendLast[T any](s []T, n int, xs ...T) []T {
	s = append(s, xs...)
	if len(s) > n {
		s = append(s[:0:0], s[len(s)-n:]...)
	}
	return s
}

// Subagents are sub-agents a run left running in the background, for the
// next run on the same CLI process to go on showing ([Translator.Detached],
// [Translator.Adopt]).
type Subagents struct {
	subs  map[string]*subagent
	count int
}

// Len is how many there are.
func (s *Subagents) Len() int {
	if s == nil {
		return 0
	}
	return len(s.subs)
}

// KeepDetached makes the run's end leave its background sub-agents running
// (the stream transport: the CLI process, and they with it, goes on after
// the turn's result), for [Translator.Detached]; without it they end
// aborted with the run.
func (t *Translator) KeepDetached() { t.keepDetached = true }

// Detached returns the background sub-agents the run left running, nil
// when none.
func (t *Translator) Detached() *Subagents {
	if !t.ended || len(t.subagents) == 0 {
		return nil
	}
	return &Subagents{subs: t.subagents, count: t.subagentCount}
}

// Running returns the sub-agents the translator holds, for another to
// adopt: a translator that showed the CLI's lines between runs hands them
// on without ending. Nil when none.
func (t *Translator) Running() *Subagents {
	if len(t.subagents) == 0 {
		return nil
	}
	return &Subagents{subs: t.subagents, count: t.subagentCount}
}

// Adopt takes over sub-agents an earlier run left running: their lines,
// progress and end show in this run.
func (t *Translator) Adopt(s *Subagents) {
	if s.Len() == 0 {
		return
	}
	if t.subagents == nil {
		t.subagents = map[string]*subagent{}
	}
	for call, sub := range s.subs {
		sub.tr.now = t.now
		t.subagents[call] = sub
	}
	t.subagentCount = max(t.subagentCount, s.count)
}

// endSubagents ends the sub-agents still running when the run ends: the
// CLI ended them with it (an abort, the process gone), unless they run in
// the background of a process that goes on ([Translator.KeepDetached]).
func (t *Translator) endSubagents(out []Event) []Event {
	open := make([]*subagent, 0, len(t.subagents))
	for _, s := range t.subagents {
		if t.keepDetached && s.life.Detached {
			continue
		}
		open = append(open, s)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].life.Index < open[j].life.Index })
	for _, s := range open {
		out = t.endSubagent(t.subagentEvents(out, s, s.tr.Abort()), s, "aborted")
	}
	return out
}
