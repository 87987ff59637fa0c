// host.ts: an omp host, as one is written today: it drives any `--mode rpc`
// binary through omp 18.3.4's own RpcClient (src/modes/rpc/rpc-client.ts,
// run from source under Bun) and prints, as one JSON document on stdout,
// whether each named scenario passed and the frames it saw both ways.
//
//   OMP_DIR=$(scripts/install-omp)
//   $OMP_DIR/node_modules/.bin/bun scripts/omp-host/host.ts \
//       --scenario all -- /tmp/claude-rpc demo --claude-path "$(scripts/install-cli)"
//
// Everything after `--` is the agent's argv; the RpcClient appends its own
// arguments (`--mode rpc`). See README.md beside this file for the scenarios,
// the flags and the output's shape. Our own code: omp's sources stay in the
// cache folder install-omp prints (OMP_DIR).

// First, before any of omp's modules load: see natives-stub.ts.
import "./natives-stub.ts";

const usage = `usage: bun host.ts [--scenario NAME|all|list] [--timeout-ms N] [--inject-ready v1|v2] [--frames N] -- AGENT_ARGV...`;

// ---------------------------------------------------------------------------
// omp's RpcClient, from the cache
// ---------------------------------------------------------------------------

const ompDir = process.env.OMP_DIR;
if (!ompDir) {
	console.error("host.ts: OMP_DIR must name the folder scripts/install-omp prints");
	process.exit(2);
}
const rpcDir = `${ompDir}/pi-coding-agent/src/modes/rpc`;
const { RpcClient, RpcCommandError } = await import(`${rpcDir}/rpc-client.ts`);
const frameModule = await import(`${rpcDir}/rpc-frame.ts`);

// ---------------------------------------------------------------------------
// arguments
// ---------------------------------------------------------------------------

interface Options {
	scenario: string;
	timeoutMs: number;
	/** A ready frame put before the agent's own output: "v2" offers protocol v2, "v1" does not (no negotiation). */
	injectReady: "" | "v1" | "v2";
	maxFrames: number;
	agent: string[];
}

function parseArgs(argv: string[]): Options {
	const opts: Options = { scenario: "all", timeoutMs: 20_000, injectReady: "", maxFrames: 400, agent: [] };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "--") {
			opts.agent = argv.slice(i + 1);
			break;
		}
		if (a === "--scenario") opts.scenario = argv[++i] ?? "";
		else if (a === "--timeout-ms") opts.timeoutMs = Number(argv[++i]);
		else if (a === "--inject-ready") {
			const v = argv[++i];
			if (v !== "v1" && v !== "v2") {
				console.error(`host.ts: --inject-ready takes v1 or v2\n${usage}`);
				process.exit(2);
			}
			opts.injectReady = v;
		}
		else if (a === "--frames") opts.maxFrames = Number(argv[++i]);
		else {
			console.error(`host.ts: unknown argument ${a}\n${usage}`);
			process.exit(2);
		}
	}
	if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) {
		console.error(`host.ts: --timeout-ms must be a positive number\n${usage}`);
		process.exit(2);
	}
	return opts;
}

// ---------------------------------------------------------------------------
// the agent process, with every frame recorded both ways
// ---------------------------------------------------------------------------

/** One physical line seen on the wire, summarised. */
interface FrameRecord {
	/** "in": host to agent (stdin); "out": agent to host (stdout). */
	dir: "in" | "out";
	/** Milliseconds since the scenario started. */
	t: number;
	/** Bytes of the line, without its newline. */
	bytes: number;
	type?: string;
	id?: string;
	command?: string;
	success?: boolean;
	error?: string;
	/** Set when the line is not JSON. */
	invalid?: true;
	/** rpc_chunk: chunkId, index/count. */
	chunk?: string;
	/** message_*: the messageId omp stamps on message frames. */
	messageId?: string;
	/** agent_end: yielded / isTerminal. */
	yielded?: unknown;
	isTerminal?: unknown;
	/** prompt_result: status, agentInvoked, sessionSettled. */
	status?: string;
	agentInvoked?: unknown;
	sessionSettled?: unknown;
}

class Recorder {
	frames: FrameRecord[] = [];
	counts: Record<string, number> = {};
	maxOutLine = 0;
	outLines = 0;
	outLinesOverLimit = 0;
	readonly start = performance.now();
	listeners = new Set<(rec: FrameRecord, raw: string) => void>();

