package reference

import "github.com/claude-rpc/claude-rpc/claudecli/cliproto"

// The CLI protocol table: for every name of the Claude CLI's stream-json
// protocol the inventory has (testdata/protocol/cli-protocol.json, written
// by go run ./scripts/cli-protocol from the Agent SDK's types, the CLI
// binaries of the supported range and the recordings), what claude-rpc
// makes of it: mapped (to which pi frame or command, and where in the
// code), planned (issue 34: the pi side it is meant to get), or left out
// on purpose, and why. TestCLIProtocol fails when the inventory names
// something without a row, or a row names nothing the inventory has; with
// -update it writes testdata/protocol/cli-protocol.md from both.
//
// One row a line: flipping a planned row to mapped is changing its status
// and filling its where.

// cliStatus is what claude-rpc makes of a name.
type cliStatus string

const (
	mapped  cliStatus = "mapped"
	planned cliStatus = "planned (issue 34)"
	leftOut cliStatus = "left out"
)

// cliDir is which side sends a control request (or a line).
type cliDir string

const (
	fromCLI   cliDir = "CLI → host" // the CLI asks, claude-rpc answers
	toCLI     cliDir = "host → CLI" // claude-rpc (or another host) asks, the CLI answers
	bothWays  cliDir = "both"
	unchecked cliDir = "?" // in the CLI's dispatch only: which side sends it is not documented
)

// cliRow is one name and what claude-rpc makes of it.
type cliRow struct {
	kind   cliproto.Kind
	name   string
	status cliStatus
	dir    cliDir // requests (and lines sent both ways); "" when the CLI prints it
	// pi: mapped or planned: the pi frames, events or commands it becomes
	// or serves; left out: why.
	pi string
	// where: mapped: the code that does it.
	where string
}

// Kinds, short for the rows.
const (
	cpLine    = cliproto.KindLine
	cpSystem  = cliproto.KindSystem
	cpRequest = cliproto.KindRequest
	cpEvent   = cliproto.KindEvent
	cpDelta   = cliproto.KindDelta
	cpBlock   = cliproto.KindBlock
)

// Reasons shared by many rows.
const (
	whyInternal      = "@internal in the CLI's schema and not in the Agent SDK's types: for the CLI's own hosts (its terminal UI, claude.ai, remote control); pi has no counterpart, and the translator ignores lines it does not map"
	whyUndeclared    = "not in the Agent SDK's types, only in the CLI's dispatch: a request of the CLI's own hosts (claude.ai, remote control, IDE and desktop apps); pi has no counterpart and claude-rpc never sends it"
	whyRemoteUI      = "the CLI's terminal UI driven remotely (ui_*, @internal): a pi host draws its own UI"
	whyCLIConfig     = "the CLI's own configuration (its settings files, plugins, MCP servers, hooks): pi has no command for it, and claude-rpc leaves it to the CLI's files"
	whyServerBlock   = "a block of a tool the API runs itself (server tools, MCP connector, code execution): pi's assistant content has text, thinking and toolCall only, and the CLI does not turn these tools on; the translator skips the block"
	whyNoticePlanned = "extension_ui_request notify or setStatus, or a field of an event (the notices of issue 34)"
)

