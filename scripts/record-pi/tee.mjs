// tee.mjs is the cliPath the recorder gives pi's RpcClient: RpcClient runs
// `node tee.mjs --mode rpc …`, and this runs the agent under record
// (RECORD_CMD, a JSON array: the program and its first arguments) with the
// same arguments, passing stdin and stdout through line by line and
// appending each line to RECORD_FILE, before passing it on:
//
//	{"argv":[…]}     the arguments RpcClient gave (first line)
//	{"in":<the command as RpcClient wrote it>}
//	{"out":<the frame as the agent wrote it>}
//
// The lines are copied byte for byte (field order and all), except that
// RECORD_SCRUB, the recorder's scratch folder, is replaced by "/scratch". A
// line that is not JSON is recorded as {"inRaw":"…"} or {"outRaw":"…"}.
// stderr passes through. Signals are passed on; tee exits as the agent does.
import { spawn } from "node:child_process";
import fs from "node:fs";

const cmd = JSON.parse(process.env.RECORD_CMD);
const fd = fs.openSync(process.env.RECORD_FILE, "a");
const scrub = process.env.RECORD_SCRUB || "";
fs.writeSync(fd, JSON.stringify({ argv: process.argv.slice(2) }).split(scrub || "\0").join("/scratch") + "\n");

function record(dir, line) {
	let text = scrub ? line.split(scrub).join("/scratch") : line;
	try {
		JSON.parse(text);
		text = `{"${dir}":${text}}`;
	} catch {
		text = JSON.stringify({ [`${dir}Raw`]: text });
	}
	fs.writeSync(fd, text + "\n");
}

// lines splits a stream on LF only (as pi's own reader does), calling onLine
// with each line without its LF, and onEnd at the end.
function lines(stream, onLine, onEnd) {
	let buf = Buffer.alloc(0);
	stream.on("data", (chunk) => {
		buf = Buffer.concat([buf, chunk]);
		let i;
		while ((i = buf.indexOf(10)) >= 0) {
			onLine(buf.subarray(0, i));
			buf = buf.subarray(i + 1);
		}
	});
	stream.on("end", () => {
		if (buf.length > 0) onLine(buf);
		onEnd();
	});
}

const child = spawn(cmd[0], [...cmd.slice(1), ...process.argv.slice(2)], { stdio: ["pipe", "pipe", "inherit"] });
lines(
	process.stdin,
	(line) => {
		record("in", line.toString("utf8"));
		child.stdin.write(Buffer.concat([line, Buffer.from("\n")]));
	},
	() => child.stdin.end(),
);
child.stdin.on("error", () => {}); // the agent exited first
lines(
	child.stdout,
	(line) => {
		record("out", line.toString("utf8"));
		process.stdout.write(Buffer.concat([line, Buffer.from("\n")]));
	},
	() => {},
);
const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const sig of signals) process.on(sig, () => child.kill(sig));
child.on("error", (err) => {
	process.stderr.write(`tee.mjs: cannot run ${cmd[0]}: ${err.message}\n`);
	process.exit(127);
});
child.on("close", (code, signal) => {
	fs.writeSync(fd, JSON.stringify({ exit: code, signal }) + "\n");
	if (signal) {
		for (const sig of signals) process.removeAllListeners(sig);
		process.kill(process.pid, signal);
	} else {
		process.exit(code ?? 1);
	}
});