	constructor(readonly maxFrames: number) {}

	record(dir: "in" | "out", line: string): void {
		if (line.trim() === "") return;
		const bytes = Buffer.byteLength(line, "utf8");
		const rec: FrameRecord = { dir, t: Math.round(performance.now() - this.start), bytes };
		if (dir === "out") {
			this.outLines++;
			this.maxOutLine = Math.max(this.maxOutLine, bytes);
			if (bytes + 1 > frameModule.MAX_RPC_FRAME_BYTES) this.outLinesOverLimit++;
		}
		let v: any;
		try {
			v = JSON.parse(line);
		} catch {
			rec.invalid = true;
		}
		if (v && typeof v === "object" && !Array.isArray(v)) {
			const str = (x: unknown) => (typeof x === "string" ? x.slice(0, 200) : undefined);
			rec.type = str(v.type);
			rec.id = str(v.id);
			rec.command = str(v.command);
			if (typeof v.success === "boolean") rec.success = v.success;
			rec.error = str(v.error);
			if (v.type === "rpc_chunk") rec.chunk = `${String(v.chunkId)} ${v.index}/${v.count}`;
			if (typeof v.messageId === "string") rec.messageId = v.messageId;
			if (v.type === "agent_end") {
				rec.yielded = v.yielded;
				rec.isTerminal = v.isTerminal;
			}
			if (v.type === "prompt_result") {
				rec.status = v.status;
				rec.agentInvoked = v.agentInvoked;
				rec.sessionSettled = v.sessionSettled;
			}
		}
		const key = `${dir}:${rec.type ?? (rec.invalid ? "(not JSON)" : "(no type)")}${rec.command ? `:${rec.command}` : ""}`;
		this.counts[key] = (this.counts[key] ?? 0) + 1;
		// Chatty frames are counted, not listed, once the list is long.
		const chatty = rec.type === "message_update" || rec.type === "rpc_chunk";
		if (this.frames.length < this.maxFrames && !(chatty && this.frames.length >= this.maxFrames / 2)) {
			for (const k of Object.keys(rec) as (keyof FrameRecord)[]) if (rec[k] === undefined) delete rec[k];
			this.frames.push(rec);
		}
		for (const l of this.listeners) l(rec, line);
	}

	/** Resolves with the first frame (recorded from now on) that matches. */
	waitFor(pred: (rec: FrameRecord, raw: string) => boolean, timeoutMs: number, what: string): Promise<FrameRecord> {
		const { promise, resolve, reject } = Promise.withResolvers<FrameRecord>();
		const l = (rec: FrameRecord, raw: string) => {
			if (!pred(rec, raw)) return;
			this.listeners.delete(l);
			clearTimeout(timer);
			resolve(rec);
		};
		const timer = setTimeout(() => {
			this.listeners.delete(l);
			reject(new Error(`no ${what} within ${timeoutMs} ms`));
		}, timeoutMs);
		this.listeners.add(l);
		return promise;
	}
}

/** Splits a byte stream into lines for the recorder, passing the bytes on untouched. */
function tapLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): ReadableStream<Uint8Array> {
	const decoder = new TextDecoder();
	let pending = "";
	return stream.pipeThrough(
		new TransformStream<Uint8Array, Uint8Array>({
			transform(chunk, controller) {
				pending += decoder.decode(chunk, { stream: true });
				let nl: number;
				while ((nl = pending.indexOf("\n")) >= 0) {
					onLine(pending.slice(0, nl));
					pending = pending.slice(nl + 1);
				}
				controller.enqueue(chunk);
			},
			flush() {
				pending += decoder.decode();
				if (pending) onLine(pending);
			},
		}),
	);
}

const readyFrame = {
	type: "ready",
	protocolVersion: 1,
	supportedProtocolVersions: [1, 2],
	maxFrameBytes: frameModule.MAX_RPC_FRAME_BYTES,
	maxReassembledFrameBytes: frameModule.MAX_RPC_REASSEMBLED_BYTES,
};

interface Agent {
	proc: ReturnType<typeof Bun.spawn>;
	stderr: () => string;
	/** Writes one raw line to the agent's stdin, recorded. */
	writeRaw: (line: string) => void;
}