var cliRows = []cliRow{
	// Line types.
	{cpLine, "active_goal", leftOut, "", "the CLI's /goal state: pi has no goals", ""},
	{cpLine, "api_metrics", leftOut, "", whyInternal, ""},
	{cpLine, "apply_flag_settings", leftOut, "", whyInternal + " (the echo of an apply_flag_settings request)", ""},
	{cpLine, "assistant", mapped, "", "the model's message when it did not stream (message_start … message_end), the thinking text the stream does not relay, an API error as the message's errorMessage", "transform/translator.go (Translator.assistant)"},
	{cpLine, "attachment", leftOut, "", whyInternal, ""},
	{cpLine, "auth_status", mapped, "", "setStatus claude.auth while the CLI authenticates; its error a notify error", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpLine, "autocompact_state", leftOut, "", "the CLI's auto-compaction state for its status line: pi shows compaction_start and compaction_end (from system status and compact_boundary)", ""},
	{cpLine, "bash_command", leftOut, "", whyInternal + "; pi's bash command runs in claude-rpc, not in the CLI", ""},
	{cpLine, "command_lifecycle", mapped, "", "steering and clear_queue: started shows a handed steer as its user message; queued holds it; any other state (completed, cancelled, discarded, refused, one a newer CLI adds) lets it go, and one let go unstarted goes back to the queue", "claudecli/stream.go (Lifecycle, LifecycleHeld), bridge/runner.go (runner.reported)"},
	{cpLine, "compact_progress", leftOut, "", whyInternal, ""},
	{cpLine, "control_cancel_request", mapped, bothWays, "the CLI withdraws a request it made: the host's extension_ui_request or host_tool_call is cancelled (its answer is no longer awaited); claude-rpc never withdraws one", "claudecli/stream.go (streamProc.read, cancel)"},
	{cpLine, "control_request", mapped, bothWays, "see the requests below", "claudecli/stream.go (streamProc.serve, streamProc.request)"},
	{cpLine, "control_response", mapped, bothWays, "the answers: to claude-rpc's requests, and claude-rpc's to the CLI's", "claudecli/stream.go (streamProc.answer, streamProc.respond)"},
	{cpLine, "conversation_reset", mapped, "", "/clear: a notify info, and the session starts over from there (get_messages, the model's context, a new pi file), as pi's /new", "transform/notices.go (Translator.reset, Translator.Reset), bridge/runner.go"},
	{cpLine, "hint_clears", leftOut, "", whyInternal, ""},
	{cpLine, "keep_alive", leftOut, bothWays, "a heartbeat receivers must ignore; claude-rpc sends none (a CLI process's end is seen as its exit)", ""},
	{cpLine, "open_message_selector", leftOut, "", whyInternal, ""},
	{cpLine, "os_notification", leftOut, "", whyInternal, ""},
	{cpLine, "prompt_suggestion", leftOut, "", "printed only when initialize asks for prompt suggestions, which claude-rpc does not: pi has no suggested next prompt", ""},
	{cpLine, "queued_notification", leftOut, "", whyInternal, ""},
	{cpLine, "rate_limit_event", mapped, "", "setStatus claude.rateLimit while a limit is near or reached, with a notify warning or error saying when it resets; cleared when allowed again (claude.ai accounts only)", "transform/notices.go (rateLimit)"},
	{cpLine, "refusal_continuation", leftOut, "", "the CLI's refusal handling for its terminal UI: the refusal reaches pi as the assistant message's stop reason (error)", ""},
	{cpLine, "response_length", leftOut, "", "the CLI's streamed-length counter for its terminal UI: pi counts the deltas it gets", ""},
	{cpLine, "result", mapped, "", "the end of the CLI's turn: agent_end, or the next turn of the run (the runner decides); its cost, usage and model limits on the last message and in get_session_stats and get_state; an error result as the run's error", "transform/translator.go (Translator.result), bridge/runner.go"},
	{cpLine, "session_notice", leftOut, "", whyInternal, ""},
	{cpLine, "set_expanded_view", leftOut, "", whyInternal, ""},
	{cpLine, "set_in_progress_tool_use_ids", leftOut, "", whyInternal, ""},
	{cpLine, "stream_event", mapped, "", "message_update (the API's stream events below), for the session and for sub-agents (subagent_event)", "transform/translator.go (Translator.streamLine, streamEvent)"},
	{cpLine, "stream_mode", leftOut, "", whyInternal, ""},
	{cpLine, "system", mapped, "", "see the system subtypes below", "transform/translator.go (Translator.Append)"},
	{cpLine, "tombstone", leftOut, "", whyInternal, ""},
	{cpLine, "tool_progress", leftOut, "", "a running tool's elapsed time, with no output: pi's tool_execution_update carries partial results, which the CLI does not stream", ""},
	{cpLine, "tool_use_summary", leftOut, "", "a model-written label for a group of tool calls in the CLI's compact view: pi shows the calls themselves", ""},
	{cpLine, "user", mapped, bothWays, "from the CLI: tool results (tool_execution_end and a toolResult message), a slash command's output (the assistant's answer), a compaction summary; to the CLI: each prompt, steer and follow-up", "transform/translator.go (Translator.user), claudecli/userline.go"},

	// system subtypes.
	{cpSystem, "agents_killed", leftOut, "", whyInternal, ""},
	{cpSystem, "api_error", leftOut, "", whyInternal + "; an API error reaches pi as the assistant message's error or the result's", ""},
	{cpSystem, "api_retry", mapped, "", "auto_retry_start (auto_retry_end when the next attempt streams or the run ends)", "transform/translator.go (Translator.Append, endRetry)"},
	{cpSystem, "away_summary", leftOut, "", whyInternal, ""},
	{cpSystem, "background_tasks_changed", mapped, "", "setStatus claude.backgroundTasks with the background tasks running, cleared when none are", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "cloud_session_delta", leftOut, "", whyInternal, ""},
	{cpSystem, "code_change_published", leftOut, "", whyInternal, ""},
	{cpSystem, "commands_changed", mapped, "", "no frame of its own: get_commands answers the new list, and the host gets available_commands_update", "transform/notices.go (Translator.TakeCommands), bridge/models.go"},
	{cpSystem, "compact_boundary", mapped, "", "the compaction's result: compaction_end and the session's compaction entry (tokens before and after, trigger); the summary that follows is its summary", "transform/translator.go (Translator.Append), bridge/compact.go"},
	{cpSystem, "control_request_progress", leftOut, "", "progress of a long request the host sent: claude-rpc's requests (initialize, get_settings, get_context_usage summary) are answered at once, each with a deadline", ""},
	{cpSystem, "dev_intent", leftOut, "", whyInternal, ""},
	{cpSystem, "elicitation_complete", leftOut, "", "a URL elicitation is a confirm the host answered when the user opened the link: nothing is open for the completion to close, and the MCP tool's result tells the model the rest", ""},
	{cpSystem, "feedback_draft_queued", leftOut, "", whyInternal, ""},
	{cpSystem, "file_attachments_missing", leftOut, "", whyInternal, ""},
	{cpSystem, "file_snapshot", leftOut, "", whyInternal, ""},
	{cpSystem, "files_persisted", leftOut, "", "files the CLI persisted for its remote sessions: pi has no counterpart", ""},
	{cpSystem, "hook_progress", mapped, "", "setStatus claude.hook.<hook_id> with the hook's last output line", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "hook_response", mapped, "", "clears the hook's status; a hook that failed is a notify warning with its exit code and stderr", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "hook_started", mapped, "", "setStatus claude.hook.<hook_id> while the hook runs (the bridge passes --include-hook-events)", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "informational", mapped, "", "notify: a warning at level warning, info at notice and suggestion; level info is left out (the CLI shows it only in its transcript view)", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "inherited_asks_settled", leftOut, "", whyInternal, ""},
	{cpSystem, "init", mapped, "", "the model and fast mode get_state reports, the session id", "transform/translator.go (Translator.Append), bridge/runner.go"},
	{cpSystem, "instruction_size_warning", leftOut, "", whyInternal, ""},
	{cpSystem, "late_allow_not_run", leftOut, "", whyInternal, ""},
	{cpSystem, "local_command_output", mapped, "", "notify info with the command's output", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "memory_recall", leftOut, "", "which memory files the CLI recalled: pi has no memory feature to show it in", ""},
	{cpSystem, "memory_saved", leftOut, "", whyInternal, ""},
	{cpSystem, "mirror_error", leftOut, "", "a SessionStore (the SDK's transcript mirror) that failed to take a batch: claude-rpc sets none; the session's transcript is the CLI's local file", ""},
	{cpSystem, "model_consent_fallback", leftOut, "", whyInternal, ""},
	{cpSystem, "model_fallback", leftOut, "", whyInternal + "; the model a message came from is on the message", ""},
	{cpSystem, "model_refusal_fallback", mapped, "", "notify warning with the CLI's text", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "model_refusal_no_fallback", mapped, "", "notify error with the CLI's text", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "notification", mapped, "", "notify: a warning when its priority is high or immediate, else info", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "peer_message_hold", leftOut, "", whyInternal, ""},
	{cpSystem, "per_turn_effort_changed", leftOut, "", "the CLI's per-turn effort for its terminal UI: pi's thinking level is the host's (set_thinking_level, thinking_level_changed)", ""},
	{cpSystem, "permission_check_status", leftOut, "", whyInternal, ""},
	{cpSystem, "permission_denied", mapped, "", "why the tool was refused: the tool call's result details.permissionDenied {reason, reasonType} (tool_execution_end, the toolResult message)", "transform/notices.go (deniedDetails)"},
	{cpSystem, "permission_retry", leftOut, "", whyInternal, ""},
	{cpSystem, "plugin_install", leftOut, "", "the CLI installing its plugins at start: " + whyCLIConfig, ""},
	{cpSystem, "post_turn_summary", leftOut, "", whyInternal, ""},
	{cpSystem, "scheduled_task_fire", leftOut, "", whyInternal, ""},
	{cpSystem, "session_metadata", leftOut, "", whyInternal, ""},
	{cpSystem, "session_state_changed", leftOut, "", "idle, running or requires_action: claude-rpc knows a run's state from the lines themselves (result, its own requests)", ""},
	{cpSystem, "session_title_changed", leftOut, "", whyInternal + "; the session's name is the host's (set_session_name)", ""},
	{cpSystem, "session_writes_lost", mapped, "", "notify error: the CLI lost transcript writes (the pi file is still written by the bridge)", "transform/notices.go (Translator.notice), bridge/notices.go"},
	{cpSystem, "shell_cwd", leftOut, "", whyInternal, ""},
	{cpSystem, "status", mapped, "", "compaction_start and, when it fails, compaction_end for a compaction the CLI begins by itself; its permissionMode: setStatus claude.permissionMode, get_state's permissionMode and permission_mode_changed", "transform/translator.go (Translator.Append), transform/notices.go, bridge/permission.go (server.followPermissionMode)"},
	{cpSystem, "stop_hook_summary", leftOut, "", whyInternal, ""},
	{cpSystem, "task_list_statuses", leftOut, "", whyInternal, ""},
	{cpSystem, "task_notification", mapped, "", "subagent_lifecycle (the sub-agent ended)", "transform/subagents.go (Translator.taskLine)"},
	{cpSystem, "task_progress", mapped, "", "subagent_progress", "transform/subagents.go (Translator.taskLine)"},
	{cpSystem, "task_started", mapped, "", "subagent_lifecycle (a sub-agent started)", "transform/subagents.go (Translator.taskLine)"},
	{cpSystem, "task_summary", leftOut, "", whyInternal, ""},
	{cpSystem, "task_updated", mapped, "", "the sub-agent's subagent_progress: a new description, or detached once it went to the background", "transform/notices.go (Translator.taskUpdated)"},
	{cpSystem, "thinking", leftOut, "", whyInternal, ""},
	{cpSystem, "thinking_tokens", leftOut, "", "a count of thinking tokens streamed (the CLI does not relay thinking deltas): the thinking text comes with the complete assistant line", ""},
	{cpSystem, "turn_duration", leftOut, "", whyInternal, ""},
	{cpSystem, "turn_handoff_available", leftOut, "", whyInternal, ""},
	{cpSystem, "turn_preempted", leftOut, "", whyInternal, ""},
	{cpSystem, "ui_focus", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_invalidate", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_log", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_notify", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_notify_cancel", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_panes", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_placed", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_scroll", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_status", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "ui_toast", leftOut, "", whyRemoteUI, ""},
	{cpSystem, "upgrade_relay_marker", leftOut, "", "the CLI's remote-session relay: pi has no counterpart", ""},
	{cpSystem, "vcs_state_changed", leftOut, "", whyInternal, ""},
	{cpSystem, "worker_shutting_down", leftOut, "", "sent by the CLI's bridge to remote clients when a worker is torn down: a local CLI process's end is seen as its exit", ""},

	// Control requests.
	{cpRequest, "add_directory", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "apply_flag_settings", mapped, toCLI, "set_thinking_level (effortLevel) and set_fast_mode (fastMode) on the running process", "claudecli/stream.go (stream.SetConfig)"},
	{cpRequest, "background_tasks", mapped, toCLI, "background_tasks (claude-rpc's command): a running foreground tool call (toolCallId, or all) moved to the background", "bridge/tasks.go (server.backgroundTasks), claudecli/stream.go (stream.Control)"},
	{cpRequest, "can_use_tool", mapped, fromCLI, "--ask: extension_ui_request select (allow once, allow always, deny); AskUserQuestion: its questions as dialogs; host tools are allowed", "bridge/hostlink/prompt.go (Link.CanUseTool)"},
	{cpRequest, "cancel_async_message", mapped, toCLI, "clear_queue: each steer handed to the CLI and not yet started is taken back ({cancelled:true}: listed in steering; false: started, listed in kept)", "claudecli/stream.go (streamTurn.Cancel), bridge/runner.go (server.clearQueue)"},
	{cpRequest, "channel_enable", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "claim_session", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "claude_authenticate", leftOut, unchecked, whyUndeclared + " (pi's login is the CLI's own /login)", ""},
	{cpRequest, "claude_oauth_callback", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "claude_oauth_wait_for_completion", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "code_change_published", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "comparison_fork", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "decide_held_peer_message", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "dictate", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "elicitation", mapped, fromCLI, "an MCP server asking the user: a form is one extension_ui_request dialog per field (input, editor, select, confirm), a URL a confirm with the URL; cancelled, unanswered or a schema pi cannot show: declined", "bridge/hostlink/dialogs.go (Link.Elicitation)"},
	{cpRequest, "end_session", leftOut, toCLI, "claude-rpc ends a CLI process by closing its stdin (then SIGTERM); not in the Agent SDK's types", ""},
	{cpRequest, "export_conversation", leftOut, unchecked, whyInternal + "; export_html renders the session itself", ""},
	{cpRequest, "file_suggestions", leftOut, toCLI, "path completion for the CLI's prompt: a pi host completes paths itself", ""},
	{cpRequest, "fork_conversation", leftOut, unchecked, whyUndeclared + "; fork, branch and clone start a CLI with --fork-session and --resume-session-at", ""},
	{cpRequest, "get_binary_version", leftOut, toCLI, "the CLI's version is read from its install, else --version (claudecli/version.go)", ""},
	{cpRequest, "get_chrome_browsers", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_chrome_dialog", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_cloud_session", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_cloud_session_transcript", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_context_usage", mapped, toCLI, "the context window get_state and get_available_models report (detail summary: no token-count calls)", "claudecli/info.go (modelRequests)"},
	{cpRequest, "get_hooks_listing", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "get_memory_dialog", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_plan", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_sandbox_dialog", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_session_cost", leftOut, toCLI, "the CLI's /usage text: get_session_stats sums the result lines' cost and usage", ""},
	{cpRequest, "get_settings", mapped, toCLI, "the model the next turn runs (get_state, get_available_models)", "claudecli/info.go (modelRequests)"},
	{cpRequest, "get_skills_dialog", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "get_status", mapped, toCLI, "none shown: a warm-up a prewarmed process is asked after initialize (it builds the system prompt, context and tools before the first turn; @internal in the CLI's schema)", "claudecli/stream.go (warmups)"},
	{cpRequest, "get_task_output", mapped, toCLI, "get_task_output (claude-rpc's command): a background Bash task's output (a sub-agent's is its transcript: get_subagent_messages)", "bridge/tasks.go (server.getTaskOutput), claudecli/stream.go (stream.Control)"},
	{cpRequest, "get_usage", leftOut, toCLI, "the account's plan usage and limits: pi has no counterpart (get_session_stats is the session's)", ""},
	{cpRequest, "get_workspace_diff", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "hook_callback", mapped, fromCLI, "with pi extensions running, PreToolUse and PostToolUse for every tool (initialize's hooks): the extensions' tool_call (block, change the input: permissionDecision deny, updatedInput) and tool_result (updatedToolOutput) for the CLI's own tools; without, no hooks are registered and the CLI never asks", "bridge/extensions.go (server.toolHook), claudecli/stream.go (toolHooks)"},
	{cpRequest, "host_auth_token_refresh", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "initialize", mapped, toCLI, "sent first to each process: the models and commands get_available_models and get_commands answer; perTaskStopAffordance is not declared, so abort during a run stops the background tasks too, as pi's abort stops everything (stop_task stops one; bridge/tasks.go)", "claudecli/stream.go (stream.startProc), claudecli/info.go, claudecli/rename.go"},
	{cpRequest, "interrupt", mapped, toCLI, "abort (with cancel_queued: steers not yet started go too)", "claudecli/stream.go (streamTurn.Interrupt)"},
	{cpRequest, "list_cloud_sessions", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "list_directory", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "list_models", leftOut, toCLI, "get_available_models reads initialize's models (the same list)", ""},
	{cpRequest, "list_permission_rules", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "log_host_events", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "mcp_authenticate", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "mcp_call", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "mcp_clear_auth", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "mcp_message", mapped, fromCLI, "host tools (set_host_tools, an extension's tools): the MCP server claude-rpc serves over the control protocol; a tool call becomes host_tool_call. Sent to the CLI too: notifications/tools/list_changed when the host's tools changed", "bridge/host.go (server.mcpMessage), claudecli/stream.go (stream.noteChange)"},
	{cpRequest, "mcp_oauth_callback_url", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "mcp_read_resource", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "mcp_reconnect", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "mcp_set_servers", mapped, toCLI, "set_host_tools (and set_host_uri_schemes, the extensions' tools) on the running process: the first tool of a process started without the host's MCP server adds it (while asking is on); a changed list of a server it has is an MCP notifications/tools/list_changed (an mcp_message request to the CLI), after which the CLI lists the tools again", "claudecli/stream.go (stream.noteChange), bridge/state.go (server.cliConfig: Config.SDKTools)"},
	{cpRequest, "mcp_status", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "mcp_tasks_changed", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "mcp_toggle", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "message_rated", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "oauth_token_refresh", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "poll_event", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "prompt_draft_activity", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "read_file", leftOut, toCLI, "a file read through the CLI: a pi host reads its own files", ""},
	{cpRequest, "register_device_hooks", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "register_repo_root", leftOut, toCLI, "adds a working-directory root (and reloads CLAUDE.md, skills and plugins): pi has no command for another root; the CLI runs in the bridge's folder", ""},
	{cpRequest, "reload_connectors", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "reload_output_styles", leftOut, toCLI, whyCLIConfig + "; a new process loads them", ""},
	{cpRequest, "reload_plugins", leftOut, toCLI, whyCLIConfig + "; a new process loads them", ""},
	{cpRequest, "reload_skills", leftOut, toCLI, whyCLIConfig + "; a new process loads them, and get_commands lists the running one's", ""},
	{cpRequest, "remote_control", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "remote_control_work_secret", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "remote_plumbing_call", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "remote_tool_call", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "remote_tools_announce", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "remote_tools_probe", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "remote_tools_reannounce", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "rename_session", mapped, toCLI, "set_session_name (the running process, or one started for it)", "claudecli/rename.go (stream.Rename, RenameSession)"},
	{cpRequest, "request_user_dialog", mapped, fromCLI, "the kinds declared in initialize (refusal_fallback_prompt, auto_mode_server_fallback) as extension_ui_request select; the others are not declared, so the CLI never sends them", "bridge/hostlink/dialogs.go (Link.UserDialog)"},
	{cpRequest, "rewind_conversation", leftOut, unchecked, whyUndeclared + "; fork and branch start a CLI with --resume-session-at", ""},
	{cpRequest, "rewind_files", mapped, toCLI, "fork and branch with restoreFiles (claude-rpc's): the files the CLI's tools changed from the prompt on are put back (a dry run for the list, then the rewind), answered in restoredFiles; file checkpointing by --restore-files (CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING)", "claudecli/rewind.go (RewindFiles), bridge/rewind.go (server.restoreFiles)"},
	{cpRequest, "seed_read_state", leftOut, toCLI, "primes the CLI's Read tool after an edit outside it: a pi host's edits go through the model's tools", ""},
	{cpRequest, "select_chrome_browser", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_chrome_browser_hints", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_color", leftOut, toCLI, "the session's accent color: pi has none", ""},
	{cpRequest, "set_cwd", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_has_subscribers", leftOut, toCLI, "matters only to a CLI started with CLAUDE_CODE_STREAM_EVENT_HOLD_MS, which claude-rpc does not set", ""},
	{cpRequest, "set_max_thinking_tokens", leftOut, toCLI, "superseded by effort: set_thinking_level sends apply_flag_settings {effortLevel}", ""},
	{cpRequest, "set_mcp_permission_mode_override", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_message_waiting", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_model", leftOut, toCLI, "set_model starts a new process with --model instead: the CLI records a model set on a running process as a /model command in the conversation (claudecli/stream.go, stream.SetConfig); scripts/record sends it for a recording", ""},
	{cpRequest, "set_peer_delivery", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "set_permission_mode", mapped, toCLI, "set_permission_mode (claude-rpc's command) on the running process; the CLI's report of it (system status permissionMode) is not passed on; a report of its own change (ExitPlanMode, EnterPlanMode) is followed: get_state's permissionMode, permission_mode_changed", "claudecli/stream.go (stream.noteChange, streamProc.echoed), bridge/permission.go"},
	{cpRequest, "set_proactivity_level", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "set_prompt_suggestions_paused", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "side_question", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "stage_file", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "start_shell_task", leftOut, unchecked, whyInternal + "; pi's bash runs in claude-rpc", ""},
	{cpRequest, "stop_task", mapped, toCLI, "stop_task (claude-rpc's command): one sub-agent or background task stopped by its id, the id checked against the task_* lines of the running process (the CLI acknowledges any id)", "bridge/tasks.go (server.stopTask), claudecli/tasks.go (taskSet, stream.Task)"},
	{cpRequest, "submit_feedback", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "submit_survey_feedback", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "turn_handoff", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "ui_attach", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_client_fault", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_client_module", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_client_press", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_close", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_copy", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_detach", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_focus", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_input", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_message", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_pane_focus", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_pane_show", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_panes", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_press", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_autocomplete", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_edit", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_fill", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_paint", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_read", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_prompt_suggest", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_read_selection", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_render", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_scroll", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ui_select", leftOut, unchecked, whyRemoteUI, ""},
	{cpRequest, "ultrareview_launch", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "update_cloud_session", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "update_queued_message", leftOut, unchecked, whyUndeclared, ""},
	{cpRequest, "update_settings", leftOut, toCLI, whyCLIConfig, ""},
	{cpRequest, "upload_device_hook_template", leftOut, unchecked, whyInternal, ""},
	{cpRequest, "vcs_state_changed", leftOut, unchecked, whyUndeclared, ""},

	// The API's stream events (stream_event's event).
	{cpEvent, "content_block_delta", mapped, "", "message_update text_delta, thinking_delta, toolcall_delta (the deltas below)", "transform/translator.go (Translator.streamEvent)"},
	{cpEvent, "content_block_start", mapped, "", "message_update text_start, thinking_start, toolcall_start (the blocks below)", "transform/translator.go (Translator.streamEvent)"},
	{cpEvent, "content_block_stop", mapped, "", "message_update text_end, thinking_end, toolcall_end", "transform/translator.go (Translator.streamEvent)"},
	{cpEvent, "message_delta", mapped, "", "the message's stopReason and usage", "transform/translator.go (Translator.streamEvent)"},
	{cpEvent, "message_start", mapped, "", "turn_start (from the second model call on) and the assistant's message_start; ends a retry (auto_retry_end)", "transform/translator.go (Translator.streamEvent)"},
	{cpEvent, "message_stop", mapped, "", "the assistant's message_end, then tool_execution_start for its tool calls (a stop without a message_delta: the stream broke off, stopReason error)", "transform/translator.go (Translator.streamEvent, endAssistant)"},

	// content_block_delta's deltas.
	{cpDelta, "citations_delta", leftOut, "", "pi's text content has no citations", ""},
	{cpDelta, "compaction_delta", leftOut, "", "the API's server-side compaction, which the CLI does not use: the CLI compacts by itself (system status, compact_boundary)", ""},
	{cpDelta, "input_json_delta", mapped, "", "message_update toolcall_delta (renamed into pi's argument shapes as it streams)", "transform/translator.go (Translator.streamEvent), transform/toolnames.go"},
	{cpDelta, "signature_delta", leftOut, "", "the thinking block's signature stays with the CLI, which sends the conversation back to the API", ""},
	{cpDelta, "text_delta", mapped, "", "message_update text_delta", "transform/translator.go (Translator.appendTo)"},
	{cpDelta, "thinking_delta", mapped, "", "message_update thinking_delta", "transform/translator.go (Translator.appendTo)"},

	// content_block_start's content blocks.
	{cpBlock, "advisor_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "bash_code_execution_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "code_execution_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "compaction", leftOut, "", "the API's server-side compaction, which the CLI does not use (see compaction_delta)", ""},
	{cpBlock, "container_upload", leftOut, "", whyServerBlock, ""},
	{cpBlock, "fallback", leftOut, "", "a block pi's assistant content has no type for; the translator skips it", ""},
	{cpBlock, "mcp_tool_listing", leftOut, "", whyServerBlock, ""},
	{cpBlock, "mcp_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "mcp_tool_use", leftOut, "", whyServerBlock, ""},
	{cpBlock, "redacted_thinking", mapped, "", "an empty thinking block", "transform/translator.go (Translator.streamEvent)"},
	{cpBlock, "server_tool_use", mapped, "", "a toolCall, like tool_use", "transform/translator.go (Translator.streamEvent)"},
	{cpBlock, "text", mapped, "", "a text block", "transform/translator.go (Translator.streamEvent)"},
	{cpBlock, "text_editor_code_execution_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "thinking", mapped, "", "a thinking block", "transform/translator.go (Translator.streamEvent)"},
	{cpBlock, "tool_search_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "tool_use", mapped, "", "a toolCall (pi's tool names and argument shapes)", "transform/translator.go (Translator.streamEvent), transform/toolnames.go"},
	{cpBlock, "web_fetch_tool_result", leftOut, "", whyServerBlock, ""},
	{cpBlock, "web_search_tool_result", leftOut, "", whyServerBlock, ""},
}
