package bridge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// kind says how the dispatcher runs a command (the ordering rules in the
// package doc).
type kind int

const (
	// instant commands are answered on the dispatcher from state; they
	// never block on I/O or on a person.
	instant kind = iota
	// slow commands run on a goroutine of their own and answer when done.
	slow
	// preempt commands run at once, whatever runs or waits.
	preempt
)

// res are the things a command reads or writes, for ordering: a call waits
// for earlier calls that write what it touches, and for earlier readers of
// what it writes.
type res uint8

const (
	resRun     res = 1 << iota // the run and its queues
	resConfig                  // how the CLI runs: model, thinking, flags, host tools
	resSession                 // which session, and its messages
)

// commandDef is one command of the protocol: everything the dispatcher,
// the list of known commands and the protocol reference need.
type commandDef struct {
	name          string
	kind          kind
	reads, writes res
	// early are the resources whose change the handler makes visible
	// before it returns ([call.settle]).
	early res
	// starts: the call may start a run (prompt, compact). overtakes: a
	// preempting command that acts on the run (abort, abort_and_prompt);
	// it also acts on the run of a starting call sent before it that has
	// not begun yet (rule 2 of the package doc).
	starts, overtakes bool
	fields            []field
	// handle answers the call: data for a successful response (nil: no
	// data), or an error for a failed one. A handler that answers by
	// itself, later or at a point of its own choosing (prompt before
	// agent_start, abort after agent_end), returns errAnswered.
	handle func(s *server, c *call) (any, error)

	// For the reference: a value of the response data's Go type (nil: no
	// data); maybe: data is sometimes null; what the command does; what
	// pi's response has that claude-rpc's does not, and why.
	data     any
	maybe    bool
	doc      string
	unfilled map[string]string
}

// errAnswered is returned by a handler that answers its call itself.
var errAnswered = errors.New("answered by the handler")

// Request fields shared by several commands.
var (
	messageFields = []field{
		{name: "message", kind: fString, required: true},
		{name: "images", kind: fAny},
	}
	modeField    = []field{{name: "mode", kind: fString, required: true}}
	enabledField = []field{{name: "enabled", kind: fBool, required: true}}
	forkFields   = []field{
		{name: "entryId", kind: fString, required: true},
		{name: "restoreFiles", kind: fBool, doc: "claude-rpc's: true also puts the files the CLI's tools changed from that prompt on back as they were when it was sent (the CLI's rewind_files); the answer's restoredFiles says what was restored, or why nothing was"},
	}
)

// forkDoc is what fork and branch say of restoreFiles.
const forkDoc = "claude-rpc adds restoreFiles (a boolean): true also puts the files the CLI's tools changed from that prompt on (in its turn and the turns after) back as they were when it was sent, through the CLI's rewind_files, before the fork is made: a run in progress is stopped first; the CLI asked is the process that runs the session (stream transport), else one started for it (pipe and pty, or no process running), which reads the checkpoints back from the transcript. The answer's restoredFiles says which files were put back, or why none were; the fork is made either way. Needs file checkpointing (--restore-files, on by default)."