function makeSpawn(opts: Options, rec: Recorder, holder: { agent?: Agent }) {
	return (agentArgs: string[]) => {
		const argv = [...opts.agent, ...agentArgs];
		const proc = Bun.spawn(argv, { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
		let stderrText = "";
		void (async () => {
			const dec = new TextDecoder();
			for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
				stderrText += dec.decode(chunk, { stream: true });
				if (stderrText.length > 64 * 1024) stderrText = stderrText.slice(-32 * 1024);
			}
		})().catch(() => {});
		let stdout = proc.stdout as ReadableStream<Uint8Array>;
		if (opts.injectReady) {
			// A measurement aid: the ready frame an omp server writes first.
			const frame = opts.injectReady === "v2" ? readyFrame : { ...readyFrame, supportedProtocolVersions: [1] };
			const inject = new TextEncoder().encode(`${JSON.stringify(frame)}\n`);
			const upstream = stdout;
			stdout = new ReadableStream<Uint8Array>({
				async start(controller) {
					controller.enqueue(inject);
					try {
						for await (const chunk of upstream) controller.enqueue(chunk);
						controller.close();
					} catch (e) {
						controller.error(e);
					}
				},
			});
		}
		stdout = tapLines(stdout, line => rec.record("out", line));
		const stdinSink = proc.stdin as import("bun").FileSink;
		let inPending = "";
		const write = (data: string | Uint8Array) => {
			const text = typeof data === "string" ? data : new TextDecoder().decode(data);
			inPending += text;
			let nl: number;
			while ((nl = inPending.indexOf("\n")) >= 0) {
				rec.record("in", inPending.slice(0, nl));
				inPending = inPending.slice(nl + 1);
			}
			return stdinSink.write(data);
		};
		holder.agent = {
			proc,
			stderr: () => stderrText,
			writeRaw: line => {
				write(`${line}\n`);
				void stdinSink.flush();
			},
		};
		return {
			stdin: { write, flush: () => stdinSink.flush() },
			stdout,
			peekStderr: () => stderrText.slice(-4096),
			kill: (signal?: unknown, graceMs?: number) => {
				try {
					proc.kill(typeof signal === "string" || typeof signal === "number" ? (signal as any) : "SIGTERM");
				} catch {}
				const grace = typeof graceMs === "number" && graceMs >= 0 ? graceMs : 1000;
				setTimeout(() => {
					try {
						if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
					} catch {}
				}, grace).unref();
			},
			exited: proc.exited,
		};
	};
}

// ---------------------------------------------------------------------------
// scenarios
// ---------------------------------------------------------------------------

interface Ctx {
	client: any;
	rec: Recorder;
	agent: () => Agent;
	timeoutMs: number;
	notes: string[];
	/** The text omp's client hands its tool, in the host-tools scenario. */
	toolCalls: unknown[];
}

interface Scenario {
	name: string;
	about: string;
	/** Started with these custom tools. */
	tools?: boolean;
	/** Throws on failure; returns nothing on success. */
	run(ctx: Ctx): Promise<void>;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: ReturnType<typeof setTimeout>;
	const t = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
	});
	return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function check(cond: unknown, message: string): asserts cond {
	if (!cond) throw new Error(message);
}

/** Text of every assistant message in `events`' message_end frames. */
function assistantText(events: any[]): string {
	let text = "";
	for (const e of events) {
		if (e?.type !== "message_end" || e.message?.role !== "assistant") continue;
		for (const c of e.message.content ?? []) if (c?.type === "text") text += c.text;
	}
	return text;
}

function collectUntilAgentEnd(ctx: Ctx, ms: number): Promise<any[]> {
	return within(ctx.client.collectEvents(ms + 1000), ms, "agent_end");
}

/** Fails unless every message frame carries a messageId, shared by one message's frames. */
function checkMessageIds(ctx: Ctx): void {
	const msgFrames = ctx.rec.frames.filter(f => f.dir === "out" && /^message_(start|update|end)$/.test(f.type ?? ""));
	const missing = msgFrames.filter(f => f.messageId === undefined).length;
	check(msgFrames.length > 0, "no message_start/message_update/message_end frames");
	check(missing === 0, `${missing} of ${msgFrames.length} message frames carry no messageId`);
}

