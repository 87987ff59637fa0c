// Drives claude-rpc through pi's own RpcClient twice, with --coalesce 0 and
// with the default window, on the same prompt, and prints one JSON line
// saying whether the host saw the same thing: the same events (consecutive
// deltas of a block folded into one), the same text from the deltas, every
// update's message (and partial) the text so far, the same messages after.
// Run by TestPiClientSeesTheSameWithCoalescing (coalesce_e2e_test.go).
//
//   node pi-coalesce.mjs PROMPT    (CLAUDE_RPC_BIN, CLAUDE_RPC_CLI, CLAUDE_RPC_CWD set)
import { RpcClient } from "@mariozechner/pi-coding-agent";
import { join } from "node:path";

const prompt = process.argv[2];
const runs = {};
for (const co of ["0", "4ms"]) {
	const client = new RpcClient({
		cliPath: join(process.cwd(), "claude-rpc-launcher.mjs"),
		cwd: process.env.CLAUDE_RPC_CWD,
		args: ["--claude-path", process.env.CLAUDE_RPC_CLI, "--cwd", process.env.CLAUDE_RPC_CWD, "--coalesce", co],
	});
	await client.start();
	const events = [];
	client.onEvent((e) => events.push(e));
	await client.prompt(prompt);
	await client.waitForIdle(120000);
	// The run's events, from agent_start to agent_end: the frames around
	// them (ready before, prompt_result and the settled events after) come
	// before or after the listener and waitForIdle by timing alone.
	const from = events.findIndex((e) => e.type === "agent_start");
	const to = events.findIndex((e) => e.type === "agent_end");
	events.splice(to + 1);
	events.splice(0, from);
	const text = {};
	const shape = [];
	let updates = 0;
	let sofar = true;
	for (const e of events) {
		// omp's available_commands_update goes out when the CLI's commands
		// are first known (the pre-warmed CLI answering, concurrent with
		// the first prompt): inside the run or before it by timing alone.
		if (e.type === "available_commands_update") continue;
		let s = e.type;
		if (e.type === "message_update") {
			updates++;
			const a = e.assistantMessageEvent;
			s += ":" + a.type;
			if (JSON.stringify(a.partial) !== JSON.stringify(e.message)) sofar = false;
			if (a.type === "text_delta" || a.type === "thinking_delta") {
				const k = a.type + a.contentIndex;
				text[k] = (text[k] ?? "") + a.delta;
				const b = e.message.content[a.contentIndex];
				if ((b.text ?? b.thinking) !== text[k]) sofar = false;
			}
		}
		if (shape.length && shape[shape.length - 1] === s && s.endsWith("_delta")) continue;
		shape.push(s);
	}
	const messages = await client.getMessages();
	const last = await client.getLastAssistantText();
	await client.stop();
	// Tool call ids are the fake API's, different in each run.
	const content = JSON.stringify(messages.map((m) => m.content), (k, v) => (k === "id" || k === "toolCallId" ? "…" : v));
	runs[co] = { shape, text, updates, sofar, last, messages: content };
}
const [a, b] = [runs["0"], runs["4ms"]];
process.stdout.write(JSON.stringify({
	sameEvents: JSON.stringify(a.shape) === JSON.stringify(b.shape),
	sameText: JSON.stringify(a.text) === JSON.stringify(b.text) && a.last === b.last,
	sameMessages: a.messages === b.messages,
	soFar: a.sofar && b.sofar,
	updates: [a.updates, b.updates],
	shape: b.shape,
	textLength: (b.last ?? "").length,
}) + "\n");
