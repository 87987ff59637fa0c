// driver.mjs drives pi-acp (npm pi-acp, scripts/install-pi-acp) as an ACP
// editor such as Zed does, over stdio, through the ACP SDK's own
// ClientSideConnection (npm @agentclientprotocol/sdk, the version pi-acp
// depends on), and prints one JSON object: what happened in each scenario.
// pi-acp runs `$PI_ACP_PI_COMMAND --mode rpc --no-themes [--session FILE]`:
// pi 1.5.2 itself, or claude-rpc. The assertions are in
// cmd/claude-rpc/acp_e2e_test.go, which runs this on both.
//
//   node driver.mjs SCENARIO,SCENARIO,...
//
// Environment:
//   ACP_PI_ACP     pi-acp's dist/index.js (run on this process's Node)
//   ACP_SDK        the SDK's dist/acp.js
//   ACP_TARGET     "pi" or "claude": which tool names and arguments the
//                  fake API's [[tool:…]] markers use (pi's, or the CLI's)
//   ACP_TMP        scratch folder: each scenario works in <ACP_TMP>/<name>
//   ACP_PERMISSION how to answer session/request_permission by default:
//                  allow (the first allowing option), reject, or never
//                  (the dialog stays open)
//   PI_ACP_PI_COMMAND and the rest of the environment go to pi-acp as is.
//
// Every prompt's text is unique, so the test can find the fake API's
// request for it. The report: {"scenarios":[{name, …, error?}]}. To read a
// whole report: ACP_DUMP=/some/folder go test ./cmd/claude-rpc -run
// 'TestPiACP' writes each test's report there.
//
// Models are switched as ACP 0.26 clients do, with
// session/set_config_option "model": the SDK 0.26 has no session/set_model
// (pi-acp's unstable_setSessionModel is unreachable through it).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const E = process.env;
const acp = await import(pathToFileURL(E.ACP_SDK).href);
const target = E.ACP_TARGET || "pi";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Editor is one pi-acp process and the client side of its connection.
class Editor {
	constructor(cwd, permission = E.ACP_PERMISSION || "allow") {
		this.cwd = cwd;
		this.permission = permission; // allow | reject | never
		this.updates = []; // every session/update notification, in order
		this.permissions = []; // every session/request_permission, with the answer
		this.waiters = [];
		this.stderr = "";
		this.child = spawn(process.execPath, [E.ACP_PI_ACP], { cwd, env: process.env, stdio: ["pipe", "pipe", "pipe"] });
		this.child.stderr.on("data", (d) => (this.stderr = (this.stderr + d).slice(-4000)));
		this.exited = new Promise((r) => this.child.on("exit", r));
		const stream = acp.ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout));
		this.conn = new acp.ClientSideConnection(() => this.client(), stream);
	}
	client() {
		return {
			sessionUpdate: async (n) => {
				this.updates.push(n.update);
				for (const w of [...this.waiters]) w();
			},
			requestPermission: (req) => this.answerPermission(req),
		};
	}
	async answerPermission(req) {
		const seen = {
			title: req.toolCall?.title,
			kind: req.toolCall?.kind,
			rawInput: req.toolCall?.rawInput,
			options: (req.options || []).map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
			policy: this.permission,
		};
		this.permissions.push(seen);
		for (const w of [...this.waiters]) w();
		const byName = (re) => req.options.find((o) => re.test(o.name));
		let option;
		switch (this.permission) {
			case "never":
				return new Promise(() => {}); // an editor whose user never clicks
			case "reject":
				option = byName(/^(deny|no|reject)/i) ?? req.options.find((o) => o.kind?.startsWith("reject"));
				break;
			default:
				option = byName(/^(allow once|yes)/i) ?? req.options.find((o) => o.kind === "allow_once");
		}
		seen.answer = option?.name ?? "cancelled";
		return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
	}
	// waitFor resolves when pred() holds, checked at each update.
	waitFor(pred, timeout = 30000, what = "an update") {
		return new Promise((resolve, reject) => {
			const check = () => {
				if (!pred()) return false;
				done();
				resolve();
				return true;
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
	async initialize() {
		return this.conn.initialize({
			protocolVersion: acp.PROTOCOL_VERSION,
			clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
		});
	}
	async newSession() {
		await this.initialize();
		const t0 = Date.now();
		const res = await this.conn.newSession({ cwd: this.cwd, mcpServers: [] });
		this.sessionId = res.sessionId;
		return { res, ms: Date.now() - t0 };
	}
	// prompt sends text and summarizes the updates that came until the
	// prompt's response (the turn's end).
	async prompt(text, { onUpdate } = {}) {
		const from = this.updates.length;
		const t0 = Date.now();
		const w = onUpdate ? (() => { const f = () => onUpdate(this.updates.slice(from)); this.waiters.push(f); return f; })() : null;
		try {
			const res = await this.conn.prompt({ sessionId: this.sessionId, prompt: [{ type: "text", text }] });
			return { prompt: text, stopReason: res.stopReason, ms: Date.now() - t0, ...summarize(this.updates.slice(from)) };
		} finally {
			if (w) this.waiters = this.waiters.filter((x) => x !== w);
		}
	}
	async close() {
		try {
			this.child.stdin.end();
		} catch {}
		this.child.kill("SIGTERM");
		const t = setTimeout(() => this.child.kill("SIGKILL"), 5000);
		await this.exited;
		clearTimeout(t);
	}
}

// summarize turns a turn's updates into what a test asserts on: the text,
// the thinking, each tool call as the editor would draw it (its last state,
// merged from tool_call and tool_call_update), and the other kinds seen.
function summarize(updates) {
	let text = "", thought = "";
	const tools = new Map();
	const kinds = [];
	for (const u of updates) {
		kinds.push(u.sessionUpdate);
		switch (u.sessionUpdate) {
			case "agent_message_chunk":
				if (u.content?.type === "text") text += u.content.text;
				break;
			case "agent_thought_chunk":
				if (u.content?.type === "text") thought += u.content.text;
				break;
			case "tool_call":
			case "tool_call_update": {
				const t = tools.get(u.toolCallId) ?? { toolCallId: u.toolCallId, statuses: [] };
				for (const k of ["title", "kind", "rawInput"]) if (u[k] !== undefined && u[k] !== null) t[k] = u[k];
				if (u.locations?.length) t.locations = u.locations;
				if (u.status && t.statuses.at(-1) !== u.status) t.statuses.push(u.status);
				if (u.status) t.status = u.status;
				if (u.content?.length) {
					t.content = u.content.map((c) => c.type);
					const diff = u.content.find((c) => c.type === "diff");
					if (diff) t.diff = { path: diff.path, oldText: diff.oldText, newText: diff.newText };
					const txt = u.content.filter((c) => c.type === "content" && c.content?.type === "text").map((c) => c.content.text);
					if (txt.length) t.text = txt.join("").slice(0, 2000);
				}
				tools.set(u.toolCallId, t);
				break;
			}
		}
	}
	return { text, thought, tools: [...tools.values()], updateKinds: [...new Set(kinds)] };
}

// sessionInfo is what session/new or session/load said about models and
// modes (thinking levels in pi-acp).
function sessionInfo(res) {
	const models = res.models ?? null;
	const modes = res.modes ?? null;
	return {
		currentModelId: models?.currentModelId ?? null,
		modelIds: (models?.availableModels ?? []).map((m) => m.modelId),
		currentModeId: modes?.currentModeId ?? null,
		modeIds: (modes?.availableModes ?? []).map((m) => m.id),
		configOptions: (res.configOptions ?? []).map((o) => ({ id: o.id, currentValue: o.currentValue, values: (o.options ?? []).map((x) => x.value) })),
	};
}

// The fake API's tool markers (claudecli/fakeapi/script.go), with the
// tool names and arguments of the agent under pi-acp: pi's own tools, or
// the Claude CLI's (which claude-rpc shows the host under pi's names).
function toolMarker(tool, cwd) {
	const abs = (f) => path.join(cwd, f);
	const m = (name, args) => `[[tool:${name}:${JSON.stringify(args)}]]`;
	const pi = {
		read: m("read", { path: "a.txt" }),
		write: m("write", { path: "new.txt", content: "written\n" }),
		edit: m("edit", { path: "b.txt", edits: [{ oldText: "two", newText: "deux" }] }),
		bash: m("bash", { command: "ls" }),
		grep: m("grep", { pattern: "alpha" }),
		find: m("find", { pattern: "*.txt" }),
		ls: m("ls", { path: "." }),
	};
	const claude = {
		read: m("Read", { file_path: abs("a.txt") }),
		write: m("Write", { file_path: abs("new.txt"), content: "written\n" }),
		edit: m("Edit", { file_path: abs("b.txt"), old_string: "two", new_string: "deux" }),
		bash: "[[bash:ls]]",
	};
	return (target === "pi" ? pi : claude)[tool];
}

// seed writes the files the tool scenarios work on.
function seed(cwd) {
	fs.writeFileSync(path.join(cwd, "a.txt"), "alpha\n");
	fs.writeFileSync(path.join(cwd, "b.txt"), "one\ntwo\nthree\n");
}

const scenarios = {
	// session/new: the models and modes offered, and how long it took.
	async new(ed) {
		const { res, ms } = await ed.newSession();
		return { ms, sessionIdSet: typeof res.sessionId === "string" && res.sessionId.length > 0, ...sessionInfo(res) };
	},
	async text(ed) {
		await ed.newSession();
		return { turn: await ed.prompt("acp text hello") };
	},
	async thinking(ed) {
		await ed.newSession();
		return { turn: await ed.prompt("acp thinking [[think:pondering the question]] hello") };
	},
	// One turn per tool. The CLI's Edit needs the file read first in the
	// same session: the read turn comes before the edit turn.
	async tools(ed) {
		seed(ed.cwd);
		await ed.newSession();
		const turns = {};
		// pi's grep, find and ls are there when pi runs with --tools naming
		// them; the CLI 2.1.328 offers no Grep or Glob ("not available in
		// this session": it points the model at grep and find through Bash).
		const list = target === "pi" ? ["read", "write", "edit", "bash", "grep", "find", "ls"] : ["read", "write", "edit", "bash"];
		for (const tool of list) turns[tool] = await ed.prompt(`acp tool ${tool} ${toolMarker(tool, ed.cwd)}`);
		const files = { "new.txt": readOrNull(path.join(ed.cwd, "new.txt")), "b.txt": readOrNull(path.join(ed.cwd, "b.txt")) };
		return { turns, files, permissions: ed.permissions };
	},
	// A tool that needs permission, answered by the editor's user: first
	// denied, then allowed.
	async permission(ed) {
		seed(ed.cwd);
		await ed.newSession();
		ed.permission = "reject";
		const denied = await ed.prompt(`acp permission deny ${toolMarker("write", ed.cwd)}`);
		const afterDeny = readOrNull(path.join(ed.cwd, "new.txt"));
		ed.permission = "allow";
		const allowed = await ed.prompt(`acp permission allow ${toolMarker("write", ed.cwd)}`);
		return { denied, afterDeny, allowed, afterAllow: readOrNull(path.join(ed.cwd, "new.txt")), permissions: ed.permissions };
	},
	// An editor that never answers the dialog: the run must go on.
	async "permission-unanswered"(ed) {
		seed(ed.cwd);
		await ed.newSession();
		ed.permission = "never";
		const turn = await ed.prompt(`acp permission unanswered ${toolMarker("write", ed.cwd)}`);
		const next = await ed.prompt("acp after the unanswered dialog");
		return { turn, next, file: readOrNull(path.join(ed.cwd, "new.txt")), permissions: ed.permissions };
	},
	// session/cancel while the reply streams; then another prompt.
	async cancel(ed) {
		await ed.newSession();
		const from = ed.updates.length;
		const p = ed.prompt("acp cancel [[slow:400]]");
		// The reply's first words (pi-acp's startup note, also a text chunk,
		// may come first).
		await ed.waitFor(() => ed.updates.slice(from).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.text?.includes("word")), 30000, "the reply's first words");
		const t0 = Date.now();
		await ed.conn.cancel({ sessionId: ed.sessionId });
		const turn = await p;
		const cancelMs = Date.now() - t0;
		const next = await ed.prompt("acp after cancel");
		return { turn, cancelMs, next };
	},
	// A model switch the way current ACP editors do it (the "model" config
	// option), then a prompt: the test checks that prompt's API request.
	async model(ed) {
		const { res } = await ed.newSession();
		const before = sessionInfo(res);
		const first = await ed.prompt("acp model before");
		// The last option: the first is often the one the agent runs already
		// under another name (claude-rpc's "default" is the CLI's Opus).
		const to = [...before.modelIds].reverse().find((id) => id !== before.currentModelId) ?? null;
		const from = ed.updates.length;
		let set = null, setError = null;
		try {
			set = await ed.conn.setSessionConfigOption({ sessionId: ed.sessionId, configId: "model", value: to });
		} catch (e) {
			setError = String(e?.message ?? e);
		}
		await sleep(200); // updates sent after the response
		const setUpdates = summarize(ed.updates.slice(from));
		const after = await ed.prompt("acp model after");
		return {
			before, to, setError, setUpdates,
			configAfter: (set?.configOptions ?? []).map((o) => ({ id: o.id, currentValue: o.currentValue })),
			first, after,
		};
	},
	// A mode switch (pi-acp's modes are pi's thinking levels), then a prompt.
	async mode(ed) {
		const { res } = await ed.newSession();
		const before = sessionInfo(res);
		const to = before.modeIds.includes("high") && before.currentModeId !== "high" ? "high" : before.modeIds.find((m) => m !== before.currentModeId && m !== "off") ?? null;
		const from = ed.updates.length;
		let setError = null;
		try {
			await ed.conn.setSessionMode({ sessionId: ed.sessionId, modeId: to });
		} catch (e) {
			setError = String(e?.message ?? e);
		}
		await sleep(200);
		const modeUpdates = ed.updates.slice(from).filter((u) => u.sessionUpdate === "current_mode_update").map((u) => u.currentModeId);
		const after = await ed.prompt("acp mode after");
		return { before, to, setError, modeUpdates, after };
	},
	// session/list (pi-acp reads pi's session files): the session just
	// prompted is listed, in this folder, with its title.
	async list(ed) {
		const { res } = await ed.newSession();
		await ed.prompt("acp list remember the word kiwi");
		const listed = await ed.conn.listSessions({ cwd: ed.cwd });
		return { id: res.sessionId, sessions: listed.sessions.map((s) => ({ sessionId: s.sessionId, cwd: s.cwd, title: s.title })) };
	},
	// session/load in a new pi-acp process (an editor restarted): the
	// conversation replayed, then a prompt that continues it.
	async load(ed) {
		seed(ed.cwd);
		const { res } = await ed.newSession();
		const id = res.sessionId;
		const first = await ed.prompt("acp load remember the word papaya");
		const tool = await ed.prompt(`acp load tool ${toolMarker("read", ed.cwd)}`);
		await ed.close();
		const ed2 = new Editor(ed.cwd, ed.permission);
		try {
			const init = await ed2.initialize();
			const t0 = Date.now();
			let loaded = null, loadError = null;
			try {
				loaded = await ed2.conn.loadSession({ sessionId: id, cwd: ed.cwd, mcpServers: [] });
			} catch (e) {
				loadError = String(e?.message ?? e);
			}
			const ms = Date.now() - t0;
			await sleep(200);
			const replay = ed2.updates.filter((u) => ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"].includes(u.sessionUpdate))
				.map((u) => ({ kind: u.sessionUpdate, text: u.content?.type === "text" ? u.content.text : undefined, title: u.title, toolKind: u.kind, status: u.status }));
			ed2.sessionId = id;
			const after = loadError ? null : await ed2.prompt("acp load after: what was the word?");
			return { loadSession: init.agentCapabilities?.loadSession ?? null, first, tool, ms, loadError, info: loaded ? sessionInfo(loaded) : null, replay, after };
		} finally {
			await ed2.close();
		}
	},
};

function readOrNull(f) {
	try {
		return fs.readFileSync(f, "utf8");
	} catch {
		return null;
	}
}

const report = { target, scenarios: [] };
for (const name of (process.argv[2] || Object.keys(scenarios).join(",")).split(",")) {
	const run = scenarios[name];
	if (!run) {
		report.scenarios.push({ name, error: `no scenario ${name}` });
		continue;
	}
	const cwd = path.join(E.ACP_TMP, name);
	fs.mkdirSync(cwd, { recursive: true });
	const ed = new Editor(cwd);
	const t0 = Date.now();
	try {
		const res = await run(ed);
		report.scenarios.push({ name, scenarioMs: Date.now() - t0, ...res });
	} catch (e) {
		report.scenarios.push({ name, error: String(e?.stack ?? e), stderr: ed.stderr, updates: ed.updates.slice(-20) });
	} finally {
		await ed.close();
	}
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