const scenarios: Scenario[] = [
	{
		name: "start",
		about: "start(): the ready frame, then negotiate_protocol {protocolVersion:2} (omp's client negotiates v2 when ready offers it with 1 MiB / 64 MiB limits)",
		async run(ctx) {
			const ready = ctx.rec.frames.find(f => f.dir === "out" && f.type === "ready");
			check(ready, "no ready frame");
			const neg = ctx.rec.frames.find(f => f.dir === "out" && f.type === "response" && f.command === "negotiate_protocol");
			check(neg, "the client did not negotiate protocol v2: the ready frame did not offer it");
			check(neg.success === true, `negotiate_protocol refused: ${neg.error}`);
			const state = await within(ctx.client.getState(), ctx.timeoutMs, "get_state");
			check(typeof state.sessionId === "string", "get_state has no sessionId");
		},
	},
	{
		name: "prompt",
		about: "prompt() answers with its id; the run streams message frames (each with a messageId) and ends with agent_end",
		async run(ctx) {
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs);
			const id = await within(ctx.client.prompt("Say hi"), ctx.timeoutMs, "prompt");
			check(typeof id === "string" && id !== "", "prompt() returned no request id");
			const events = await ended;
			check(assistantText(events).length > 0, "no assistant text");
			const end = events.at(-1);
			if (end?.yielded === undefined) ctx.notes.push("agent_end carries no yielded");
			if (end?.isTerminal === undefined) ctx.notes.push("agent_end carries no isTerminal");
			checkMessageIds(ctx);
		},
	},
	{
		name: "prompt_and_wait",
		about: "promptAndWait() resolves at the prompt's own prompt_result {id, agentInvoked, status, sessionSettled}",
		async run(ctx) {
			const events = await within(ctx.client.promptAndWait("Say hi", undefined, ctx.timeoutMs), ctx.timeoutMs + 500, "promptAndWait");
			check(assistantText(events).length > 0, "no assistant text before prompt_result");
			const pr = ctx.rec.frames.find(f => f.dir === "out" && f.type === "prompt_result");
			check(pr, "no prompt_result frame");
			check(pr.status === "completed", `prompt_result status ${pr.status}`);
		},
	},
	{
		name: "wait_for_settled",
		about: "after a turn, waitForSettled(): get_state.isSettled, else the next session_settled frame",
		async run(ctx) {
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs);
			await within(ctx.client.prompt("Say hi"), ctx.timeoutMs, "prompt");
			await ended;
			const state = await within(ctx.client.getState(), ctx.timeoutMs, "get_state");
			if (state.isSettled === undefined) ctx.notes.push("get_state has no isSettled");
			if (state.hasPendingAsyncWork === undefined) ctx.notes.push("get_state has no hasPendingAsyncWork");
			await within(ctx.client.waitForSettled(ctx.timeoutMs), ctx.timeoutMs + 500, "waitForSettled");
		},
	},
	{
		name: "big_reply",
		about: "a 2 MB reply: under v2 every line over 1 MiB must come as rpc_chunk frames, reassembled by the client",
		async run(ctx) {
			const size = 2_000_000;
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs * 3);
			await within(ctx.client.prompt(`[[huge:${size}]]`), ctx.timeoutMs, "prompt");
			const events = await ended;
			const text = assistantText(events);
			ctx.notes.push(
				`reply ${text.length} chars; ${ctx.rec.outLines} lines out, largest ${ctx.rec.maxOutLine} bytes, ${ctx.rec.outLinesOverLimit} over ${frameModule.MAX_RPC_FRAME_BYTES} bytes; ${ctx.rec.counts["out:rpc_chunk"] ?? 0} rpc_chunk frames`,
			);
			check(text.length >= size, `reply has ${text.length} characters, want ${size}`);
			check(ctx.rec.outLinesOverLimit === 0, `${ctx.rec.outLinesOverLimit} lines over the 1 MiB frame limit (largest ${ctx.rec.maxOutLine} bytes)`);
		},
	},
	{
		name: "abort",
		about: "abort() during a slow reply: the run ends aborted (agent_end; prompt_result status aborted)",
		async run(ctx) {
			const firstUpdate = ctx.rec.waitFor(f => f.dir === "out" && f.type === "message_update", ctx.timeoutMs, "message_update");
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs);
			await within(ctx.client.prompt("[[slow:400]]"), ctx.timeoutMs, "prompt");
			await firstUpdate;
			await within(ctx.client.abort(), ctx.timeoutMs, "abort");
			const events = await ended;
			const last = [...events].reverse().find(e => e?.type === "message_end" && e.message?.role === "assistant");
			check(last?.message?.stopReason === "aborted", `last assistant stopReason ${last?.message?.stopReason}`);
			const pr = await ctx.rec
				.waitFor(f => f.dir === "out" && f.type === "prompt_result", 3000, "prompt_result")
				.catch(() => ctx.rec.frames.find(f => f.dir === "out" && f.type === "prompt_result"));
			check(pr, "no prompt_result after the abort");
			check(pr.status === "aborted", `prompt_result status ${pr.status}`);
		},
	},
	{
		name: "steer",
		about: "steer() during a slow reply is accepted, and the steering text reaches the conversation",
		async run(ctx) {
			const firstUpdate = ctx.rec.waitFor(f => f.dir === "out" && f.type === "message_update", ctx.timeoutMs, "message_update");
			await within(ctx.client.prompt("[[slow:60]]"), ctx.timeoutMs, "prompt");
			await firstUpdate;
			await within(ctx.client.steer("steering text"), ctx.timeoutMs, "steer");
			await within(ctx.client.waitForIdle(ctx.timeoutMs * 2), ctx.timeoutMs * 2 + 500, "agent_end");
			await Bun.sleep(300);
			const messages = await within(ctx.client.getMessages(), ctx.timeoutMs, "getMessages");
			const seen = JSON.stringify(messages).includes("steering text");
			check(seen, "the steering text is not in getMessages()");
		},
	},
	{
		name: "follow_up",
		about: "followUp() during a reply runs after it: its text gets its own answer",
		async run(ctx) {
			const firstUpdate = ctx.rec.waitFor(f => f.dir === "out" && f.type === "message_update", ctx.timeoutMs, "message_update");
			await within(ctx.client.prompt("[[slow:30]]"), ctx.timeoutMs, "prompt");
			await firstUpdate;
			await within(ctx.client.followUp("[[say:follow-up answered]]"), ctx.timeoutMs, "follow_up");
			const deadline = Date.now() + ctx.timeoutMs * 2;
			let found = false;
			while (!found && Date.now() < deadline) {
				await Bun.sleep(250);
				found = ctx.rec.frames.some(f => f.dir === "out" && f.type === "message_end") &&
					JSON.stringify(await within(ctx.client.getMessages(), ctx.timeoutMs, "getMessages")).includes("follow-up answered");
			}
			check(found, "no reply to the follow-up");
		},
	},
	{
		name: "host_tools",
		about: "customTools at start (set_host_tools), the model calls it, host_tool_call reaches the client's execute(), host_tool_result goes back",
		tools: true,
		async run(ctx) {
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs * 2);
			await within(ctx.client.prompt('[[tool:mcp__host__echo_upper:{"text":"omp"}]]'), ctx.timeoutMs, "prompt");
			const events = await ended;
			check(ctx.toolCalls.length === 1, `the tool ran ${ctx.toolCalls.length} times`);
			const end = events.find(e => e?.type === "tool_execution_end");
			check(end, "no tool_execution_end");
			check(JSON.stringify(end.result ?? "").includes("OMP"), "the tool's result is not in tool_execution_end");
		},
	},
	{
		name: "get_messages",
		about: "getMessages() after a turn (under v2 it pages with get_messages_page, falling back to get_messages only on session_busy/stale_cursor)",
		async run(ctx) {
			const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs);
			await within(ctx.client.prompt("Say hi"), ctx.timeoutMs, "prompt");
			await ended;
			const messages = await within(ctx.client.getMessages(), ctx.timeoutMs, "getMessages");
			check(Array.isArray(messages) && messages.length >= 2, `getMessages() returned ${JSON.stringify(messages)?.slice(0, 200)}`);
			check(messages.some((m: any) => m.role === "user") && messages.some((m: any) => m.role === "assistant"), "no user and assistant message");
		},
	},
	{
		name: "unknown_command",
		about: "an unknown command is answered at once with its id and success:false",
		async run(ctx) {
			const answer = ctx.rec.waitFor(f => f.dir === "out" && f.type === "response" && f.id === "omp-host-unknown", 3000, "response to the unknown command");
			ctx.agent().writeRaw(JSON.stringify({ id: "omp-host-unknown", type: "omp_host_no_such_command" }));
			const r = await answer;
			check(r.success === false, "the unknown command was answered with success");
			check(r.command === "omp_host_no_such_command", `the answer names command ${r.command}`);
		},
	},
	{
		name: "omp_commands",
		about: "each command omp's client can send that pi's protocol lacks: answered (or refused) at once, never left to the client's 30 s timeout",
		async run(ctx) {
			const c = ctx.client;
			const calls: Array<[string, () => Promise<unknown>]> = [
				["get_available_commands", () => c.getAvailableCommands()],
				["set_event_filter", () => c.setEventFilter(null)],
				["open_session", () => c.openSession("/tmp")],
				["set_fast_mode", () => c.setFastMode(false)],
				["handoff", () => c.handoff()],
				["set_subagent_subscription", () => c.setSubagentSubscription("progress")],
				["get_subagents", () => c.getSubagents()],
				["get_subagent_messages", () => c.getSubagentMessages({ subagentId: "x" })],
				["get_login_providers", () => c.getLoginProviders()],
				["get_messages_page", () => c.getMessagesPage({ limit: 10 })],
				["get_available_thinking_levels", () => c.getAvailableThinkingLevels()],
				["get_entries", () => c.getEntries()],
				["get_tree", () => c.getTree()],
			];
			const hung: string[] = [];
			for (const [name, call] of calls) {
				try {
					await within(call(), 3000, name);
					ctx.notes.push(`${name}: answered`);
				} catch (e) {
					if (e instanceof RpcCommandError) ctx.notes.push(`${name}: refused: ${e.message}`);
					else {
						ctx.notes.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
						hung.push(name);
					}
				}
			}
			check(hung.length === 0, `no answer within 3 s to ${hung.join(", ")}`);
		},
	},
	{
		name: "subagents",
		about: "a turn whose model calls the CLI's Agent tool: after setSubagentSubscription('events'), subagent_lifecycle (started, completed), subagent_progress and the sub-agent's own run as subagent_event frames; getSubagents() while it runs; getSubagentMessages() reads its transcript, then nothing new from nextByte",
		async run(ctx) {
			const c = ctx.client;
			const life: any[] = [];
			const prog: any[] = [];
			const evs: any[] = [];
			let during: Promise<any[]> | undefined;
			const offs = [
				c.onSubagentLifecycle((p: any) => {
					life.push(p);
					if (p.status === "started") during ??= c.getSubagents();
				}),
				c.onSubagentProgress((p: any) => prog.push(p)),
				c.onSubagentEvent((p: any) => evs.push(p)),
			];
			try {
				const level = await within(c.setSubagentSubscription("events"), ctx.timeoutMs, "set_subagent_subscription");
				check(level === "events", `set_subagent_subscription answered level ${level}`);
				const ended = collectUntilAgentEnd(ctx, ctx.timeoutMs);
				await within(c.prompt("[[say:Delegating.]][[agent:look around {{bash:sleep 1; echo from-sub}}]]"), ctx.timeoutMs, "prompt");
				const events = await ended;
				check(events.some((e: any) => e.type === "tool_execution_end" && e.toolName === "Agent"), "the Agent tool call did not end in the parent run");
				check(life.map(l => l.status).join(",") === "started,completed", `lifecycle ${life.map(l => l.status).join(",")}`);
				const id = life[0].id;
				check(typeof id === "string" && id !== "", "subagent_lifecycle without an id");
				check(typeof life[0].sessionFile === "string", "subagent_lifecycle without a sessionFile");
				check(during !== undefined, "getSubagents() was not called");
				const running = await within(during, ctx.timeoutMs, "get_subagents");
				check(running.length === 1 && running[0].id === id, `get_subagents while it ran: ${JSON.stringify(running)}`);
				check(prog.length > 0 && prog.every(p => p.progress?.id === id), `${prog.length} subagent_progress frames`);
				check(prog.at(-1).progress.status === "completed", `last progress status ${prog.at(-1).progress.status}`);
				const types = evs.map(e => e.event?.type);
				check(types[0] === "agent_start" && types.at(-1) === "agent_end", `the sub-agent's events: ${types.join(",")}`);
				check(evs.some(e => e.event?.type === "tool_execution_end" && e.event.toolName === "bash"), "no bash tool_execution_end in the sub-agent's events (pi's name, --tool-names pi)");
				const msgs = await within(c.getSubagentMessages({ subagentId: id }), ctx.timeoutMs, "get_subagent_messages");
				const said = JSON.stringify(msgs.messages);
				check(msgs.messages.some((m: any) => m.role === "toolResult") && said.includes("from-sub"), `transcript messages: ${said.slice(0, 400)}`);
				check(msgs.nextByte > 0 && msgs.entries.length > 0, `nextByte ${msgs.nextByte}, ${msgs.entries.length} entries`);
				const more = await within(c.getSubagentMessages({ subagentId: id, fromByte: msgs.nextByte }), ctx.timeoutMs, "get_subagent_messages");
				check(more.messages.length === 0 && more.nextByte === msgs.nextByte, `from nextByte: ${more.messages.length} messages`);
				const after = await within(c.getSubagents(), ctx.timeoutMs, "get_subagents");
				check(after.length === 0, `get_subagents after it ended: ${after.length}`);
				ctx.notes.push(`${prog.length} progress frames, ${evs.length} sub-agent events, ${msgs.messages.length} transcript messages`);
			} finally {
				for (const off of offs) off();
				await c.setSubagentSubscription("off").catch(() => {});
			}
		},
	},
];

