// Drives claude-rpc through pi 1.x's own RpcClient (1.5.2's or 1.6.0's:
// dist/modes/rpc/rpc-client.js from the tarball scripts/install-pi15
// <version> unpacks; it needs Node's built-ins only) and prints, as one JSON object,
// what happened in each scenario: every frame claude-rpc wrote, in order
// (responses included), and every RpcClient call with what it returned or
// threw. The assertions are in pi15_e2e_test.go, which runs this.
//
//   node pi15-client.mjs SCENARIO,SCENARIO,...
//
// Environment: PI15_RPC_CLIENT (rpc-client.js), PI15_LAUNCHER (the Node
// example's claude-rpc-launcher.mjs: RpcClient runs `node <cliPath>`),
// CLAUDE_RPC_BIN (the claude-rpc under test, read by the launcher),
// PI15_ARGS (claude-rpc's flags, one per line), PI15_TMP (a scratch folder:
// each scenario runs in a fresh working folder under it). The fake API's
// environment for the CLI is inherited.
//
// Scenarios whose name matches a recording in testdata/pi15 (and pi16)
// send what its recorder (scripts/record-pi/driver.mjs) sent, so the frames
// can be compared with what pi wrote; tool calls use the CLI's tools.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const E = process.env;
const { RpcClient } = await import(pathToFileURL(E.PI15_RPC_CLIENT).href);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// An unhandled rejection (an abandoned RpcClient timer, as promptAndWait
// leaves when prompt throws) would end this process: it is a finding.
const unhandled = [];
process.on("unhandledRejection", (err) => unhandled.push(String(err?.message ?? err).split(". Stderr:")[0]));

