// omp_frame.ts: runs omp 18.3.4's own rpc-frame.ts (from the cache folder
// scripts/install-omp prints, OMP_DIR) for bridge/rpcframe's round-trip
// test. Our own code; omp's stays in the cache.
//
// stdin: {"ops":[...]}, one JSON document; stdout: {"results":[...]}, one
// result per op:
//   {"op":"encode","json":S}    one RpcFrameEncoder for the whole run, set to
//                               protocol v2; S is parsed and encoded:
//                               {"lines":[...],"stringified":JSON.stringify(JSON.parse(S))}
//   {"op":"decode","lines":[]}  a fresh RpcFrameDecoder; each line is parsed
//                               and pushed until one throws:
//                               {"frames":[JSON.stringify(frame),...],"error":"…"?}
import "../../../scripts/omp-host/natives-stub.ts";

const ompDir = process.env.OMP_DIR;
if (!ompDir) throw new Error("OMP_DIR is not set");
const { RpcFrameEncoder, RpcFrameDecoder } = await import(`${ompDir}/pi-coding-agent/src/modes/rpc/rpc-frame.ts`);

const input = JSON.parse(await Bun.stdin.text());
const encoder = new RpcFrameEncoder();
encoder.setProtocolVersion(2);
const results: unknown[] = [];
for (const op of input.ops) {
	if (op.op === "encode") {
		const value = JSON.parse(op.json);
		results.push({ lines: [...encoder.encodeFrames(value)], stringified: JSON.stringify(value) });
	} else if (op.op === "decode") {
		const decoder = new RpcFrameDecoder();
		const frames: string[] = [];
		let error: string | undefined;
		for (const line of op.lines) {
			let value: unknown;
			try {
				value = JSON.parse(line);
			} catch {
				error = "not JSON";
				break;
			}
			try {
				const frame = decoder.push(value);
				if (frame) frames.push(JSON.stringify(frame));
			} catch (e) {
				error = e instanceof Error ? e.message : String(e);
				break;
			}
		}
		results.push(error === undefined ? { frames } : { frames, error });
	} else {
		throw new Error(`unknown op ${op.op}`);
	}
}
process.stdout.write(JSON.stringify({ results }));
