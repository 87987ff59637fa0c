// Drives claude-rpc as a pi 1.5 host does: through pi 1.5.2's own RpcClient
// (npm @earendil-works/pi-coding-agent), waiting for agent_settled. A prompt
// whose reply streams to the terminal, a steering message sent while it
// streams, then a second prompt that is aborted. (example.mjs is the same
// for pi 0.73.1's RpcClient.) Setup:
//
//   cd scripts/examples/node
//   npm pack @earendil-works/pi-coding-agent@1.5.2
//   mkdir -p node_modules/@earendil-works/pi-coding-agent
//   tar -xzf earendil-works-pi-coding-agent-1.5.2.tgz --strip-components=1 -C node_modules/@earendil-works/pi-coding-agent
//   npm install $OUT/*.tgz          # claude-rpc, from scripts/npm-pack's tarballs
//   node example-pi15.mjs
//
// (`npm install @earendil-works/pi-coding-agent@1.5.2` fails today: one of
// its dependencies has no 1.5.2 in the registry. Its RpcClient needs none of
// them.) Or, with claude-rpc built by go install instead of the npm package:
//
//   CLAUDE_RPC_BIN=$(go env GOPATH)/bin/claude-rpc node example-pi15.mjs
//
// Arguments (optional): the first prompt, the steering message, the prompt
// to abort. Extra claude-rpc flags go in CLAUDE_RPC_ARGS (space-separated).
import { fileURLToPath } from "node:url";

// The package's main entry loads the whole of pi and its dependencies; its
// RpcClient (dist/modes/rpc/rpc-client.js) is standalone, Node built-ins only.
const { RpcClient } = await import(new URL("./modes/rpc/rpc-client.js", import.meta.resolve("@earendil-works/pi-coding-agent")).href);

const [first = "List three uses of a paperclip, slowly.", steer = "Make the last one funny.",
	toAbort = "Write a long essay about paperclips."] = process.argv.slice(2);

const client = new RpcClient({
	cliPath: fileURLToPath(new URL("./claude-rpc-launcher.mjs", import.meta.url)),
	// message_update frames as pi 1.5 writes them: the delta, not the message so far.
	args: ["--message-updates", "delta", ...(process.env.CLAUDE_RPC_ARGS || "").split(" ").filter(Boolean)],
});

let sawText = false;
client.onEvent((event) => {
	switch (event.type) {
		case "message_update":
			if (event.assistantMessageEvent.type === "text_delta") {
				process.stdout.write(event.assistantMessageEvent.delta);
				sawText = true;
			}
			break;
		case "message_start":
			if (event.message.role === "user") {
				process.stdout.write(`\n[user] ${event.message.content.map((c) => c.text ?? "").join("")}\n`);
			}
			break;
		case "message_end":
			if (event.message.role === "assistant" && event.message.stopReason !== "toolUse") {
				process.stdout.write(`\n[assistant done: ${event.message.stopReason}]\n`);
			}
			break;
		case "queue_update":
			process.stdout.write(`\n[queue] ${event.steering.length} steering, ${event.followUp.length} follow-up\n`);
			break;
		case "agent_settled": // nothing more will happen without a command
			process.stdout.write(`[settled${event.aborted ? ": aborted" : ""}]\n`);
			break;
	}
});

await client.start();
try {
	// 1. Prompt; steer once the reply streams. promptAndWait resolves on
	//    agent_settled: after the steer has been answered too.
	const run = client.promptAndWait(first, undefined, 120_000);
	await until(() => sawText);
	const disposition = await client.steer(steer);
	process.stdout.write(`\n[steer ${disposition}]\n`);
	await run;

	// 2. A prompt aborted as soon as it streams. abort() returns after
	//    agent_settled {aborted: true}.
	sawText = false;
	await client.prompt(toAbort);
	await until(() => sawText);
	await client.abort();

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
