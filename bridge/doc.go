// Package bridge speaks the pi coding agent's RPC protocol to a host over a
// reader and a writer (the bridge's stdin and stdout) and runs each prompt
// through the Claude CLI: framing, dispatch, runs, and the protocol layer.
//
// # Data flow
//
// One goroutine reads the host's lines (hostReader) and hands them to the
// dispatcher (Serve's loop), which parses each into a call, looks its type
// up in the one table of commands ([commandTable]: name, request fields,
// handler, response type, docs), checks the fields, and runs the handler
// under the ordering rules below. A handler returns the response's data or
// an error; the dispatcher writes the response. Everything about runs
// belongs to the [runner]: one goroutine (its loop) that owns the running
// prompt (its [transform.Translator], its CLI turn ([claudecli.Turn]), the
// steering messages handed to the CLI), the steering and follow-up
// queues, the CLI's own turn read while idle, and "is the turn / the run
// over". Handlers ask it through its methods (prompt, steer, abort,
// clear_queue, get_state's status, a session switch's detach), each a
// message the loop runs between two CLI lines. Nothing the loop runs
// waits for the CLI: a turn is started by a goroutine that hands the loop
// the started turn, and read by one reader per turn that hands it each
// line and reads the next once the loop is done with it. For each line the
// loop feeds the translator and queues the events; the translator only
// reports what it learned from a line (a result, with or without an
// error); the loop decides what follows (another turn, the run's end). The
// protocol layer (package [writer]) is the only writer of stdout: typed
// frames (responses, events, requests to the host; frames.go, hostlink's
// and transform's shapes) written in the order they were queued, by one
// goroutine, each a whole line. That goroutine drives a chain of stages,
// each a type with one job: orderQueue (a response, handed over with
// Respond, may overtake queued message_updates, nothing else reorders),
// coalescer (a block's deltas within the window become one update),
// frameEncoder (omp message ids, set_event_filter, encoding, rpc_chunk
// framing) and sink (stdout, the pipe's size, the trace).
//
// The stream transport's CLI is read at all times: its process's stdout
// has one reader (claudecli's streamProc.read), which hands each line to
// the turn that is open. A line that comes while none is open begins a
// turn of the CLI's own ([claudecli.OwnTurn]: a background sub-agent or
// task ended while idle, and the CLI answers it by itself), offered to
// the runner ([runner.ownTurn]). When idle, the runner claims it and reads
// it quietly ([runner.quietLine]): what begins no turn (a background
// sub-agent's lines, its task reports; [claudecli.OpensTurn]) shows as
// sub-agent frames only, and the bridge stays idle; the first line of a
// turn (system init) makes it a run of its own ([runner.runOwn]):
// agent_start, the turn's events, agent_end, agent_settled,
// session_settled (no prompt_result: there is no prompt), driven by the
// same code as a prompt's run (runLine, runQueued), so get_state, get_messages,
// queues, abort and sub-agent frames are as in one. A prompt or compaction
// that starts while the turn is read quietly stops that reader
// ([runner.afterQuiet]), adopts its sub-agents and reads the CLI from
// there. An offer made while a run is under way waits until the bridge is
// idle ([runner.ended]), unless that run's next CLI turn takes its lines
// over: the prompt's user line carries a uuid, and its turn begins where
// the CLI reports that line started (command_lifecycle); lines before
// that are of a turn the CLI ran by itself and show as a turn of that
// run. That report is the one thing that separates a prompt's turn from
// one of the CLI's own.
//
// A line the CLI prints that is longer than Options.MaxLine is skipped by
// the transport, which says so to the turn (claudecli.Turn's Next); the
// runner logs it and shows the host an error notice among the turn's
// events (extension_ui_request, method notify, notifyType error: pi has no
// event for a lost line, nor does an assistant message's errorMessage fit
// a turn that goes on). The turn goes on without the line; what it held (a
// reply's text, a tool call's input or result) is missing from the run.
//
// During a run of the CLI's own, commands follow pi's rules for a run in
// progress: prompt is refused ("Agent is already processing") unless it
// has streamingBehavior; steer (or a steer prompt) is handed to the CLI's
// turn; follow_up (or a followUp prompt) runs as the next turn of that
// run; abort interrupts the CLI's turn (its interrupt request) and ends the
// run aborted. Messages queued while idle, before that run began, are not
// its: they wait for the next prompt, as while idle. Why: the CLI is
// working and will answer; refusing a bare prompt keeps one run at a time
// (the host knows whose frames it sees), and pi's hosts already queue with
// streamingBehavior while isStreaming.
//
// On the stream transport a steer queued while a CLI turn runs is handed
// to the CLI at once ([runner.handOver]), not held until the model's
// message ends with tool calls: the CLI queues a line some milliseconds
// after it is written, and a fast tool's result can come first, so the
// steer would miss the model call after the tool results and come one
// call later (docs/performance.md has the figures). clear_queue takes a
// handed steer back from the CLI's queue (cancel_async_message): the CLI
// either had started it (the model gets it, the run shows it, clear_queue
// lists it in kept) or drops it (listed in steering; it never reaches the
// model), decided by the CLI alone, so never both and never neither. The
// CLI's lifecycle report on a handed line ([runner.reported]) tells when
// it started; one it let go of unstarted (cancelled, discarded, refused)
// goes back to the queue.
//
// # Who owns what
//
// Each owner below keeps its fields to itself: handlers and the runner
// call its methods, which say what they do (state.useSession,
// state.takePromptContext, infoKeeper.known, hostlink.Link.Next ...). An owner
// with a mutex takes it only in its own methods, in its own file, for
// one short section that calls no other owner; what a handler needs of
// several fields at once one method returns together (state.stateData,
// state.conversation), and a read-modify-write is one method (state.learn,
// bashJob.start). So no lock is ever held while another is taken, and
// there is no lock order.
//
//   - state (state.go; helpers in entries.go, todos.go, bash.go,
//     models.go called by its methods): the session (id, name, file,
//     messages, fork), the model and limits the CLI reported, the host's
//     settings (model, thinking level, fast mode, flags, host tools and
//     URI schemes), todos and bash context, the session's entries and
//     those queued for its pi file. One mutex, short sections, no
//     I/O under it but a stat of the transcript (nextSession); its fields
//     are a lockedState, which only state.lock hands out, and the helpers
//     run under it are lockedState's.
//   - runner (runner.go, compact.go): the run, the queues (and those held
//     aside during a run of the CLI's own), handed steering messages, the
//     turn of the CLI's own read quietly or offered. It has no lock: its
//     fields are its loop's; it asks state through state's methods. Each
//     method that touches them says "On the loop." and checks it
//     (runner.onLoop: in the package's tests it panics when called from
//     another goroutine; in production it is off).
//   - sessionFiles (pifiles.go): the session's pi file (Options.PiSessions)
//     and its writers; a goroutine of its own, woken when state queued
//     entries (state.queue, under state's mutex: a send that never
//     blocks), takes them (state.takeUnwritten) and writes them with no
//     lock held, in the order made. set_session_name waits (a second at
//     most) for its entry to be written (sessionFiles.sync); nothing else
//     does. Ended at shutdown after the runs, so their last entries go.
//   - hostlink.Link (package hostlink; host.go is the bridge's side): the
//     requests waiting for the host's answer, by id, and what asks them:
//     the dialogs (a tool's permission, AskUserQuestion, MCP elicitation,
//     the CLI's own dialogs, an extension's ctx.ui dialogs) with
//     --ask-timeout and withdrawal, and the calls of the host's tools and
//     URI schemes. It gets what it needs of the server at construction
//     (the writer's Send, the server's context, --ask, the wait for a
//     tool's start, what the host serves: state's settings) and imports
//     nothing of the bridge; the host's answers reach it through the
//     preempting commands (Link.Answer).
//   - bashJob (bash.go): the bash command running, one at a time.
//   - extensions.Host (package extensions; extensions.go is the bridge's
//     glue, called at the dispatcher's and the runner's points): the
//     extension host, a Node process running pi's own extension runtime,
//     started with the server when there is an extension to load and
//     ended at its shutdown. Its stdout has one reader, which hands its
//     tools to the settings, its ctx.ui calls to the writer (dialogs
//     through hostlink's Link.Ask, on goroutines of the
//     server's) and its API calls to
//     extensions.Actions, which makes them on goroutines of the server's
//     as the host's commands, through the session the bridge gives it
//     (extensions.Session, extsession.go: internalCall, through the
//     dispatcher, and the owners' methods). extensions.Pump owns the
//     frames handed to it (the writer's tap queues them and never
//     blocks); extensions.Actions the calls and notices the extensions do
//     not wait for, carried out in order on one goroutine at a time (its
//     push never blocks). Neither holds its lock while it calls out.
//     toolStarts (toolstarts.go) holds the tool calls whose
//     tool_execution_start was queued, which the tools the bridge runs
//     for the CLI wait for.
//   - infoKeeper (models.go): the CLI's models and commands, from the running
//     CLI when the stream transport has one, else one query process shared
//     by concurrent asks; until either answered, what the CLI said last
//     time (the info cache, infocache.go: read before ready, written on
//     the bridge's goroutines, never the dispatcher). Until either, the
//     model get_state reports is the one the CLI's start-up names, else
//     waited for (startmodel.go: the one handler answered on the
//     dispatcher that may hand its answer to a goroutine, with the state
//     as of the call, holding no other command back).
//   - plannedTransport (plan.go): the transport, made once the CLI's
//     version said which (Options.Plan, on its own goroutine after
//     ready). Only what runs the CLI waits for it (tr); the dispatcher
//     never does (transportNow, transportName). It hands the transport the
//     config the settings say (pass): of two racing, the later settings'.
//   - subagentRegistry (subagents.go): the CLI's sub-agents seen in the
//     session (running ones, their transcripts), the host's subscription,
//     and the background ones a stream run left running for the next run
//     to adopt.
//   - the writer ([writer.Writer]): stdout.
//   - the server's context (server.ctx): the parent of every call's
//     context ([call.Context], as net/http's Request.Context), ended
//     first thing at shutdown. What a handler waits on (a CLI query
//     process, reading or converting a session, export_html, the bash
//     command, a request waiting for the host) ends with it; the handler
//     answers the cause. Work owed to the transcript (a rename) gets
//     the flush wait more (owedContext).
//
// # Ordering rules (what a host may rely on)
//
//  1. No command waits behind another that does not touch what it touches.
//     Handlers that take time (asking the CLI for its models or commands,
//     switching, forking or cloning a session, export_html, new_session
//     during a run) run on their own goroutines; the others are answered
//     on the dispatcher from state, never blocking on I/O.
//  2. abort, abort_bash, abort_retry, extension_ui_response and the
//     host_tool_* answers always preempt: they wait for nothing. An abort
//     (or abort_and_prompt) still acts in the order sent: a prompt or
//     compact sent before it that has not begun yet (it waits for an
//     earlier command, or for the runner's loop) is the run it aborts.
//     What runs stops at once; the abort waits, on a goroutine of its
//     own, until those calls began (their run is the runner's, or they
//     are answered), then ends their run (call.before, order.notBegun).
//  3. Two commands that touch the same thing (the run, the CLI's config,
//     the session) run in the order sent: each table entry says what it
//     reads and writes, and a call waits for the earlier calls that write
//     what it reads or writes, and for the earlier readers of what it
//     writes. So a command that changes state is visible to every command
//     sent after it (set_model then get_state); a long one may say early
//     that its change is made (call.settle), letting the commands behind
//     it go while it finishes (new_session switches at once and answers
//     once the old run has ended).
//  4. A prompt (and abort_and_prompt) is answered before its agent_start;
//     an abort after the run's agent_end (at once when idle; at once too
//     while the run's CLI turn is being started, which may wait seconds
//     for the previous CLI process to exit: the run ends, and the turn,
//     once started, is interrupted and drained unseen); a run's last
//     frames are queued before the bridge counts as idle, so a host that
//     prompts on agent_end is never refused as busy, and get_state sent
//     after agent_end says the bridge is idle.
//  5. Answers to different commands may come in any order: hosts correlate
//     by id, as pi's docs say.
//  6. With extensions, as pi: what a handler asked without waiting is
//     carried out before the bridge goes on from that handler (an input
//     handler's sendMessage before the prompt's run, a command's calls
//     before its answer: extensions.Actions.Settle); agent_end reaches the
//     extensions' handlers, and what they ask, before the host (the run
//     stays current meanwhile, runner.finish); a tool the bridge runs for
//     the CLI starts after its tool_execution_start was queued (2 s at
//     most), so its progress and host_tool_call never come before it.
//  7. At shutdown (stdin's end, Serve's context) no command is waited out:
//     those at work are cancelled and answered ("the bridge is shutting
//     down"; bash: cancelled) before Serve returns.
//
// # Adding things
//
// A new command is one entry in [commandTable] (commands.go) and its
// handler; the dispatcher, the list of known commands and the protocol
// reference come from the table. A new event from the CLI goes into
// transform (its shape in transform/shapes.go, its making in the
// translator); a frame the bridge makes itself is a type in frames.go,
// listed in bridgeEvents (protocol.go) for the reference (the host
// link's requests are hostlink's, listed there too). The reference
// itself is package bridge/reference, which reads the bridge's frames
// through [Frames]; the bridge does not import it.
package bridge
