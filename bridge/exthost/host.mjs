// claude-rpc's extension host: loads pi extensions and serves them to the
// bridge. The bridge runs it as `node --input-type=module -e <SHIMS + this>`
// with the extensions' paths in CLAUDE_RPC_EXTENSIONS (a JSON array) and
// speaks JSON lines with it over its stdin and stdout; its stderr is the
// bridge's log. What an extension writes to stdout (console.log, …) goes to
// stderr too, so stdout carries the bridge's lines only.
//
// host → bridge:
//   {type:"loaded", node, tools, beforeAgentStart, errors:[{path, error}], warnings}
//   {type:"tools", tools}                        a tool registered after loading
//   {type:"result", id, value} | {type:"result", id, error}
//   {type:"update", id, partialResult}           a tool's onUpdate
//   {type:"ui", method, ...fields}               fire-and-forget ctx.ui calls
//   {type:"ui", uiId, method, ...fields}         dialogs, answered by ui_response
// bridge → host:
//   {type:"before_agent_start", id, prompt}      → value {systemPrompt}
//   {type:"tool_call", id, name, toolCallId, params} → value: the tool's result
//   {type:"cancel", id}                          aborts tool call id's signal
//   {type:"ui_response", uiId, value?, confirmed?, cancelled?}
// stdin's end fires session_shutdown, then the host exits.
import { register } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { resolve as resolvePath } from "node:path";
import { format } from "node:util";

const out = process.stdout.write.bind(process.stdout);
const toStderr = (...a) => process.stderr.write(format(...a) + "\n");
console.log = console.info = console.debug = toStderr;
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

function send(m) {
  out(JSON.stringify(m) + "\n");
}

// An extension's stray rejection or exception is logged; the host goes on.
process.on("unhandledRejection", (e) => process.stderr.write(`claude-rpc extension host: unhandled rejection: ${e?.stack || e}\n`));
process.on("uncaughtException", (e) => process.stderr.write(`claude-rpc extension host: uncaught exception: ${e?.stack || e}\n`));

const warned = new Set();
function once(what) {
  if (warned.has(what)) return;
  warned.add(what);
  process.stderr.write(`claude-rpc extension host: ${what} is not supported; ignored\n`);
}

const paths = JSON.parse(process.env.CLAUDE_RPC_EXTENSIONS || "[]");
delete process.env.CLAUDE_RPC_EXTENSIONS;
const warnings = [];
const passTS = !process.features?.typescript;
if (passTS) {
  warnings.push(`Node ${process.version} strips no TypeScript types (Node 22.18 and later do): .ts extensions load only when they hold no type syntax`);
}
register(
  "data:text/javascript;base64," + Buffer.from(SHIMS.hooks).toString("base64"),
  { data: { shims: { typebox: SHIMS.typebox, pi: SHIMS.pi }, passTS } },
);

const handlers = new Map(); // event name → [handler]
const tools = new Map(); // name → definition
let loaded = false;

function toolInfo(t) {
  return {
    name: t.name,
    label: t.label,
    description: t.description || t.label || "",
    parameters: t.parameters ? JSON.parse(JSON.stringify(t.parameters)) : { type: "object" },
  };
}

function toolList() {
  return [...tools.values()].map(toolInfo);
}

// Dialogs waiting for the bridge's ui_response.
let uiSeq = 0;
const dialogs = new Map();
function dialog(method, fields, pick) {
  const uiId = ++uiSeq;
  return new Promise((resolve) => {
    dialogs.set(uiId, (r) => resolve(pick(r)));
    send({ type: "ui", uiId, method, ...fields });
  });
}

const ui = new Proxy(
  {
    setTitle: (title) => send({ type: "ui", method: "setTitle", title: String(title) }),
    notify: (message, notifyType) =>
      send({ type: "ui", method: "notify", message: String(message), notifyType: notifyType || "info" }),
    setStatus: (statusKey, statusText) => send({ type: "ui", method: "setStatus", statusKey, statusText }),
    setWidget: (widgetKey, content, options) => {
      if (content !== undefined && !Array.isArray(content)) {
        once("ctx.ui.setWidget with a component factory");
        return;
      }
      send({ type: "ui", method: "setWidget", widgetKey, widgetLines: content, widgetPlacement: options?.placement });
    },
    setEditorText: (text) => send({ type: "ui", method: "set_editor_text", text: String(text) }),
    select: (title, options) =>
      dialog("select", { title, options }, (r) => (r.cancelled ? undefined : r.value)),
    confirm: (title, message) =>
      dialog("confirm", { title, message }, (r) => (r.cancelled ? false : r.confirmed === true)),
    input: (title, placeholder) =>
      dialog("input", { title, placeholder }, (r) => (r.cancelled ? undefined : r.value)),
    editor: (title, prefill) =>
      dialog("editor", { title, prefill }, (r) => (r.cancelled ? undefined : r.value)),
    custom: async () => undefined,
    getEditorText: () => "",
    getToolsExpanded: () => false,
    getAllThemes: () => [],
    getTheme: () => undefined,
    setTheme: () => ({ success: false, error: "Theme switching not supported in RPC mode" }),
    onTerminalInput: () => () => {},
  },
  {
    get(target, prop) {
      if (prop in target || typeof prop !== "string") return target[prop];
      return () => once(`ctx.ui.${prop}`);
    },
  },
);

function context(signal) {
  return new Proxy(
    {
      ui,
      mode: "rpc",
      hasUI: true,
      cwd: process.cwd(),
      signal,
      isIdle: () => false,
      hasPendingMessages: () => false,
      isProjectTrusted: () => true,
      getSystemPrompt: () => "",
    },
    {
      get(target, prop) {
        if (prop in target || typeof prop !== "string") return target[prop];
        once(`ctx.${prop}`);
        return undefined;
      },
    },
  );
}