class Harness {
	constructor(client, cwd) {
		this.client = client;
		this.cwd = cwd;
		this.frames = []; // every line claude-rpc wrote, parsed, in order
		this.events = []; // indices into frames of what RpcClient took as events
		this.calls = [];
		this.notes = [];
		this.waiters = [];
		// Every line goes through handleLine (looked up at each line):
		// record it before RpcClient sorts it into a response or an event.
		const handle = client.handleLine.bind(client);
		client.handleLine = (line) => {
			try {
				this.frames.push(JSON.parse(line));
			} catch {
				this.frames.push({ notJSON: line });
			}
			handle(line);
		};
		client.onEvent(() => {
			this.events.push(this.frames.length - 1);
			for (const w of [...this.waiters]) w();
		});
	}
	mark() {
		return this.frames.length;
	}
	note(text) {
		this.notes.push({ at: this.frames.length, text });
	}
	// waitFrame resolves with the first event from frame index `from` on
	// that satisfies pred.
	waitFrame(pred, from = this.mark(), timeout = 30000, what = "an event") {
		return new Promise((resolve, reject) => {
			const check = () => {
				for (const i of this.events) {
					if (i >= from && pred(this.frames[i])) {
						done();
						resolve(this.frames[i]);
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
		return this.waitFrame((e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta", from, 30000, "a text_delta");
	}
	// call calls an RpcClient method and records what it returned or threw,
	// and between which frames (at: frames before the call, end: frames
	// before it returned).
	async call(method, ...args) {
		const rec = { method, args, at: this.frames.length };
		this.calls.push(rec);
		const started = Date.now();
		try {
			const value = await this.client[method](...args);
			rec.returned = value === undefined ? null : value;
			if (value === undefined) rec.undefined = true;
			if (method === "promptAndWait" || method === "collectEvents") {
				rec.returned = value.map((e) => e.type);
			}
			return value;
		} catch (err) {
			rec.threw = String(err?.message ?? err).split(". Stderr:")[0];
			return undefined;
		} finally {
			rec.end = this.frames.length;
			rec.ms = Date.now() - started;
		}
	}
	// send sends a command RpcClient has no method for, or one with fields
	// its method does not pass, through RpcClient's own send (and records
	// the whole response).
	async send(command) {
		const rec = { method: "send", args: [command], at: this.frames.length };
		this.calls.push(rec);
		try {
			rec.returned = await this.client.send(command);
			return rec.returned;
		} catch (err) {
			rec.threw = String(err?.message ?? err).split(". Stderr:")[0];
			return undefined;
		} finally {
			rec.end = this.frames.length;
		}
	}
}

const bash = (command) => `[[tool:Bash:${JSON.stringify({ command, description: "Run " + command })}]]`;

const scenarios = {
	// --- The scenarios of testdata/pi15, sent as record-pi sent them. ---
	text: async (h) => {
		await h.call("promptAndWait", "Say hello [[say:Hello there, <friend> & co!]][[chunk:4]]");
		await h.call("getLastAssistantText");
	},
	"tool-bash": async (h) => {
		const idle = h.client.waitForIdle();
		await h.call("prompt", "[[say:Running it.]]" + bash("echo hello-from-tool") + "[[chunk:8]]");
		await idle;
	},
	"steer-running": async (h) => {
		const m = h.mark();
		const idle = h.client.waitForIdle();
		await h.call("prompt", "first [[slow:30]]");
		await h.delta(m);
		await h.call("steer", "steer now [[say:steered reply]]");
		await idle;
	},
	"follow-up-running": async (h) => {
		const m = h.mark();
		const idle = h.client.waitForIdle();
		await h.call("prompt", "first [[slow:30]]");
		await h.delta(m);
		await h.call("followUp", "then this [[say:follow-up reply]]");
		await idle;
	},
	"abort-mid-text": async (h) => {
		const m = h.mark();
		await h.call("prompt", "long [[slow:200]]");
		await h.delta(m);
		await h.call("abort");
		h.note("abort returned");
		await sleep(500);
		await h.call("getState");
		await h.call("getLastAssistantText");
	},
	"abort-mid-tool": async (h) => {
		const m = h.mark();
		await h.call("prompt", bash("sleep 5; echo finished"));
		await h.waitFrame((e) => e.type === "tool_execution_start", m, 30000, "tool_execution_start");
		await sleep(300);
		await h.call("abort");
		h.note("abort returned");
		await sleep(500);
	},
	"steer-idle": async (h) => {
		await h.call("promptAndWait", "first [[say:first reply]]");
		await h.call("steer", "idle steer [[say:reply to the idle steer]]");
		await sleep(1000);
		h.note("1 s after the idle steer");
		await h.call("getState");
		const idle = h.client.waitForIdle();
		await h.call("prompt", "next prompt [[say:reply to the next prompt]]");
		await idle;
		await h.call("getMessages");
	},
	"follow-up-idle": async (h) => {
		await h.call("promptAndWait", "first [[say:first reply]]");
		await h.call("followUp", "idle follow-up [[say:reply to the idle follow-up]]");
		await sleep(1000);
		h.note("1 s after the idle follow-up");
		await h.call("getState");
		const idle = h.client.waitForIdle();
		await h.call("prompt", "next prompt [[say:reply to the next prompt]]");
		await idle;
		await h.call("getMessages");
	},
	"abort-idle": async (h) => {
		await h.call("abort");
		await sleep(300);
	},

	// --- Every other RpcClient method claude-rpc supports. ---
	// collectEvents, waitForIdle, prompt while a run streams (refused without
	// streamingBehavior, queued with it), clearQueue during a run and idle.
	queue: async (h) => {
		const collected = h.call("collectEvents", 60000);
		const m = h.mark();
		await h.call("prompt", "first [[slow:40]]");
		await h.delta(m);
		await h.call("prompt", "no streamingBehavior");
		await h.call("steer", "steer a");
		await h.call("followUp", "follow-up b");
		await h.call("prompt", "as follow-up c", undefined, "followUp");
		await h.call("clearQueue");
		await h.call("getState");
		await collected;
		await h.call("clearQueue");
		// A fresh queue, idle: queued, then taken back.
		await h.call("steer", "idle steer d");
		await h.call("followUp", "idle follow-up e");
		await h.call("getState");
		await h.call("clearQueue");
		await h.call("getState");
		await h.call("waitForIdle", 1500); // idle: no agent_settled comes (pi's behaviour too)
	},
	// Model and thinking level, queue modes, auto compaction and retry.
	settings: async (h) => {
		await h.call("getState");
		const models = await h.call("getAvailableModels");
		const other = (models ?? []).find((mo) => !/opus/.test(mo.id));
		await h.call("setModel", "anthropic", other?.id ?? "sonnet");
		await h.call("setModel", "anthropic", "no-such-model");
		await h.call("cycleModel");
		await h.call("getAvailableThinkingLevels");
		await h.call("setThinkingLevel", "high");
		await h.call("setThinkingLevel", "high"); // unchanged: no event
		await h.call("cycleThinkingLevel");
		await h.call("setSteeringMode", "all");
		await h.call("setFollowUpMode", "all");
		await h.call("setAutoCompaction", false);
		await h.call("setAutoRetry", false);
		await h.call("abortRetry");
		await h.call("getState");
		await h.call("promptAndWait", "after the settings [[say:settled]]");
	},
	// Session commands.
	session: async (h) => {
		await h.call("promptAndWait", "first [[say:first reply]]");
		await h.call("promptAndWait", "second " + bash("echo two") + "[[say:second reply]]");
		await h.call("getMessages");
		await h.call("getLastAssistantText");
		await h.call("getSessionStats");
		await h.call("getCommands");
		await h.call("setSessionName", "renamed session");
		await h.call("setSessionName", ""); // refused (RpcClient's method does not throw: it reads no data)
		const st = await h.call("getState");
		await h.call("exportHtml", path.join(h.cwd, "export.html"));
		await h.call("bash", "echo out; echo err >&2; exit 3");
		await h.call("abortBash");
		const forks = await h.call("getForkMessages");
		await h.call("fork", forks?.[1]?.entryId ?? "no fork message");
		await h.call("getState");
		await h.call("getMessages");
		await h.call("clone");
		await h.call("getState");
		await h.call("switchSession", st?.sessionFile ?? "no session file");
		await h.call("getState");
		await h.call("compact");
		await h.call("getState");
		await h.call("newSession");
		await h.call("getState");
		await h.call("getMessages");
		await h.call("getLastAssistantText");
	},
	// get_last_assistant_text while a tool-only message is the last, after
	// an abort during its tool, and after a failed turn (what pi itself
	// answered: testdata/pi15 and pi16/last-assistant-text.jsonl).
	"last-assistant-text": async (h) => {
		await h.call("promptAndWait", "first [[say:first reply]]");
		const m = h.mark();
		await h.call("prompt", bash("sleep 5; echo finished"));
		await h.waitFrame((e) => e.type === "tool_execution_start", m, 30000, "tool_execution_start");
		await h.call("getLastAssistantText");
		await h.call("abort");
		await sleep(300);
		await h.call("getLastAssistantText");
		await h.call("promptAndWait", "[[error:400]]");
		await h.call("getLastAssistantText");
	},
};

async function runScenario(name) {
	const cwd = fs.mkdtempSync(path.join(E.PI15_TMP, name + "-"));
	const args = (E.PI15_ARGS ?? "").split("\n").filter(Boolean);
	const client = new RpcClient({ cliPath: E.PI15_LAUNCHER, cwd, args: [...args, "--cwd", cwd] });
	const h = new Harness(client, cwd);
	const out = { name };
	const started = Date.now();
	await client.start();
	try {
		let timer;
		const limit = new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Error("scenario timed out")), 90000);
		});
		try {
			await Promise.race([scenarios[name](h), limit]);
		} finally {
			clearTimeout(timer);
		}
		await sleep(300); // frames that trail the last call
	} catch (err) {
		out.error = String(err?.message ?? err).split(". Stderr:")[0];
	} finally {
		await client.stop();
	}
	Object.assign(out, { ms: Date.now() - started, frames: h.frames, events: h.events, calls: h.calls, notes: h.notes });
	return out;
}

const names = (process.argv[2] ?? "").split(",").filter(Boolean);
for (const n of names) {
	if (!scenarios[n]) {
		process.stderr.write(`pi15-client: no scenario ${n}\n`);
		process.exit(2);
	}
}
const results = [];
for (const n of names) results.push(await runScenario(n));
// Exit once the report is written (a pipe takes it in pieces): an
// abandoned RpcClient timer must not keep the process alive.
process.stdout.write(JSON.stringify({ scenarios: results, unhandled }) + "\n", () => process.exit(0));
