// driver.mjs runs the recorder's scenarios through pi 1.x's own RpcClient
// (dist/modes/rpc/rpc-client.js from the tarball scripts/install-pi15 <version>
// unpacks). It is started by main.go, which serves the fake API and passes
// everything in the environment (RECORD_*); run it through
// `go run ./scripts/record-pi`, not by hand.
//
// RpcClient starts `node tee.mjs --mode rpc <flags>`: tee.mjs runs the agent
// (pi on the pinned Node 22, or claude-rpc) and records every line both ways.
// This file adds what RpcClient returned or threw for each call, and notes.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const E = process.env;
const target = E.RECORD_TARGET || "pi";
const here = path.dirname(fileURLToPath(import.meta.url));
const { RpcClient } = await import(pathToFileURL(E.RECORD_RPC_CLIENT).href);

// The agent gets a clean environment: nothing of the machine's own
// Anthropic, Claude Code or pi settings.
for (const k of Object.keys(process.env)) {
	if (/^(ANTHROPIC_|CLAUDE_CODE_|CLAUDECODE$|PI_|CLAUDE_RPC_)/.test(k)) delete process.env[k];
}

// RpcClient.promptAndWait() leaves its collectEvents() timer running when
// prompt() throws (as it does on an agent that answers without
// data.disposition); its rejection a minute later would end this process.
process.on("unhandledRejection", (err) => {
	process.stderr.write(`record-pi: unhandled rejection (an abandoned RpcClient timer): ${err?.message?.split(". Stderr:")[0]}\n`);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Harness is what a scenario drives: the client, the events seen, and the
// recording.
class Harness {
	constructor(client, file) {
		this.client = client;
		this.file = file;
		this.events = [];
		this.waiters = [];
		client.onEvent((e) => {
			this.events.push(e);
			for (const w of [...this.waiters]) w();
		});
	}
	write(obj) {
		fs.appendFileSync(this.file, JSON.stringify(obj) + "\n");
	}
	note(text) {
		this.write({ note: text });
	}
	// mark is the index of the next event; waits take it to look only at
	// events from there on.
	mark() {
		return this.events.length;
	}
	// waitEvent resolves with the first event from index `from` on that
	// satisfies pred.
	waitEvent(pred, from = this.mark(), timeout = 30000, what = "an event") {
		return new Promise((resolve, reject) => {
			const check = () => {
				for (let i = from; i < this.events.length; i++) {
					if (pred(this.events[i])) {
						done();
						resolve(this.events[i]);
						return true;
					}
				}
				return false;
			};
			const timer = setTimeout(() => {
				done();
				reject(new Error(`timed out after ${timeout} ms waiting for ${what}`));
			}, timeout);
			const done = () => {
				clearTimeout(timer);
				this.waiters = this.waiters.filter((w) => w !== check);
			};
			if (!check()) this.waiters.push(check);
		});
	}
	delta(from) {
		return this.waitEvent(
			(e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta",
			from,
			30000,
			"a text_delta",
		);
	}
	// settled waits until the agent will do nothing more by itself:
	// agent_settled in pi; claude-rpc today has none, so there it is
	// agent_end and then a second without agent_start.
	async settled(from, timeout = 60000) {
		if (target === "pi") {
			await this.waitEvent((e) => e.type === "agent_settled", from, timeout, "agent_settled");
			return;
		}
		for (;;) {
			const end = await this.waitEvent((e) => e.type === "agent_end", from, timeout, "agent_end");
			from = this.events.indexOf(end) + 1;
			await sleep(1000);
			if (!this.events.slice(from).some((e) => e.type === "agent_start")) return;
		}
	}
	// call calls an RpcClient method and records what it returned or threw.
	async call(method, ...args) {
		try {
			let value = await this.client[method](...args);
			const rec = { client: method, returned: value === undefined ? null : value };
			if (method === "promptAndWait" || method === "collectEvents") {
				rec.returned = `${value.length} events, the last ${value.at(-1)?.type}`;
			}
			if (JSON.stringify(rec).length > 2000) rec.returned = "(long; see the response above)";
			if (value === undefined) rec.undefined = true;
			this.write(rec);
			return value;
		} catch (err) {
			this.write({ client: method, threw: scrub(err.message.split(". Stderr:")[0]) });
			return undefined;
		}
	}
	// send sends a command RpcClient has no method for (or one with fields
	// its method does not pass), through RpcClient's own send.
	async send(command) {
		try {
			return await this.client.send(command);
		} catch (err) {
			this.write({ client: "send", threw: scrub(err.message.split(". Stderr:")[0]) });
			return undefined;
		}
	}
	// raw writes a line on the agent's stdin as it is (not JSON, say).
	raw(line) {
		this.client.process.stdin.write(line + "\n");
	}
}

function scrub(s) {
	return E.RECORD_SCRATCH ? s.split(E.RECORD_SCRATCH).join("/scratch") : s;
}

const slowText = (n) => `[[slow:${n}]]`;

// tool is the fake API's marker for a call of pi's tool name (bash, read)
// with pi's arguments; for claude-rpc it calls the CLI's tool of that kind
// (Bash, Read) with the CLI's arguments, so that the tool runs there too.
function tool(name, args) {
	if (target !== "pi") {
		if (name === "bash") [name, args] = ["Bash", { command: args.command, description: "Run " + args.command }];
		else if (name === "read") [name, args] = ["Read", { file_path: path.join(scenarioCwd, args.path) }];
	}
	return `[[tool:${name}:${JSON.stringify(args)}]]`;
}
let scenarioCwd = "";

// Scenarios. Each runs in a fresh agent process, with a fresh HOME, agent
// folder and working folder. args are added to the agent's command line;
// model overrides the RpcClient's model option; measure, when set, keeps
// the recording out of the output folder and reports stdout bytes per
// reply byte instead.
const scenarios = [
	{
		name: "startup",
		async run(h) {
			await sleep(1000);
			h.note("1 s after start: nothing is written before the first command");
			await h.call("getState");
		},
	},
	{
		name: "text",
		async run(h) {
			await h.call("promptAndWait", "Say hello [[say:Hello there, <friend> & co!]][[chunk:4]]");
			await h.call("getLastAssistantText");
		},
	},
	{
		name: "text-unicode",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", '[[say:emoji 😀 quotes " backslash \\ line\u2028sep\nnewline]][[chunk:5]]');
			await h.settled(m);
		},
	},
	{
		name: "thinking",
		async run(h) {
			await h.call("setThinkingLevel", "high");
			const m = h.mark();
			await h.call("prompt", "[[think:Let me think: 2+2 is 4.]][[say:The answer is 4.]][[chunk:6]]");
			await h.settled(m);
		},
	},
	{
		name: "tool-bash",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", '[[say:Running it.]]' + tool("bash", { command: "echo hello-from-tool" }) + '[[chunk:8]]');
			await h.settled(m);
		},
	},
	{
		name: "tool-read",
		files: { "hello.txt": "hello from a file\n" },
		async run(h) {
			const m = h.mark();
			await h.call("prompt", tool("read", { path: "hello.txt" }));
			await h.settled(m);
		},
	},
	{
		name: "tool-error",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", tool("read", { path: "no-such-file.txt" }));
			await h.settled(m);
		},
	},
	{
		name: "tool-unknown",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "[[tool:NoSuchTool:{}]]");
			await h.settled(m);
		},
	},
	{
		name: "tools-two",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", tool("bash", { command: "echo one" }) + tool("bash", { command: "echo two" }) + '[[chunk:10]]');
			await h.settled(m);
		},
	},
	{
		name: "max-tokens",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "[[say:This reply is cut]][[stop:max_tokens]]");
			await h.settled(m);
		},
	},
	{
		name: "api-error",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "[[error:400]]");
			await h.settled(m);
			await h.call("getLastAssistantText");
		},
	},
	{
		name: "auto-retry",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "[[flaky:529:1]][[say:after one retry]]");
			await h.settled(m);
		},
	},
	{
		name: "abort-mid-text",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "long " + slowText(200));
			await h.delta(m);
			await h.call("abort");
			h.note("abort returned");
			await sleep(500);
			await h.call("getState");
			await h.call("getLastAssistantText");
		},
	},
	{
		name: "abort-mid-tool",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", tool("bash", { command: "sleep 5; echo finished" }));
			await h.waitEvent((e) => e.type === "tool_execution_start", m, 30000, "tool_execution_start");
			await sleep(300);
			await h.call("abort");
			h.note("abort returned");
			await sleep(500);
		},
	},
	{
		// get_last_assistant_text after a reply, while a tool-only message
		// is the last one, after an abort during its tool, and after a
		// failed turn (pi 1.6.0 skips the messages without text of such
		// turns and answers the reply before them; pi 1.5.2 answers {}).
		name: "last-assistant-text",
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("prompt", tool("bash", { command: "sleep 5; echo finished" }));
			await h.waitEvent((e) => e.type === "tool_execution_start", m, 30000, "tool_execution_start");
			await h.call("getLastAssistantText");
			await h.call("abort");
			await sleep(300);
			await h.call("getLastAssistantText");
			m = h.mark();
			await h.call("prompt", "[[error:400]]");
			await h.settled(m);
			await h.call("getLastAssistantText");
		},
	},
	{
		name: "abort-idle",
		async run(h) {
			await h.call("abort");
			await sleep(300);
		},
	},
	{
		name: "abort-with-queued-follow-up",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "long " + slowText(200));
			await h.delta(m);
			await h.call("followUp", "queued before abort [[say:the follow-up ran]]");
			await h.call("abort");
			h.note("abort returned; waiting 3 s to see whether the queued follow-up runs");
			await sleep(3000);
			await h.call("getState");
			await h.call("clearQueue");
		},
	},
	{
		name: "steer-running",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "first " + slowText(30));
			await h.delta(m);
			await h.call("steer", "steer now [[say:steered reply]]");
			await h.settled(m);
		},
	},
	{
		name: "steer-at-tool",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", '[[say:Running.]]' + tool("bash", { command: "sleep 1; echo tool-done" }));
			await h.waitEvent((e) => e.type === "tool_execution_start", m, 30000, "tool_execution_start");
			await h.call("steer", "steer during the tool [[say:steered after the tool]]");
			await h.settled(m);
		},
	},
	{
		name: "follow-up-running",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "first " + slowText(30));
			await h.delta(m);
			await h.call("followUp", "then this [[say:follow-up reply]]");
			await h.settled(m);
		},
	},
	{
		name: "queue-one-at-a-time",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "first " + slowText(30));
			await h.delta(m);
			await h.call("steer", "steer 1 [[say:reply to steer 1]]");
			await h.call("steer", "steer 2 [[say:reply to steer 2]]");
			await h.call("followUp", "follow-up 1 [[say:reply to follow-up 1]]");
			await h.call("followUp", "follow-up 2 [[say:reply to follow-up 2]]");
			await h.settled(m);
		},
	},
	{
		name: "queue-all",
		async run(h) {
			await h.call("setSteeringMode", "all");
			await h.call("setFollowUpMode", "all");
			const m = h.mark();
			await h.call("prompt", "first " + slowText(30));
			await h.delta(m);
			await h.call("steer", "steer 1 [[say:reply to steer 1]]");
			await h.call("steer", "steer 2 [[say:reply to both steers]]");
			await h.call("followUp", "follow-up 1 [[say:reply to follow-up 1]]");
			await h.call("followUp", "follow-up 2 [[say:reply to both follow-ups]]");
			await h.settled(m);
			await h.call("getState");
		},
	},
	{
		name: "prompt-while-streaming",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "first " + slowText(40));
			await h.delta(m);
			await h.call("prompt", "no streamingBehavior");
			await h.call("prompt", "as steer [[say:steer reply]]", undefined, "steer");
			await h.call("prompt", "as follow-up [[say:follow-up reply]]", undefined, "followUp");
			await h.settled(m);
		},
	},
	{
		name: "steer-idle",
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("steer", "idle steer [[say:reply to the idle steer]]");
			await sleep(2000);
			h.note("2 s after the idle steer");
			await h.call("getState");
			await h.call("prompt", "next prompt [[say:reply to the next prompt]]");
			await h.settled(m);
			await h.call("getMessages");
		},
	},
	{
		name: "follow-up-idle",
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("followUp", "idle follow-up [[say:reply to the idle follow-up]]");
			await sleep(2000);
			h.note("2 s after the idle follow-up");
			await h.call("getState");
			await h.call("prompt", "next prompt [[say:reply to the next prompt]]");
			await h.settled(m);
			await h.call("getMessages");
		},
	},
	{
		name: "queue-idle-fresh",
		async run(h) {
			await h.call("steer", "steer on a fresh session");
			await h.call("followUp", "follow-up on a fresh session");
			await sleep(2000);
			h.note("2 s after queueing on an idle, empty session");
			await h.call("getState");
			await h.call("clearQueue");
			await h.call("clearQueue");
			await h.call("getState");
		},
	},
	{
		name: "clear-queue",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "first " + slowText(40));
			await h.delta(m);
			await h.call("steer", "steer a");
			await h.call("steer", "steer b");
			await h.call("followUp", "follow-up c");
			await h.call("clearQueue");
			await h.settled(m);
			await h.call("clearQueue");
		},
	},
	{
		name: "wait-for-idle-when-idle",
		async run(h) {
			await h.call("waitForIdle", 2000);
			h.note("waitForIdle on an idle agent: no agent_settled comes");
		},
	},
	{
		name: "session-queries",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", '[[say:Running.]]' + tool("bash", { command: "echo queried" }));
			await h.settled(m);
			await h.call("getState");
			await h.call("getMessages");
			const all = await h.call("getEntries");
			const ids = (all?.entries ?? []).map((e) => e.id);
			if (ids.length > 0) {
				await h.call("getEntries", ids[0]);
				await h.call("getEntries", ids.at(-1));
			}
			await h.call("getEntries", "no-such-entry");
			await h.call("getTree");
			await h.call("getForkMessages");
			await h.call("getLastAssistantText");
			await h.call("getSessionStats");
			await h.call("getCommands");
			await h.call("getAvailableModels");
		},
	},
	{
		name: "empty-session",
		async run(h) {
			await h.call("getLastAssistantText");
			await h.call("getMessages");
			await h.call("getEntries");
			await h.call("getTree");
			await h.call("getForkMessages");
			await h.call("getSessionStats");
			await h.call("getState");
			await h.call("compact");
		},
	},
	{
		name: "no-session",
		args: ["--no-session"],
		async run(h) {
			await h.call("getEntries");
			const m = h.mark();
			await h.call("prompt", "[[say:kept in memory]]");
			await h.settled(m);
			await h.call("getState");
			await h.call("getEntries");
			await h.call("getTree");
			await h.call("getSessionStats");
		},
	},
	{
		name: "session-name",
		args: ["--name", "startup name"],
		async run(h) {
			await h.call("getState");
			await h.call("setSessionName", "renamed session");
			await h.call("getState");
			await h.call("setSessionName", "");
			await h.call("getState");
			await h.call("getEntries");
		},
	},
	{
		name: "session-id",
		args: ["--session-id", "my-session-1"],
		async run(h) {
			await h.call("getState");
		},
	},
	{
		name: "thinking-levels",
		async run(h) {
			await h.call("getAvailableThinkingLevels");
			for (const level of ["off", "minimal", "low", "medium", "high", "xhigh", "max"]) {
				await h.call("setThinkingLevel", level);
			}
			await h.call("getState");
			await h.call("setThinkingLevel", "bogus");
			await h.call("cycleThinkingLevel");
			await h.call("cycleThinkingLevel");
			const m = h.mark();
			await h.call("prompt", "[[say:at this level]]");
			await h.settled(m);
			await h.call("getEntries");
		},
	},
	{
		name: "thinking-levels-no-reasoning",
		model: "claude-fake-haiku",
		async run(h) {
			await h.call("getAvailableThinkingLevels");
			await h.call("setThinkingLevel", "max");
			await h.call("getState");
			await h.call("cycleThinkingLevel");
		},
	},
	{
		name: "startup-thinking",
		args: ["--thinking", "max"],
		async run(h) {
			await h.call("getState");
		},
	},
	{
		name: "cycle-model",
		async run(h) {
			await h.call("cycleModel");
			await h.call("getAvailableThinkingLevels");
			await h.call("cycleModel");
			await h.call("setModel", "fake", "claude-fake-haiku");
			await h.call("setModel", "fake", "no-such-model");
			await h.call("getState");
		},
	},
	{
		name: "cycle-model-one",
		args: ["--models", "fake/claude-fake-opus"],
		async run(h) {
			await h.call("cycleModel");
		},
	},
	{
		name: "compact",
		settings: { compaction: { keepRecentTokens: 10 } },
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("prompt", "second [[say:second reply]]");
			await h.settled(m);
			await h.call("compact");
			await sleep(300);
			await h.call("getEntries");
			await h.call("getSessionStats");
			await h.call("getMessages");
		},
	},
	{
		name: "auto-compact",
		// Compaction starts when fewer than reserveTokens of the model's
		// 200000 are left: here after the first turn.
		settings: { compaction: { reserveTokens: 199000, keepRecentTokens: 10 } },
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("prompt", "second [[say:second reply]]");
			await h.settled(m);
			await h.call("getState");
		},
	},
	{
		name: "bash",
		async run(h) {
			await h.call("bash", "echo out; echo err >&2; exit 3");
			await h.send({ type: "bash", command: "echo hidden-from-context", excludeFromContext: true });
			await h.call("getMessages");
			const m = h.mark();
			await h.call("prompt", "after bash [[say:ok]]");
			await h.settled(m);
			await h.call("abortBash");
		},
	},
	{
		name: "unknown-command",
		async run(h) {
			await h.send({ type: "no_such_command" });
			h.raw("this is not JSON");
			h.raw('{"id":7,"type":"get_state"}');
			h.raw('{"id":"no-type"}');
			h.raw('{"id":"r-prompt","type":"prompt"}');
			await sleep(1000);
		},
	},
	{
		name: "new-session",
		async run(h) {
			const m = h.mark();
			await h.call("prompt", "[[say:before the new session]]");
			await h.settled(m);
			await h.call("newSession");
			await h.call("getState");
			await h.call("getMessages");
		},
	},
	{
		name: "fork-clone",
		async run(h) {
			let m = h.mark();
			await h.call("prompt", "first [[say:first reply]]");
			await h.settled(m);
			m = h.mark();
			await h.call("prompt", "second [[say:second reply]]");
			await h.settled(m);
			const first = await h.call("getState");
			const forks = await h.call("getForkMessages");
			if (forks?.length > 1) await h.call("fork", forks[1].entryId);
			await h.call("getState");
			await h.call("clone");
			await h.call("getState");
			if (first?.sessionFile) await h.call("switchSession", first.sessionFile);
			await h.call("getState");
		},
	},
	{
		name: "huge-reply-10",
		measure: { bytes: 200000, chunk: 10 },
	},
	{
		name: "huge-reply-1000",
		measure: { bytes: 200000, chunk: 1000 },
	},
];