// ---------------------------------------------------------------------------
// running
// ---------------------------------------------------------------------------

interface Result {
	scenario: string;
	about: string;
	pass: boolean;
	ms: number;
	error?: string;
	notes: string[];
	counts: Record<string, number>;
	largestLineOut: number;
	linesOverFrameLimit: number;
	frames: FrameRecord[];
	stderrTail?: string;
}

async function runScenario(s: Scenario, opts: Options): Promise<Result> {
	const rec = new Recorder(opts.maxFrames);
	const holder: { agent?: Agent } = {};
	const toolCalls: unknown[] = [];
	const customTools = s.tools
		? [
				{
					name: "echo_upper",
					label: "Echo upper",
					description: "Returns its text argument in upper case.",
					parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
					execute: async (params: { text: string }) => {
						toolCalls.push(params);
						return String(params.text).toUpperCase();
					},
				},
			]
		: [];
	const client = new RpcClient({ spawn: makeSpawn(opts, rec, holder), customTools, terminationGraceMs: 1000 });
	const ctx: Ctx = {
		client,
		rec,
		agent: () => holder.agent!,
		timeoutMs: opts.timeoutMs,
		notes: [],
		toolCalls,
	};
	let error: string | undefined;
	try {
		// start() has its own fixed 30 s ready timeout; ours is the scenario's.
		await within(client.start(), opts.timeoutMs + 1000, "start()");
		await s.run(ctx);
	} catch (e) {
		error = e instanceof Error ? e.message : String(e);
	} finally {
		await within(client.stop(), 5000, "stop()").catch(() => {
			try {
				holder.agent?.proc.kill("SIGKILL");
			} catch {}
		});
	}
	const result: Result = {
		scenario: s.name,
		about: s.about,
		pass: error === undefined,
		ms: Math.round(performance.now() - rec.start),
		notes: ctx.notes,
		counts: rec.counts,
		largestLineOut: rec.maxOutLine,
		linesOverFrameLimit: rec.outLinesOverLimit,
		frames: rec.frames,
	};
	if (error !== undefined) {
		result.error = error.slice(0, 2000);
		result.stderrTail = holder.agent?.stderr().slice(-2000);
	}
	return result;
}