const events = new Map();
const api = new Proxy(
  {
    on(event, handler) {
      const list = handlers.get(event) || [];
      list.push(handler);
      handlers.set(event, list);
      return () => {
        const i = list.indexOf(handler);
        if (i >= 0) list.splice(i, 1);
      };
    },
    registerTool(tool) {
      if (!tool || typeof tool.name !== "string" || typeof tool.execute !== "function") {
        throw new Error("registerTool: a tool needs a name and an execute function");
      }
      tools.set(tool.name, tool);
      if (loaded) send({ type: "tools", tools: toolList() });
    },
    getAllTools: () => toolList().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    getActiveTools: () => [...tools.keys()],
    getCommands: () => [],
    getSessionName: () => undefined,
    getThinkingLevel: () => undefined,
    getFlag: () => undefined,
    getMcpServers: () => [],
    exec: async () => {
      throw new Error("pi.exec is not supported by claude-rpc's extension host");
    },
    events: {
      on(name, fn) {
        const l = events.get(name) || [];
        l.push(fn);
        events.set(name, l);
        return () => l.splice(l.indexOf(fn) >>> 0, 1);
      },
      emit(name, data) {
        for (const fn of events.get(name) || []) fn(data);
      },
    },
  },
  {
    get(target, prop) {
      if (prop in target || typeof prop !== "string") return target[prop];
      return () => once(`pi.${prop}`);
    },
  },
);

async function fire(event, data, signal) {
  const results = [];
  for (const h of [...(handlers.get(event) || [])]) {
    try {
      results.push(await h(data, context(signal)));
    } catch (e) {
      process.stderr.write(`claude-rpc extension host: a ${event} handler failed: ${e?.stack || e}\n`);
    }
  }
  return results;
}

// beforeAgentStart chains the handlers' system prompts as pi does, from "".
async function beforeAgentStart(m) {
  let systemPrompt = "";
  for (const h of [...(handlers.get("before_agent_start") || [])]) {
    try {
      const r = await h(
        { type: "before_agent_start", messageType: "user", prompt: m.prompt || "", images: [], systemPrompt, systemPromptOptions: {} },
        context(new AbortController().signal),
      );
      if (r && typeof r.systemPrompt === "string") systemPrompt = r.systemPrompt;
      if (r && r.message !== undefined) once("a message returned by before_agent_start");
    } catch (e) {
      process.stderr.write(`claude-rpc extension host: a before_agent_start handler failed: ${e?.stack || e}\n`);
    }
  }
  return { systemPrompt };
}

const running = new Map(); // tool call id → AbortController
async function toolCall(m) {
  const tool = tools.get(m.name);
  if (!tool) throw new Error(`no extension registered a tool named ${m.name}`);
  const ac = new AbortController();
  running.set(m.id, ac);
  try {
    let params = m.params || {};
    if (typeof tool.prepareArguments === "function") params = tool.prepareArguments(params);
    const onUpdate = (partial) => send({ type: "update", id: m.id, partialResult: partial ?? {} });
    const r = await tool.execute(m.toolCallId, params, ac.signal, onUpdate, context(ac.signal));
    const content = Array.isArray(r?.content) ? r.content : [{ type: "text", text: r === undefined ? "" : String(r) }];
    return { content, details: r?.details, isError: r?.isError === true };
  } catch (e) {
    return { content: [{ type: "text", text: String(e?.message || e) }], isError: true };
  } finally {
    running.delete(m.id);
  }
}

async function answer(m, f) {
  try {
    send({ type: "result", id: m.id, value: await f(m) });
  } catch (e) {
    send({ type: "result", id: m.id, error: String(e?.message || e) });
  }
}

const errors = [];
for (const p of paths) {
  const abs = resolvePath(p);
  try {
    const mod = await import(pathToFileURL(abs).href);
    const factory = mod.default;
    if (typeof factory !== "function") throw new Error("it has no default export that is a function");
    await factory(api);
  } catch (e) {
    let error = String(e?.message || e);
    if (passTS && e instanceof SyntaxError && /\.m?ts$/.test(abs)) {
      error += ` (Node ${process.version} strips no TypeScript types: run claude-rpc with Node 22.18 or later on PATH)`;
    }
    errors.push({ path: p, error });
    if (e?.stack) process.stderr.write(`${p}: ${e.stack}\n`);
  }
}
await fire("session_start", { type: "session_start", reason: "startup" }, new AbortController().signal);
loaded = true;
send({
  type: "loaded",
  node: process.version,
  tools: toolList(),
  beforeAgentStart: (handlers.get("before_agent_start") || []).length > 0,
  errors,
  warnings,
});

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    process.stderr.write(`claude-rpc extension host: not JSON: ${line.slice(0, 200)}\n`);
    return;
  }
  switch (m.type) {
    case "before_agent_start":
      answer(m, beforeAgentStart);
      break;
    case "tool_call":
      answer(m, toolCall);
      break;
    case "cancel":
      running.get(m.id)?.abort();
      break;
    case "ui_response": {
      const d = dialogs.get(m.uiId);
      dialogs.delete(m.uiId);
      d?.(m);
      break;
    }
    default:
      process.stderr.write(`claude-rpc extension host: unknown message ${m.type}\n`);
  }
});
rl.on("close", async () => {
  for (const ac of running.values()) ac.abort();
  await fire("session_shutdown", { type: "session_shutdown" }, new AbortController().signal);
  process.exit(0);
});