// measure sends one prompt whose reply is `bytes` bytes in deltas of
// `chunk`, and counts what the agent wrote on stdout from the prompt's
// response to agent_settled (or agent_end).
async function measure(h, { bytes, chunk }) {
	const m = h.mark();
	await h.call("prompt", `[[huge:${bytes}]][[chunk:${chunk}]]`);
	await h.settled(m, 180000);
	const lines = fs.readFileSync(h.file, "utf8").split("\n");
	let out = 0;
	let updates = 0;
	let updateBytes = 0;
	let frames = 0;
	for (const line of lines) {
		if (!line.startsWith('{"out":')) continue;
		const n = Buffer.byteLength(line) - '{"out":}'.length + 1; // the agent's line and its LF
		out += n;
		frames++;
		if (line.startsWith('{"out":{"type":"message_update"')) {
			updates++;
			updateBytes += n;
		}
	}
	return {
		replyBytes: bytes,
		deltaBytes: chunk,
		stdoutBytes: out,
		bytesPerReplyByte: +(out / bytes).toFixed(2),
		frames,
		messageUpdates: updates,
		messageUpdateBytes: updateBytes,
		bytesPerMessageUpdate: updates ? Math.round(updateBytes / updates) : 0,
	};
}

async function runScenario(sc) {
	const dir = path.join(E.RECORD_SCRATCH, target, sc.name);
	const home = path.join(dir, "home");
	const agent = path.join(dir, "agent");
	const cwd = path.join(dir, "cwd");
	for (const d of [home, agent, cwd]) fs.mkdirSync(d, { recursive: true });
	fs.writeFileSync(path.join(agent, "models.json"), E.RECORD_MODELS_JSON);
	if (sc.settings) fs.writeFileSync(path.join(agent, "settings.json"), JSON.stringify(sc.settings, null, 2));
	for (const [f, text] of Object.entries(sc.files ?? {})) fs.writeFileSync(path.join(cwd, f), text);
	scenarioCwd = cwd;
	const file = sc.measure ? path.join(dir, "recording.jsonl") : path.join(E.RECORD_OUT, `${sc.name}.jsonl`);
	fs.writeFileSync(file, "");

	const env = {
		PATH: `${E.RECORD_NODE_BIN}${path.delimiter}${E.PATH}`,
		HOME: home,
		RECORD_FILE: file,
		RECORD_SCRUB: E.RECORD_SCRATCH,
	};
	const options = { cliPath: path.join(here, "tee.mjs"), cwd, env, args: [...(sc.args ?? [])] };
	if (target === "pi") {
		Object.assign(env, { PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" });
		env.RECORD_CMD = JSON.stringify([path.join(E.RECORD_NODE_BIN, "node"), E.RECORD_PI_CLI]);
		options.provider = "fake";
		options.model = sc.model ?? "claude-fake-opus";
	} else {
		for (const kv of (E.RECORD_CLI_ENV ?? "").split("\n").filter(Boolean)) {
			const i = kv.indexOf("=");
			env[kv.slice(0, i)] = kv.slice(i + 1);
		}
		env.RECORD_CMD = JSON.stringify([E.RECORD_CLAUDE_RPC, "--claude-path", E.RECORD_CLAUDE_CLI, "--cwd", cwd]);
	}

	const client = new RpcClient(options);
	const h = new Harness(client, file);
	let result;
	await client.start();
	try {
		const work = sc.measure ? measure(h, sc.measure) : sc.run(h);
		let timer;
		const limit = new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Error("scenario timed out")), sc.measure ? 240000 : 90000);
		});
		try {
			result = await Promise.race([work, limit]);
		} finally {
			clearTimeout(timer);
		}
		await sleep(300); // frames that trail the last call
	} catch (err) {
		h.note(`scenario failed: ${err.message}`);
		process.stderr.write(`record-pi: ${sc.name}: ${err.message}\n`);
		process.exitCode = 1;
	} finally {
		await client.stop();
		await sleep(200); // tee.mjs records the agent's exit
	}
	return result;
}

const run = E.RECORD_RUN ? new RegExp(E.RECORD_RUN) : null;
const measurements = {};
for (const sc of scenarios) {
	if (run && !run.test(sc.name)) continue;
	const started = Date.now();
	const result = await runScenario(sc);
	if (sc.measure && result) measurements[sc.name] = result;
	process.stderr.write(`record-pi: ${target}: ${sc.name} (${Date.now() - started} ms)${result ? " " + JSON.stringify(result) : ""}\n`);
}
if (Object.keys(measurements).length > 0) {
	const f = path.join(E.RECORD_OUT, "measurements.json");
	let all = {};
	try {
		all = JSON.parse(fs.readFileSync(f, "utf8"));
	} catch {}
	Object.assign(all, measurements);
	fs.writeFileSync(f, JSON.stringify(all, null, 2) + "\n");
}