const opts = parseArgs(Bun.argv.slice(2));
if (opts.scenario === "list") {
	for (const s of scenarios) console.log(`${s.name}\t${s.about}`);
	process.exit(0);
}
if (opts.agent.length === 0) {
	console.error(`host.ts: no agent command after --\n${usage}`);
	process.exit(2);
}
const selected = opts.scenario === "all" ? scenarios : scenarios.filter(s => opts.scenario.split(",").includes(s.name));
if (selected.length === 0) {
	console.error(`host.ts: no scenario ${opts.scenario}; --scenario list names them`);
	process.exit(2);
}
const results: Result[] = [];
for (const s of selected) {
	const r = await runScenario(s, opts);
	results.push(r);
	console.error(`host.ts: ${r.pass ? "PASS" : "FAIL"} ${s.name} (${r.ms} ms)${r.error ? `: ${r.error.split("\n")[0]}` : ""}`);
}
const passed = results.filter(r => r.pass).length;
console.log(
	JSON.stringify(
		{
			client: "omp @oh-my-pi/pi-coding-agent 18.3.4 RpcClient",
			agent: opts.agent,
			injectReady: opts.injectReady,
			passed,
			failed: results.length - passed,
			results,
		},
		null,
		1,
	),
);
console.error(`host.ts: ${passed} passed, ${results.length - passed} failed`);
process.exit(passed === results.length ? 0 : 1);
