// Reads pi session files with pi's own SessionManager (pi 1.6.0's bundled
// dist/bundle/index.js) and prints what pi sees, as one JSON object:
//
//   node pi-sessions.mjs CWD [FILE]
//
// {"list": [{id, name, firstMessage, messageCount, path, cwd, parentSessionPath}],
//  "context": {"messages": [{role, text, tools}], model, thinkingLevel, name,
//              sessionId, leafId, tree}}   (context: FILE opened, when given;
//              tree: getTree() as [{id, label, children}])
//
// Environment: PI_INDEX (pi's dist/bundle/index.js); HOME and
// PI_CODING_AGENT_DIR / PI_CODING_AGENT_SESSION_DIR as pi would take them.
import { pathToFileURL } from "node:url";

const { SessionManager } = await import(pathToFileURL(process.env.PI_INDEX).href);
const [cwd, file] = process.argv.slice(2);
const dir = process.env.PI_CODING_AGENT_SESSION_DIR || undefined;
const out = {};
out.list = (await SessionManager.list(cwd, dir)).map((s) => ({
	id: s.id, name: s.name ?? "", firstMessage: s.firstMessage, messageCount: s.messageCount,
	path: s.path, cwd: s.cwd, parentSessionPath: s.parentSessionPath ?? "",
}));
if (file) {
	const sm = SessionManager.open(file);
	const ctx = sm.buildSessionContext();
	const text = (c) => typeof c === "string" ? c : (c ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
	out.context = {
		messages: ctx.messages.map((m) => ({
			role: m.role, text: text(m.content),
			tools: Array.isArray(m.content) ? m.content.filter((b) => b.type === "toolCall").map((b) => b.name) : [],
		})),
		model: ctx.model ?? null, thinkingLevel: ctx.thinkingLevel ?? "", name: sm.getSessionName() ?? "",
		sessionId: sm.getSessionId(), leafId: sm.getLeafId(),
		tree: sm.getTree().map(function node(n) {
			return { id: n.entry.id, label: n.label ?? "", children: n.children.map(node) };
		}),
	};
}
process.stdout.write(JSON.stringify(out) + "\n");
