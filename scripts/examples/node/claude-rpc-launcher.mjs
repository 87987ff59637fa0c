// pi's RpcClient starts its agent as `node <cliPath> --mode rpc …`. This file
// is that cliPath for claude-rpc: it runs the claude-rpc binary (CLAUDE_RPC_BIN,
// else claude-rpc on PATH) with the same arguments and the same stdio, and
// exits as it exits. Point RpcClient's cliPath here and nothing else changes.
import { spawn } from "node:child_process";

const bin = process.env.CLAUDE_RPC_BIN || "claude-rpc";
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
	process.on(sig, () => child.kill(sig));
}
child.on("error", (err) => {
	process.stderr.write(`claude-rpc-launcher: cannot run ${bin}: ${err.message}\n`);
	process.exit(127);
});
child.on("exit", (code, signal) => {
	if (signal) process.kill(process.pid, signal);
	else process.exit(code ?? 1);
});
