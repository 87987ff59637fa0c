// pi's RpcClient starts its agent as `node <cliPath> --mode rpc …`. This file
// is that cliPath for claude-rpc: it runs claude-rpc with the same arguments
// and the same stdio, and exits as it exits. Point RpcClient's cliPath here
// and nothing else changes.
//
// Which claude-rpc: CLAUDE_RPC_BIN if set; else the npm package claude-rpc
// installed next to this file (npm install claude-rpc, or its tarball from
// scripts/npm-pack); else claude-rpc on PATH (go install).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";

function command() {
	if (process.env.CLAUDE_RPC_BIN) return [process.env.CLAUDE_RPC_BIN];
	try {
		const require = createRequire(import.meta.url);
		const pkgFile = require.resolve("claude-rpc/package.json");
		const bin = require(pkgFile).bin["claude-rpc"];
		return [process.execPath, path.join(path.dirname(pkgFile), bin)];
	} catch {
		return ["claude-rpc"];
	}
}

const [bin, ...pre] = command();
const child = spawn(bin, [...pre, ...process.argv.slice(2)], { stdio: "inherit" });
const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const sig of signals) {
	process.on(sig, () => child.kill(sig));
}
child.on("error", (err) => {
	process.stderr.write(`claude-rpc-launcher: cannot run ${bin}: ${err.message}\n`);
	process.exit(127);
});
child.on("exit", (code, signal) => {
	if (signal) {
		// Die of the same signal (the handlers above would catch it).
		for (const sig of signals) process.removeAllListeners(sig);
		process.kill(process.pid, signal);
	} else {
		process.exit(code ?? 1);
	}
});
