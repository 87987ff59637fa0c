// Drives claude-rpc through pi 0.73.1's own RpcClient (npm @mariozechner/pi-coding-agent):
// a prompt whose reply streams to the terminal, a steering message sent while
// it streams, then a second prompt that is aborted. (example-pi15.mjs is the
// same for pi 1.5.2's RpcClient, as a pi 1.5 host today.) Setup:
//
//   cd scripts/examples/node && npm install   # pi's RpcClient
//   npm install $OUT/*.tgz                     # claude-rpc, from scripts/npm-pack's tarballs
//   node example.mjs
//
// or, with claude-rpc built by go install instead of the npm package:
//
//   CLAUDE_RPC_BIN=$(go env GOPATH)/bin/claude-rpc node example.mjs
//
// Arguments (optional): the first prompt, the steering message, the prompt
// to abort. Extra claude-rpc flags go in CLAUDE_RPC_ARGS (space-separated).
import { fileURLToPath } from "node:url";
import { RpcClient } from "@mariozechner/pi-coding-agent";

const [first = "List three uses of a paperclip, slowly.", steer = "Make the last one funny.",
	toAbort = "Write a long essay about paperclips."] = process.argv.slice(2);

const client = new RpcClient({
	cliPath: fileURLToPath(new URL("./claude-rpc-launcher.mjs", import.meta.url)),
	args: (process.env.CLAUDE_RPC_ARGS || "").split(" ").filter(Boolean),
});

let sawText = false;
client.onEvent((event) => {
	if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
		process.stdout.write(event.assistantMessageEvent.delta);
		sawText = true;
	}
	if (event.type === "message_start" && event.message.role === "user") {
		process.stdout.write(`\n[user] ${event.message.content.map((c) => c.text ?? "").join("")}\n`);
	}
	if (event.type === "message_end" && event.message.role === "assistant" && event.message.stopReason !== "toolUse") {
		process.stdout.write(`\n[assistant done: ${event.message.stopReason}]\n`);
	}
});

await client.start();
try {
	// 1. Prompt; steer once the reply streams.
	await client.prompt(first);
	await until(() => sawText);
	await client.steer(steer);
	await client.waitForIdle(120_000);

	// 2. A prompt aborted as soon as it streams.
	sawText = false;
	await client.prompt(toAbort);
	await until(() => sawText);
	await client.abort(); // answered after agent_end, as pi does: the run is over

	const state = await client.getState();
	process.stdout.write(`\n[state] session ${state.sessionId}, ${state.messageCount} messages, model ${state.model?.id}\n`);
} finally {
	await client.stop();
}

function until(cond, timeout = 60_000) {
	return new Promise((resolve, reject) => {
		const started = Date.now();
		const tick = () => (cond() ? resolve() : Date.now() - started > timeout ? reject(new Error("timed out")) : setTimeout(tick, 10));
		tick();
	});
}
