// bench-sdk: times one query() turn of the TypeScript Claude Agent SDK per
// line of stdin, for the benchmark that compares it with a bridge turn
// (cmd/claude-rpc BenchmarkSDK, run by scripts/bench).
//
//   CLAUDE_AGENT_SDK_DIR=$(scripts/install-sdk) CLAUDE_RPC_TEST_CLI=$(scripts/install-cli) \
//     node scripts/bench-sdk.mjs            # then one prompt per line on stdin
//
// Each line of stdin is a prompt; for each, the script calls query() with
// it, pointed at the same CLI binary the bridge runs (pathToClaudeCodeExecutable)
// in the working folder given as CLAUDE_RPC_BENCH_CWD, and prints one JSON
// line: {"ms": query() call to its result message, "exitMs": to the end of
// the iteration (the CLI process gone), "result": the result's text}. The
// process stays up between turns, as a host using the SDK would: only
// query() itself is timed, not Node's start or the SDK's import.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.CLAUDE_AGENT_SDK_DIR;
const cli = process.env.CLAUDE_RPC_TEST_CLI;
if (!sdkDir || !cli) {
	console.error("bench-sdk: set CLAUDE_AGENT_SDK_DIR (scripts/install-sdk) and CLAUDE_RPC_TEST_CLI (scripts/install-cli)");
	process.exit(2);
}
const { query } = await import(
	pathToFileURL(join(sdkDir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "sdk.mjs")).href
);

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const prompt of rl) {
	if (prompt === "") continue;
	const start = performance.now();
	let ms = 0;
	let result = "";
	for await (const m of query({
		prompt,
		options: {
			pathToClaudeCodeExecutable: cli,
			cwd: process.env.CLAUDE_RPC_BENCH_CWD || process.cwd(),
			env: process.env,
			permissionMode: "default",
		},
	})) {
		if (m.type === "result") {
			ms = performance.now() - start;
			result = m.result ?? "";
		}
	}
	const exitMs = performance.now() - start;
	process.stdout.write(JSON.stringify({ ms, exitMs, result }) + "\n");
}
