#!/usr/bin/env node
// mcp-echo: a stdio MCP server with one tool, echo, for TestRealExtensions
// (pi-mcp-adapter's stdio servers, named in mcp.json). Node's built-ins only.
//
// echo {text} returns one text block, "echo: <text>". It speaks MCP's stdio
// transport: one JSON-RPC message a line each way; notifications (no id) get
// no answer; it logs each method to stderr.
import { createInterface } from "node:readline";

const write = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
	let m;
	try {
		m = JSON.parse(line);
	} catch (e) {
		process.stderr.write(`mcp-echo: bad line: ${e.message}\n`);
		return;
	}
	process.stderr.write(`mcp-echo: ${m.method ?? "response"}\n`);
	if (m.id === undefined || m.method === undefined) return;
	switch (m.method) {
		case "initialize":
			write({
				id: m.id,
				result: {
					protocolVersion: m.params?.protocolVersion ?? "2025-06-18",
					capabilities: { tools: {} },
					serverInfo: { name: "mcp-echo", version: "1" },
				},
			});
			break;
		case "tools/list":
			write({
				id: m.id,
				result: {
					tools: [{
						name: "echo",
						description: "Returns its text, prefixed with 'echo: '.",
						inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
					}],
				},
			});
			break;
		case "tools/call": {
			const text = String(m.params?.arguments?.text ?? "");
			write({ id: m.id, result: { content: [{ type: "text", text: `echo: ${text}` }], isError: false } });
			break;
		}
		case "ping":
			write({ id: m.id, result: {} });
			break;
		default:
			write({ id: m.id, error: { code: -32601, message: `method not found: ${m.method}` } });
	}
});