// commandTable lists every command claude-rpc answers, in pi's order, then
// those of pi's forks. A command of pi's protocol that is not here is
// answered as unknown.
var commandTable = []commandDef{
	{name: "prompt", reads: resConfig | resSession, writes: resRun, starts: true, handle: (*server).prompt, data: dispositionData{},
		fields: append([]field{{name: "streamingBehavior", kind: fString}}, messageFields...),
		doc:    "Acknowledged before agent_start. A prompt while a run streams is refused unless it has streamingBehavior (steer or followUp: queued into that run). The same holds during a run the CLI began by itself (stream transport: its answer to a background task that ended while idle), which is a run like a prompt's."},
	{name: "steer", reads: resConfig | resSession, writes: resRun, fields: messageFields, handle: (*server).steer, data: dispositionData{},
		doc: "Queued; delivered at the CLI's next tool boundary (stream transport) or when its turn ends, within the same run (a run the CLI began by itself too). While idle it waits for the next prompt and goes to the model with it, as pi 1.5; a run the CLI begins by itself leaves it waiting."},
	{name: "follow_up", reads: resConfig | resSession, writes: resRun, fields: messageFields, handle: (*server).followUp, data: dispositionData{},
		doc: "Queued; delivered when the run would otherwise end, within the same run (a run the CLI began by itself too). While idle it waits for the next prompt's reply, as pi 1.5; a run the CLI begins by itself leaves it waiting."},
	{name: "abort", kind: preempt, overtakes: true, handle: (*server).abort,
		doc: "Answered after the run's agent_end (at once when idle). It aborts a prompt (or compact) sent before it that has not begun yet, waiting for an earlier command: that prompt's run is aborted as it starts. Queued messages stay queued, as in pi. During a run the CLI began by itself it interrupts the CLI's turn, as a prompt's."},
	{name: "abort_and_prompt", kind: preempt, overtakes: true, fields: messageFields, handle: (*server).abortAndPrompt,
		doc: "Acknowledged at once; the running prompt ends aborted, then the new one runs."},
	{name: "new_session", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).newSession, data: cancelledData{},
		fields: []field{{name: "parentSession", kind: fString}}},
	{name: "get_state", reads: resConfig | resSession, handle: (*server).getState, data: stateData{}},
	{name: "set_model", kind: slow, writes: resConfig, handle: (*server).setModel, data: modelInfo{},
		fields: []field{{name: "provider", kind: fString, required: true}, {name: "modelId", kind: fString, required: true}},
		doc:    "The model takes effect from the next turn."},
	{name: "cycle_model", kind: slow, writes: resConfig, handle: (*server).cycleModel, data: cycleModelData{}, maybe: true,
		doc: "data is null when the CLI offers fewer than two models (pi 1.5's)."},
	{name: "get_available_models", kind: slow, handle: (*server).getAvailableModels, data: modelsData{},
		doc: "The CLI's models: the running CLI's (stream transport), else asked once with an initialize control request and kept."},
	{name: "set_thinking_level", writes: resConfig, handle: (*server).setThinkingLevel,
		fields: []field{{name: "level", kind: fString, required: true}},
		doc:    "Mapped to the CLI's effort level (off and minimal: low), from the next turn."},
	{name: "cycle_thinking_level", writes: resConfig, handle: (*server).cycleThinkingLevel, data: levelData{}},
	{name: "set_steering_mode", writes: resRun, fields: modeField, handle: (*server).setSteeringMode},
	{name: "set_follow_up_mode", writes: resRun, fields: modeField, handle: (*server).setFollowUpMode},
	{name: "set_interrupt_mode", writes: resConfig, fields: modeField, handle: (*server).setInterruptMode,
		doc: "Stored and reported in get_state (omp's command)."},
	{name: "compact", reads: resConfig | resSession, writes: resRun, starts: true, handle: (*server).compact, data: transform.Compaction{},
		fields: []field{{name: "customInstructions", kind: fString}},
		doc:    "The CLI's /compact as a turn of its own; like pi, no agent events."},
	{name: "set_auto_compaction", writes: resConfig, fields: enabledField, handle: (*server).setAutoCompaction,
		doc: "The CLI's DISABLE_AUTO_COMPACT, from the next turn."},
	{name: "set_auto_retry", writes: resConfig, fields: enabledField, handle: (*server).setAutoRetry,
		doc: "The CLI's CLAUDE_CODE_MAX_RETRIES (0 when off), from the next turn."},
	{name: "abort_retry", kind: preempt, handle: (*server).abortRetry},
	{name: "bash", reads: resSession, handle: (*server).bash, data: bashResult{},
		fields: []field{{name: "command", kind: fString, required: true}, {name: "excludeFromContext", kind: fBool}},
		doc:    "Its output comes as bash_execution_update frames while it runs (pi 1.5's); the result goes to the model with the next prompt unless excludeFromContext."},
	{name: "abort_bash", kind: preempt, handle: (*server).abortBash},
	{name: "get_session_stats", reads: resSession, handle: (*server).getSessionStats, data: sessionStats{}},
	{name: "export_html", kind: slow, reads: resSession, handle: (*server).exportHTML, data: exportData{},
		fields: []field{{name: "outputPath", kind: fString}}},
	{name: "switch_session", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).switchSession, data: cancelledData{},
		fields: []field{{name: "sessionPath", kind: fString, required: true}}},
	{name: "fork", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).fork, data: forkData{},
		fields: forkFields, doc: forkDoc},
	{name: "branch", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).fork, data: forkData{},
		fields: forkFields, doc: "The same as fork (indusagi's name). " + forkDoc},
	{name: "clone", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).clone, data: cloneData{},
		doc: "pi's clone answers {cancelled}; claude-rpc adds the new sessionId."},
	{name: "get_fork_messages", kind: slow, reads: resSession, handle: (*server).getForkMessages, data: forkMessagesData{},
		doc: "A session opened from a pi file lists, as pi does, the user messages of every branch of the file, by entry id; fork at one on a branch other than the current one makes the new session from the file's entries before it (the CLI's transcript holds only the current branch; restoreFiles then restores nothing). Other sessions list the prompts of the CLI's transcript, by its uuids."},
	{name: "get_branch_messages", kind: slow, reads: resSession, handle: (*server).getForkMessages, data: forkMessagesData{},
		doc: "The same as get_fork_messages (indusagi's name)."},
	{name: "get_last_assistant_text", reads: resSession, handle: (*server).getLastAssistantText, data: lastTextData{},
		doc: "pi 1.6's: the last reply's text. An assistant message without text of an aborted or failed turn, or one that only calls tools, is skipped for the reply before it (pi 1.5 answered {} there); the messages of a run in progress count once it ends."},
	{name: "set_session_name", kind: slow, writes: resSession, handle: (*server).setSessionName,
		fields: []field{{name: "name", kind: fString, required: true}},
		doc:    "Reported in get_state; in the session's pi file (pi's session_info entry) when answered, if the session has one there; written into the CLI's transcript at once by the CLI (its rename_session; a session without a transcript gets it with its first turn, as --name)."},
	{name: "get_messages", reads: resSession, handle: (*server).getMessages, data: messagesData{}},
	{name: "get_commands", kind: slow, handle: (*server).getCommands, data: commandsData{}},
	{name: "set_todos", writes: resSession, handle: (*server).setTodos, data: todosData{}, doc: "xcsh's command."},
	{name: "set_host_tools", writes: resConfig, handle: (*server).setHostTools, data: hostToolsData{},
		fields: []field{{name: "tools", kind: fArray, required: true}},
		doc:    "xcsh's command. The tools take effect from the next turn: on stream in the running CLI process, which is told to list the host's tools again (an MCP tools/list_changed notification; a first tool adds the host's MCP server with the CLI's mcp_set_servers while asking is on, else a new process starts); on pipe and pty the next turn's process gets them through the relay. A tool removed is refused by the CLI if the model calls it."},
	{name: "set_permission_mode", writes: resConfig, fields: modeField, handle: (*server).setPermissionMode,
		doc: "claude-rpc's own: the CLI's permission mode (" + strings.Join(claudecli.PermissionModes, ", ") + "), from the next turn: the stream transport's running process is switched (the CLI's set_permission_mode), the per-turn transports start the next one with it (--permission-mode). A mode the running CLI refuses (bypassPermissions, unless started in it) gets a new process. Reported in get_state (permissionMode) and by permission_mode_changed, also when the CLI changes it by itself (leaving plan mode with ExitPlanMode, entering it with EnterPlanMode)."},
	{name: "clear_queue", kind: slow, writes: resRun, handle: (*server).clearQueue, data: clearQueueData{},
		doc: "pi 1.5's: the queued steering and follow-up messages, removed. Steering messages handed to the CLI (stream transport) are taken back from it (its cancel_async_message); one the CLI had already started, or was starting, when asked reaches the model and is listed in kept instead."},
	{name: "get_available_thinking_levels", kind: slow, reads: resConfig, handle: (*server).getThinkingLevels, data: thinkingLevelsData{},
		doc: "pi 1.5's: the levels the current model has, from the CLI's effort levels for it (off and minimal run as low)."},
	{name: "get_entries", reads: resSession, handle: (*server).getEntries, data: entriesData{},
		fields: []field{{name: "since", kind: fString}},
		doc:    "pi 1.5's session entries, oldest first (after the entry since, when given; an unknown one fails \"Entry not found\"). Kept by the bridge, in memory: the CLI's transcript is its own format."},
	{name: "get_tree", reads: resSession, handle: (*server).getTree, data: treeData{},
		doc: "pi 1.5's: the entries as a tree. Claude sessions do not branch in place (fork makes a new session): one chain."},
	{name: "get_messages_page", reads: resSession, handle: (*server).getMessagesPage, data: messagesPageData{},
		fields: []field{{name: "cursor", kind: fString}, {name: "limit", kind: fAny}},
		doc:    "omp's: the session's messages a page at a time (limit 1-256, default 100; a page stops at 768 KiB). A cursor is stale (code stale_cursor) once the session or its messages changed."},
	{name: "get_available_commands", kind: slow, handle: (*server).getAvailableCommands, data: availableCommandsData{},
		doc: "omp's: the CLI's slash commands and skills, in omp's shape."},
	{name: "set_event_filter", handle: (*server).setEventFilter, data: eventFilterData{},
		fields: []field{{name: "events", kind: fAny}},
		doc:    "omp's: only events of these types are written (null: all). Responses, requests to the host and the frames omp's client waits for (ready, prompt_result, settled events) always are."},
	{name: "get_login_providers", handle: (*server).getLoginProviders, data: loginProvidersData{},
		doc: "omp's: one provider, the Claude CLI's own login."},
	{name: "login", handle: refuse("the Claude CLI logs in by itself, outside claude-rpc: run `claude` and /login once, or give ANTHROPIC_API_KEY")},
	{name: "open_session", kind: slow, writes: resRun | resSession, early: resSession, handle: (*server).openSession, data: openSessionData{},
		fields: []field{{name: "sessionDir", kind: fString, required: true}},
		doc:    "omp's: the most recent session in a folder of sessions, or a new one. The CLI keeps the sessions of claude-rpc's working directory in one folder (get_state's sessionFile's): that folder is the one it opens; another is refused, saying which."},
	{name: "set_fast_mode", kind: slow, reads: resConfig, writes: resConfig, handle: (*server).setFastMode, data: fastModeData{},
		fields: []field{{name: "enabled", kind: fBool, required: true}},
		doc:    "omp's: the CLI's fast mode (its fastMode setting), from the next turn; refused, as omp does, when the current model has none."},
	{name: "handoff", reads: resConfig | resSession, writes: resRun, starts: true, handle: (*server).handoff, data: handoffData{},
		fields: []field{{name: "customInstructions", kind: fString}},
		doc:    "omp's: the conversation so far replaced by a handoff document the model writes (the CLI's /compact, told to write one), with compaction_start/end as compact; no file is saved (no savedPath), as omp's own handoff from a host."},
	{name: "set_host_uri_schemes", writes: resConfig, handle: (*server).setHostURISchemes, data: hostURISchemesData{},
		fields: []field{{name: "schemes", kind: fAny, required: true}},
		doc:    "omp's: URL schemes the host serves. The model reads (and, for writable schemes, writes) them with two tools on the host's MCP server, host_uri_read and host_uri_write; each call is a host_uri_request. From the next turn; on pipe and pty through the relay."},
	{name: "set_subagent_subscription", handle: (*server).setSubagentSubscription, data: subagentLevelData{},
		fields: []field{{name: "level", kind: fString, required: true}},
		doc:    "omp's: which of the CLI's sub-agents' frames the host gets: off (the default), progress (subagent_lifecycle, subagent_progress) or events (also subagent_event, each event of a sub-agent's own conversation)."},
	{name: "get_subagents", handle: (*server).getSubagents, data: subagentsData{},
		doc: "omp's: the sub-agents (the CLI's Agent tool) running now."},
	{name: "get_subagent_messages", kind: slow, handle: (*server).getSubagentMessages, data: subagentMessagesData{},
		fields: []field{{name: "subagentId", kind: fString}, {name: "sessionFile", kind: fString}, {name: "fromByte", kind: fAny}},
		doc:    "omp's: a sub-agent's transcript (running, or one of the last 256 seen in this session) from fromByte on: the CLI's lines as entries, and the pi messages they make."},
	{name: "stop_task", kind: slow, handle: (*server).stopTask, data: stopTaskData{},
		fields: []field{{name: "taskId", kind: fString, required: true}},
		doc:    "claude-rpc's (omp has none): stops one of the CLI's tasks, a sub-agent (the id subagent_lifecycle and get_subagents show) or a background Bash command (the id in its tool result), through the CLI's stop_task; the run and the other tasks go on. Answered once the CLI reported the task's end (its task_notification; 10 s at most): a sub-agent's subagent_lifecycle with status aborted comes with it, and the CLI tells the model (a sub-agent's stop in a run the CLI begins by itself, a Bash task's with the next prompt). Stream transport only (a per-turn process ends its tasks with the turn); an id the running CLI never started fails."},
	{name: "get_task_output", kind: slow, handle: (*server).getTaskOutput, data: taskOutputData{},
		fields: []field{{name: "taskId", kind: fString, required: true}},
		doc:    "claude-rpc's: the end (the last 8 KiB) of a background Bash task's output, running or ended, through the CLI's get_task_output (the CLI 2.1.328 on; an older one refuses it). A sub-agent's output is its transcript: get_subagent_messages. Stream transport only."},
	{name: "background_tasks", kind: slow, handle: (*server).backgroundTasks, data: backgroundTasksData{},
		fields: []field{{name: "toolCallId", kind: fString}},
		doc:    "claude-rpc's: moves a foreground tool call that is running (a Bash command or a sub-agent; toolCallId, or all of them without it) to the background, as Ctrl+B in the CLI's terminal (its background_tasks request): the call's result says it was backgrounded, with the task's id (for stop_task, get_task_output), and the run goes on. backgrounded is false for a call the CLI does not run as a foreground task (yet: 2.1.328 makes a Bash command one some 2 s after it starts). Stream transport only."},
	{name: "negotiate_protocol", handle: (*server).negotiateProtocol, data: negotiateData{},
		fields: []field{{name: "protocolVersion", kind: fAny, required: true}},
		doc:    "omp's: protocolVersion 2 makes every later frame over 1 MiB come as rpc_chunk frames (and the answer itself whole); 1 keeps whole lines."},
	{name: "extension_ui_response", kind: preempt, handle: (*server).hostAnswer},
	{name: "host_tool_result", kind: preempt, handle: (*server).hostAnswer},
	{name: "host_uri_result", kind: preempt, handle: (*server).hostAnswer},
	{name: "host_tool_update", kind: preempt, handle: (*server).hostAnswer},
}

// refuse is the handler of a command of a pi fork that the Claude CLI
// cannot serve: answered at once, saying why.
func refuse(why string) func(*server, *call) (any, error) {
	return func(_ *server, c *call) (any, error) { return nil, fmt.Errorf("%s: %s", c.typ, why) }
}

// answers reports whether a command's success is a response frame of its
// own in the reference (the host's answers to the bridge's requests are
// refused when they answer nothing, and acknowledged by nothing else).
func (d *commandDef) answers() bool {
	switch d.name {
	case "extension_ui_response", "host_tool_result", "host_tool_update", "host_uri_result":
		return false
	}
	return true
}

// commandsByName indexes commandTable.
var commandsByName = func() map[string]*commandDef {
	m := make(map[string]*commandDef, len(commandTable))
	for i := range commandTable {
		m[commandTable[i].name] = &commandTable[i]
	}
	return m
}()
