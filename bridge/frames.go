package bridge

import (
	"encoding/json"

	"github.com/claude-rpc/claude-rpc/transform"
)

// The frames the bridge writes itself, as Go types: responses and their
// data, and the requests it sends the host. Events made from the CLI's
// lines are transform's (transform/shapes.go). Every one is written by the
// writer ([writer.Writer]); the protocol reference is generated from these types and
// their comments (package bridge/reference, through [Frames]).

// response is pi's RpcResponse. Key order matches pi's frames.
type response struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Type    string          `json:"type"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Code says, for some failures, what kind they are, for a host to act
	// on (omp's get_messages_page: session_busy, stale_cursor).
	Code string `json:"code,omitempty"`
}

// readyJSON is the first frame the bridge writes (omp's): it is ready for
// commands, and which protocol versions and frame limits it takes. Hosts
// that do not know it (pi's) ignore it as an event they do not handle.
type readyJSON struct {
	Type string `json:"type"`
	// ProtocolVersion is the version in use until negotiate_protocol: 1,
	// whole JSON lines.
	ProtocolVersion int `json:"protocolVersion"`
	// SupportedProtocolVersions: 2 adds rpc_chunk framing, after
	// negotiate_protocol.
	SupportedProtocolVersions []int `json:"supportedProtocolVersions"`
	// MaxFrameBytes is the longest line written once v2 is negotiated
	// (longer frames come as rpc_chunk frames), newline included.
	MaxFrameBytes int `json:"maxFrameBytes"`
	// MaxReassembledFrameBytes is the longest frame rpc_chunk frames carry,
	// either way.
	MaxReassembledFrameBytes int `json:"maxReassembledFrameBytes"`
}

// rpcChunkJSON is one piece of a frame too long for one line, once
// negotiate_protocol chose version 2 (omp's framing, bridge/rpcframe): the
// pieces of one frame come in order with nothing between them; their data,
// base64-decoded and joined, is the frame's JSON.
type rpcChunkJSON struct {
	Type string `json:"type"`
	// ChunkID names the frame: rpc-1, rpc-2, …
	ChunkID string `json:"chunkId"`
	// Index is the piece's place, from 0; Count how many pieces there are.
	Index int `json:"index"`
	Count int `json:"count"`
	// ByteLength is the length of the whole frame's JSON.
	ByteLength int `json:"byteLength"`
	// Data is the piece, base64: at most 256 KiB of the frame.
	Data string `json:"data"`
}

// rpcFrameErrorJSON stands in for a frame over 64 MiB, once version 2 is
// negotiated (a response over the limit becomes a failed response
// instead).
type rpcFrameErrorJSON struct {
	Type string `json:"type"`
	// OriginalType is the type of the frame that could not be sent.
	OriginalType string `json:"originalType,omitempty"`
	Error        string `json:"error"`
}

// promptResultJSON says how the run a prompt started ended (omp's): once
// per prompt and abort_and_prompt, after the agent_end after which the
// bridge stops on its own (a prompt queued into a running run reports
// when that run, and what was queued after it, ended).
type promptResultJSON struct {
	Type string `json:"type"`
	// ID is the prompt command's id.
	ID json.RawMessage `json:"id,omitempty"`
	// AgentInvoked is always true: every prompt reaches the CLI.
	AgentInvoked bool `json:"agentInvoked"`
	// Status is "completed", "aborted" or "error", from the last assistant
	// message's stopReason.
	Status string        `json:"status"`
	Error  *promptFailed `json:"error,omitempty"`
	// SessionSettled is true when nothing more runs: session_settled
	// follows.
	SessionSettled bool `json:"sessionSettled"`
}

// promptFailed is a prompt_result's error.
type promptFailed struct {
	Message string `json:"message"`
	// Retryable is always false: the CLI has retried what it could.
	Retryable bool `json:"retryable"`
}

// agentSettledJSON is pi 1.5's: the bridge will not go on by itself (queued
// steering and follow-ups have run); sent after the last agent_end, before
// the answers to abort.
type agentSettledJSON struct {
	Type string `json:"type"`
	// Aborted is true when the last run was aborted.
	Aborted bool `json:"aborted"`
}

// sessionSettledJSON is omp's: nothing streams, is queued or waits; sent
// right after agent_settled.
type sessionSettledJSON struct {
	Type string `json:"type"`
}

// messagesPageData is get_messages_page's data (omp's).
type messagesPageData struct {
	// Messages are the page's messages, oldest first.
	Messages []transform.Message `json:"messages"`
	// NextCursor asks for the next page; absent on the last.
	NextCursor string `json:"nextCursor,omitempty"`
	// TotalMessages is the session's message count.
	TotalMessages int `json:"totalMessages"`
}

// dispositionData is the data of prompt, steer and follow_up (pi 1.5's):
// what became of the message.
type dispositionData struct {
	// Disposition is "started" (a run started with it) or "queued" (it
	// waits in the steering or follow-up queue).
	Disposition string `json:"disposition"`
}

// queueUpdateJSON is sent whenever the steering or follow-up queue changes
// (pi 1.5's): a message queued, delivered, cleared.
type queueUpdateJSON struct {
	Type string `json:"type"`
	// Steering and FollowUp are the texts waiting, in order (steering
	// messages handed to the CLI and not yet started count as waiting).
	Steering []string `json:"steering"`
	FollowUp []string `json:"followUp"`
}

// clearQueueData is clear_queue's data: what was removed.
type clearQueueData struct {
	Steering []string `json:"steering"`
	FollowUp []string `json:"followUp"`
	// Kept are steering messages handed to the CLI (stream transport)
	// that it had started, or was starting, when clear_queue asked for
	// them back: they reach the model, and the run shows them. Absent
	// when none.
	Kept []string `json:"kept,omitempty"`
}

// thinkingLevelsData is get_available_thinking_levels' data.
type thinkingLevelsData struct {
	// Levels are pi's levels the model has, from its effort levels.
	Levels []string `json:"levels"`
}

// thinkingLevelChangedJSON is sent when the thinking level changed (pi
// 1.5's), before the answer of the command that changed it.
type thinkingLevelChangedJSON struct {
	Type  string `json:"type"`
	Level string `json:"level"`
}

// permissionModeChangedJSON is sent when the permission mode changed
// (claude-rpc's own): by set_permission_mode, before its answer, or by
// the CLI itself (its ExitPlanMode and EnterPlanMode tools), during the
// turn that changed it. get_state's permissionMode says the same.
type permissionModeChangedJSON struct {
	Type string `json:"type"`
	// Mode is the mode from now on (the next turn's, when the host set
	// it): one of set_permission_mode's.
	Mode string `json:"mode"`
}

// sessionInfoChangedJSON is sent when set_session_name named the session
// (pi 1.5's), before its answer.
type sessionInfoChangedJSON struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// bashUpdateJSON is a piece of a running bash command's output (pi 1.5's),
// stdout and stderr as they come.
type bashUpdateJSON struct {
	Type string `json:"type"`
	// ID is the bash command's id.
	ID    json.RawMessage `json:"id,omitempty"`
	Delta string          `json:"delta"`
}

// contextUsage is how full the model's context is (pi 1.5's), as of the
// last assistant message.
type contextUsage struct {
	// Tokens is the context's size at the last model call; null after a
	// compaction, until the next call.
	Tokens        *int64 `json:"tokens" schema:"nullable"`
	ContextWindow int64  `json:"contextWindow"`
	// Percent is tokens of contextWindow, 0 to 100; null with tokens.
	Percent *float64 `json:"percent" schema:"nullable"`
}

// availableCommandsData is get_available_commands' data (omp's).
type availableCommandsData struct {
	Commands []availableCommand `json:"commands"`
}

// availableCommand is one slash command in omp's shape.
type availableCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Input       *commandInput `json:"input,omitempty"`
	// Source is "builtin" for the CLI's own commands, else "custom".
	Source string `json:"source"`
}

// commandInput describes a command's arguments.
type commandInput struct {
	Hint string `json:"hint,omitempty"`
}

// availableCommandsUpdateJSON is sent when the CLI's commands are known or
// change (omp's): when a CLI process starts (pre-warmed: at the bridge's
// start) with other commands than those last sent.
type availableCommandsUpdateJSON struct {
	Type     string             `json:"type"`
	Commands []availableCommand `json:"commands"`
}

// eventFilterData is set_event_filter's data.
type eventFilterData struct {
	// Events are the event types written; null: all.
	Events []string `json:"events" schema:"nullable"`
}

// loginProvidersData is get_login_providers' data (omp's).
type loginProvidersData struct {
	Providers []loginProvider `json:"providers"`
}

// loginProvider is how the CLI logs in.
type loginProvider struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Available bool   `json:"available"`
	// Authenticated is true when an API key is set or the CLI has stored
	// credentials.
	Authenticated bool `json:"authenticated"`
}

// negotiateData is negotiate_protocol's data.
type negotiateData struct {
	// ProtocolVersion is the version now in use.
	ProtocolVersion int `json:"protocolVersion"`
}

func okResponse(id json.RawMessage, command string, data any) response {
	return response{ID: id, Type: "response", Command: command, Success: true, Data: data}
}

func errResponse(id json.RawMessage, command, msg string) response {
	return response{ID: id, Type: "response", Command: command, Success: false, Error: msg}
}

// stateData is get_state's data: pi's fields in pi's order, plus
// interruptMode and queuedMessageCount, which pi's forks (omp, xcsh) add.
type stateData struct {
	// Model is the model the next turn runs, an entry of
	// get_available_models (its name, price and limits as the list gives
	// them): the one asked for (--model, set_model), else the one the CLI
	// said it will run, else the one its last turn ran. On a first start
	// with nothing in the info cache, before the CLI has said which models
	// it has: the model id the CLI's flags, environment or settings files
	// name (named by its id, with the default limits), else, for a
	// get_state sent within 2 s of the start, the CLI's answer, waited for
	// until then. Absent, as pi leaves it when it has none, only when the
	// CLI has not answered by then; a host then takes the list's first,
	// the CLI's default.
	Model                 *modelInfo `json:"model,omitempty"`
	ThinkingLevel         string     `json:"thinkingLevel"`
	IsStreaming           bool       `json:"isStreaming"`
	IsCompacting          bool       `json:"isCompacting"`
	SteeringMode          string     `json:"steeringMode"`
	FollowUpMode          string     `json:"followUpMode"`
	InterruptMode         string     `json:"interruptMode"`
	SessionFile           string     `json:"sessionFile,omitempty"`
	SessionID             string     `json:"sessionId"`
	SessionName           string     `json:"sessionName,omitempty"`
	AutoCompactionEnabled bool       `json:"autoCompactionEnabled"`
	MessageCount          int        `json:"messageCount"`
	PendingMessageCount   int        `json:"pendingMessageCount"`
	QueuedMessageCount    int        `json:"queuedMessageCount"`
	// TodoPhases is xcsh's: the session's todo list.
	TodoPhases []transform.TodoPhase `json:"todoPhases"`
	// Transport is claude-rpc's own: how the CLI is driven.
	Transport string `json:"transport"`
	// IsSettled is omp's: nothing runs, and the bridge starts nothing by
	// itself (session_settled was sent, or nothing ever ran).
	IsSettled bool `json:"isSettled"`
	// HasPendingAsyncWork is omp's: a bash command runs.
	HasPendingAsyncWork bool `json:"hasPendingAsyncWork"`
	// ContextUsage is omp's and pi 1.5's: how full the context is.
	ContextUsage contextUsage `json:"contextUsage"`
	// FastModeEnabled is omp's: set_fast_mode turned the CLI's fast mode
	// on.
	FastModeEnabled bool `json:"fastModeEnabled"`
	// FastModeActive is omp's: the CLI said, at the end of the last turn,
	// that fast mode served it.
	FastModeActive bool `json:"fastModeActive"`
	// PermissionMode is claude-rpc's own: the CLI's permission mode for
	// the next turn (set_permission_mode's, or the one the CLI changed to
	// by itself, else --permission-mode).
	PermissionMode string `json:"permissionMode"`
}

// fastModeData is set_fast_mode's data (omp's).
type fastModeData struct {
	// Enabled is what the host asked for.
	Enabled bool `json:"enabled"`
	// Active says whether the CLI said, at the end of the last turn, that
	// fast mode served it (false until a turn with it ran).
	Active bool `json:"active"`
}

// modelInfo is pi's Model.
type modelInfo struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	API           string    `json:"api"`
	Provider      string    `json:"provider"`
	BaseURL       string    `json:"baseUrl"`
	Reasoning     bool      `json:"reasoning"`
	Input         []string  `json:"input"`
	Cost          modelCost `json:"cost"`
	ContextWindow int64     `json:"contextWindow"`
	MaxTokens     int64     `json:"maxTokens"`
}

// modelCost is a model's price in dollars per million tokens, as far as the
// CLI's model descriptions tell it (priceOf): cache prices never.
type modelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// sessionStats is pi's get_session_stats data.
type sessionStats struct {
	SessionFile       string      `json:"sessionFile,omitempty"`
	SessionID         string      `json:"sessionId"`
	UserMessages      int         `json:"userMessages"`
	AssistantMessages int         `json:"assistantMessages"`
	ToolCalls         int         `json:"toolCalls"`
	ToolResults       int         `json:"toolResults"`
	TotalMessages     int         `json:"totalMessages"`
	Tokens            tokenCounts `json:"tokens"`
	Cost              float64     `json:"cost"`
	// ContextUsage is pi 1.5's: how full the context is.
	ContextUsage contextUsage `json:"contextUsage"`
}

type tokenCounts struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Total      int64 `json:"total"`
}

// bashResult is pi's BashResult.
type bashResult struct {
	Output         string `json:"output"`
	ExitCode       int    `json:"exitCode"`
	Cancelled      bool   `json:"cancelled"`
	Truncated      bool   `json:"truncated"`
	FullOutputPath string `json:"fullOutputPath,omitempty"`
}

// slashCommand is pi's RpcSlashCommand; argumentHint is the CLI's.
type slashCommand struct {
	Name         string     `json:"name"`
	Description  string     `json:"description,omitempty"`
	Source       string     `json:"source"`
	SourceInfo   sourceInfo `json:"sourceInfo"`
	ArgumentHint string     `json:"argumentHint,omitempty"`
}

// sourceInfo is pi's SourceInfo: where a command comes from.
type sourceInfo struct {
	// Path is the command's file or the skill's SKILL.md, absolute;
	// "builtin:<name>" for the CLI's own commands and skills,
	// "plugin:<plugin>" for a plugin's whose folder is not known.
	Path string `json:"path"`
	// Source is how it was found, as pi says it: "builtin" (the CLI's
	// own), "auto" (in the user's or the project's .claude folder),
	// "local" (pi's --skill), or the plugin's name.
	Source string `json:"source"`
	// Scope is "user", "project" or "temporary" (the CLI's own, and
	// --skill's: for this process only).
	Scope string `json:"scope"`
	// Origin is "package" for a plugin's, else "top-level".
	Origin string `json:"origin"`
	// BaseDir is the folder it was found in: the .claude folder, --skill's
	// skill folder, a plugin's folder when known.
	BaseDir string `json:"baseDir,omitempty"`
}

// forkPoint is pi's entry a session can be branched from: a prompt.
type forkPoint struct {
	EntryID string `json:"entryId"`
	Text    string `json:"text"`
}

// messagesData is get_messages' data.
type messagesData struct {
	// Messages are the session's messages, oldest first.
	Messages []transform.Message `json:"messages"`
}

// lastTextData is get_last_assistant_text's data.
type lastTextData struct {
	// Text is the last reply's text, trimmed; absent (not null) when there
	// is none, as pi 0.73.1 and 1.x answer.
	Text string `json:"text,omitempty"`
}

// cancelledData is the data of new_session and switch_session.
type cancelledData struct {
	// Cancelled is always false: no extension can veto the switch.
	Cancelled bool `json:"cancelled"`
}

// forkData is branch's and fork's data.
type forkData struct {
	// Text is the prompt branched before, for the host to edit and send.
	Text      string `json:"text"`
	Cancelled bool   `json:"cancelled"`
	// RestoredFiles answers restoreFiles (claude-rpc's): whether the
	// files were put back, and which; absent without restoreFiles.
	RestoredFiles *restoredFiles `json:"restoredFiles,omitempty"`
}

// restoredFiles is what fork's restoreFiles did: the files the CLI's tools
// changed from the prompt forked at on (in that turn and the ones after),
// put back as they were when that prompt was sent (the CLI's rewind_files),
// or why they were left as they are. The fork is made either way.
type restoredFiles struct {
	// Restored is true when the files are as they were at the prompt
	// (also when none had changed: files is empty); false when they were
	// left as they are, and error says why.
	Restored bool `json:"restored"`
	// Files are the files put back, absolute paths (a file the tools
	// created is removed).
	Files []string `json:"files"`
	// Insertions are the lines the restore added across the files, as
	// the CLI counts them.
	Insertions int `json:"insertions"`
	// Deletions are the lines the restore removed across the files.
	Deletions int `json:"deletions"`
	// SkippedLinks counts files the CLI left alone for safety (a link, or
	// a path that no longer leads where it did).
	SkippedLinks int `json:"skippedLinks,omitempty"`
	// Error is why nothing was restored: file checkpointing off
	// (--restore-files=false), no checkpoint of that prompt (it ran before
	// checkpointing was on, or the CLI kept none), or the CLI could not be
	// asked.
	Error string `json:"error,omitempty"`
}

// cloneData is clone's data.
type cloneData struct {
	Cancelled bool `json:"cancelled"`
	// SessionID is the new session's id.
	SessionID string `json:"sessionId"`
}

// forkMessagesData is get_fork_messages' data.
type forkMessagesData struct {
	// Messages are the session's prompts, oldest first.
	Messages []forkPoint `json:"messages"`
}

// exportData is export_html's data.
type exportData struct {
	// Path is the HTML file written.
	Path string `json:"path"`
}

// modelsData is get_available_models' data.
type modelsData struct {
	// Models are the CLI's models, one per model id.
	Models []modelInfo `json:"models"`
}

// cycleModelData is cycle_model's data.
type cycleModelData struct {
	Model         modelInfo `json:"model"`
	ThinkingLevel string    `json:"thinkingLevel"`
	// IsScoped is always false: claude-rpc cycles through all the CLI's
	// models.
	IsScoped bool `json:"isScoped"`
}

// levelData is cycle_thinking_level's data.
type levelData struct {
	// Level is the new thinking level.
	Level string `json:"level"`
}

// commandsData is get_commands' data.
type commandsData struct {
	Commands []slashCommand `json:"commands"`
}

// todosData is set_todos' data.
type todosData struct {
	// TodoPhases are the phases as stored: ids filled in, statuses checked.
	TodoPhases []transform.TodoPhase `json:"todoPhases"`
}

// hostToolsData is set_host_tools' data.
type hostToolsData struct {
	// ToolNames are the tools' names; the model sees each as
	// mcp__host__<name>.
	ToolNames []string `json:"toolNames"`
}

// extensionErrorJSON is pi's extension_error: a pi extension's handler,
// tool or command threw (or an API call it made failed: extensionPath
// "<runtime>").
type extensionErrorJSON struct {
	Type          string `json:"type"`
	ExtensionPath string `json:"extensionPath"`
	Event         string `json:"event"`
	Error         string `json:"error"`
}

// entryAppendedJSON is pi's entry_appended: an extension appended a custom
// entry to the session (appendEntry).
type entryAppendedJSON struct {
	Type  string    `json:"type"`
	Entry entryJSON `json:"entry"`
}

// toolExecutionUpdateJSON relays a host_tool_update: a host tool's
// progress. Only host tools update: the CLI reports no progress of its
// own tools.
type toolExecutionUpdateJSON struct {
	Type       string `json:"type"`
	ToolCallID string `json:"toolCallId"`
	// ToolName is the tool's name as tool_execution_start shows it: a
	// host's tool and an extension's (--extension) go by their own names,
	// as in pi and omp (--tool-names claude: mcp__host__<name>,
	// mcp__ext__<name>).
	ToolName string          `json:"toolName"`
	Args     json.RawMessage `json:"args"`
	// PartialResult is the host_tool_update's partialResult.
	PartialResult json.RawMessage `json:"partialResult"`
}

// uiSetTitleJSON is an extension's ctx.ui.setTitle (--extension):
// fire-and-forget, no answer expected.
type uiSetTitleJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Title  string `json:"title"`
}

// uiSetWidgetJSON is an extension's ctx.ui.setWidget with lines of text
// (--extension): fire-and-forget.
type uiSetWidgetJSON struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Method    string `json:"method"`
	WidgetKey string `json:"widgetKey"`
	// WidgetLines is absent to clear the widget.
	WidgetLines []string `json:"widgetLines,omitempty"`
	// WidgetPlacement is aboveEditor or belowEditor, when the extension
	// said.
	WidgetPlacement string `json:"widgetPlacement,omitempty"`
}

// uiSetEditorTextJSON is an extension's ctx.ui.setEditorText
// (--extension): fire-and-forget.
type uiSetEditorTextJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Text   string `json:"text"`
}

// subagentLevelData is set_subagent_subscription's data (omp's).
type subagentLevelData struct {
	// Level is the subscription now: off (no sub-agent frames), progress
	// (subagent_lifecycle and subagent_progress) or events (those and
	// subagent_event).
	Level string `json:"level"`
}

// subagentsData is get_subagents' data (omp's).
type subagentsData struct {
	// Subagents are the sub-agents running now, by index.
	Subagents []subagentSnapshot `json:"subagents"`
}

// stopTaskData is stop_task's data.
type stopTaskData struct {
	// Stopped is true when the task was running and the CLI was asked to
	// stop it; false when it had ended already (nothing was sent).
	Stopped bool `json:"stopped"`
}

// taskOutputData is get_task_output's data: the end of a background Bash
// task's output, as the CLI keeps it.
type taskOutputData struct {
	// Output is the end of what the command wrote (the last 8 KiB),
	// decoded as UTF-8, escape sequences included: plain text. Empty
	// when it wrote nothing yet.
	Output string `json:"output"`
	// TotalBytes is the size of its whole output.
	TotalBytes int64 `json:"totalBytes"`
	// Truncated is true when Output is only the end of a longer output.
	Truncated bool `json:"truncated"`
	// Running is true while the CLI has not reported the task's end.
	Running bool `json:"running"`
}

// backgroundTasksData is background_tasks' data.
type backgroundTasksData struct {
	// Backgrounded is false when toolCallId named no foreground task
	// running (or not yet one: ask again); true otherwise.
	Backgrounded bool `json:"backgrounded"`
}

// subagentSnapshot is omp's RpcSubagentSnapshot: a running sub-agent.
type subagentSnapshot struct {
	// ID is the CLI's id of the sub-agent.
	ID string `json:"id"`
	// Index counts the run's sub-agents from 0.
	Index int `json:"index"`
	// Agent is its type, as in subagent_lifecycle.
	Agent string `json:"agent"`
	// AgentSource is bundled (the CLI's own type) or user.
	AgentSource string `json:"agentSource"`
	// Description is the Agent call's short description.
	Description string `json:"description,omitempty"`
	// Status is running (or pending, before its first progress).
	Status string `json:"status"`
	// Task is the prompt it was given.
	Task string `json:"task,omitempty"`
	// SessionFile is its transcript, for get_subagent_messages.
	SessionFile string `json:"sessionFile,omitempty"`
	// LastUpdate is when the bridge last heard of it (Unix ms).
	LastUpdate int64 `json:"lastUpdate"`
	// Progress are its figures, as in the last subagent_progress.
	Progress *transform.AgentProgress `json:"progress,omitempty"`
	// ParentToolCallID is the Agent tool call that runs it.
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
}

// subagentMessagesData is get_subagent_messages' data (omp's): a
// sub-agent's transcript from a byte offset.
type subagentMessagesData struct {
	// SessionFile is the transcript read (the CLI's JSONL file).
	SessionFile string `json:"sessionFile"`
	// FromByte is where reading began.
	FromByte int64 `json:"fromByte"`
	// NextByte is where the next call goes on: after the last whole line.
	NextByte int64 `json:"nextByte"`
	// Reset says fromByte was past the end (the file was replaced), so
	// the file was read from the start.
	Reset bool `json:"reset"`
	// Entries are the transcript's lines read, as the CLI wrote them (its
	// own entry format, not omp's).
	Entries []json.RawMessage `json:"entries"`
	// Messages are the pi messages those lines make.
	Messages []transform.Message `json:"messages"`
}

// handoffData is handoff's data (omp's): empty, as omp answers a handoff
// the host asked for (it saves the document only when it hands off by
// itself).
type handoffData struct {
	// SavedPath is where the handoff document was saved: never, here.
	SavedPath string `json:"savedPath,omitempty"`
}

// hostURISchemesData is set_host_uri_schemes' data (omp's).
type hostURISchemesData struct {
	// Schemes are the schemes now served, lower case, in order.
	Schemes []string `json:"schemes"`
}

// openSessionData is open_session's data (omp's).
type openSessionData struct {
	// Cancelled is always false: nothing in claude-rpc cancels a switch.
	Cancelled bool `json:"cancelled"`
	// Resumed says an existing session was opened (false: a new one).
	Resumed bool `json:"resumed"`
	// SessionID is the session now in use.
	SessionID string `json:"sessionId"`
	// SessionFile is its transcript (written from its first turn on).
	SessionFile string `json:"sessionFile,omitempty"`
}
