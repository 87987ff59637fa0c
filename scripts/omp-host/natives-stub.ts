// natives-stub.ts: imported first by whatever loads omp's RPC sources from
// the cache (host.ts, bridge/rpcframe's round-trip test). Our own code.
//
// pi-utils, which rpc-client.ts and rpc-frame.ts import for isRecord,
// readJsonl and ptree, re-exports modules that import @oh-my-pi/pi-natives,
// whose loader requires a platform addon at import time. No addon for 18.2.9
// is on the registry, and omp's RpcClient needs none of it as long as the
// agent is spawned through the client's `spawn` option (host.ts does) rather
// than pi-utils' native ptree. So the module is replaced by one whose four
// names, all that pi-utils imports from it, throw when used.
import { plugin } from "bun";

function unavailable(name: string): never {
	throw new Error(`@oh-my-pi/pi-natives.${name} is not available in claude-rpc's omp host (scripts/omp-host/natives-stub.ts)`);
}

plugin({
	name: "claude-rpc-omp-host-pi-natives-stub",
	setup(build) {
		build.module("@oh-my-pi/pi-natives", () => ({
			loader: "object",
			exports: {
				Process: class {
					constructor() {
						unavailable("Process");
					}
				},
				ProcessStatus: {},
				FileLock: class {
					constructor() {
						unavailable("FileLock");
					}
				},
				renderMermaidAscii: () => unavailable("renderMermaidAscii"),
			},
		}));
	},
});
