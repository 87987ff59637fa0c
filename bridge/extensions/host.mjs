// claude-rpc's extension host: pi 1.6.0's own extension runtime (its
// loader, jiti for TypeScript, its ExtensionRunner and the packages it
// gives extensions) imported from pi's npm package, bound to the bridge.
// The bridge runs `node <this file>` with its configuration in
// CLAUDE_RPC_EXTHOST (JSON: pi, the pi package's folder; paths; noExtensions;
// cwd; agentDir; flags) and speaks JSON lines with it over stdin and stdout;
// stderr is the bridge's log. What an extension writes to stdout
// (console.log, process.stdout.write) goes to stderr, so stdout carries the
// host's lines only.
//
// host → bridge:
//   {type:"loaded", node, tools, commands, flags, handlers, errors, warnings, problems}
//     (warnings and problems: pi's startup diagnostics, its warnings and its
//     errors, such as an unknown or valueless flag, on which pi itself exits)
//   {type:"tools", tools} | {type:"commands", commands}   changed after loading
//   {type:"result", id, value} | {type:"result", id, error}
//   {type:"update", id, partialResult}                   a tool's onUpdate
//   {type:"ui", method, ...fields}                        fire-and-forget ctx.ui calls
//   {type:"ui", uiId, method, timeout?, ...fields}        dialogs, answered by ui_response
//   {type:"ui_cancel", uiId}                              a dialog its signal or timeout ended
//   {type:"error", extensionPath, event, error}           pi's extension_error
//   {type:"action", name, args}                           ExtensionAPI calls the bridge carries out
//   {type:"action", id, name, args}                       ... whose answer the extension awaits:
//                                                         answered by action_result
// bridge → host:
//   {type:"state", ...}                                   the session as it is now (see state below)
//   {type:"event", event}                                 an event for the handlers, in order
//   {type:"emit", id, event}                              an event whose handlers' result the bridge waits for
//   {type:"before_agent_start", id, prompt, systemPrompt} → value {systemPrompt, messages}
//   {type:"tool_call", id, name, toolCallId, params}      → value: the tool's result
//   {type:"command", id, name, args}                      → value {handled}
//   {type:"cancel", id}                                   aborts call id's signal
//   {type:"ui_response", uiId, value?, confirmed?, cancelled?}
//   {type:"action_result", id, value} | {type:"action_result", id, error}
// stdin's end fires session_shutdown (reason quit), then the host exits.
import { enableCompileCache } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { format } from "node:util";
import { existsSync, statSync } from "node:fs";

try {
  enableCompileCache?.(); // pi's bundle is ~10 MB of JavaScript: compiled once per machine
} catch {}

const out = process.stdout.write.bind(process.stdout);
const toStderr = (...a) => process.stderr.write(format(...a) + "\n");
console.log = console.info = console.debug = toStderr;
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

function send(m) {
  out(JSON.stringify(m) + "\n");
}

const cfg = JSON.parse(process.env.CLAUDE_RPC_EXTHOST || "{}");
delete process.env.CLAUDE_RPC_EXTHOST;
const cwd = cfg.cwd || process.cwd();

// An extension's stray rejection or exception is logged; the host goes on.
process.on("unhandledRejection", (e) => process.stderr.write(`claude-rpc extension host: unhandled rejection: ${e?.stack || e}\n`));
process.on("uncaughtException", (e) => process.stderr.write(`claude-rpc extension host: uncaught exception: ${e?.stack || e}\n`));

const pi = await import(pathToFileURL(join(cfg.pi, "dist", "bundle", "index.js")).href);
try {
  pi.initTheme(undefined, false); // ctx.ui.theme as pi's RPC mode has it: no colour without a terminal
} catch (e) {
  process.stderr.write(`claude-rpc extension host: pi's theme did not start: ${e?.message || e}\n`);
}

// The session as the bridge last said it is; the extensions' synchronous
// getters (ctx.model, ctx.isIdle(), ...) read it.
let state = {
  model: undefined,
  models: [],
  thinkingLevel: "off",
  idle: true,
  sessionFile: undefined,
  sessionName: undefined,
  systemPrompt: "",
  contextUsage: undefined,
  activeTools: [],
  allTools: [],
  pendingMessages: 0,
};

// The session's entries, read with pi's own SessionManager from the pi file
// the bridge writes; opened again when the session changed (sessionGen) or
// the file did (its size or time: the bridge appends to it as a run goes).
let sessionManager;
let sessionManagerFile;
let sessionManagerKey;
let sessionGen = 0;
function sessionKey() {
  if (!state.sessionFile) return `${sessionGen}`;
  try {
    const st = statSync(state.sessionFile);
    return `${sessionGen}:${state.sessionFile}:${st.size}:${st.mtimeMs}`;
  } catch {
    return `${sessionGen}:${state.sessionFile}:none`;
  }
}
function currentSessionManager() {
  const key = sessionKey();
  if (sessionManager && sessionManagerKey === key) return sessionManager;
  try {
    if (state.sessionFile) {
      // Not written yet, it is still the session's file (pi's has its path
      // and id from the start); the id is the bridge's (get).
      sessionManager = pi.SessionManager.open(state.sessionFile, undefined, cwd);
      sessionManagerFile = state.sessionFile;
    } else if (!sessionManager || sessionManagerFile) {
      sessionManager = pi.SessionManager.inMemory(cwd);
      sessionManagerFile = undefined;
    }
  } catch (e) {
    process.stderr.write(`claude-rpc extension host: reading the session file ${state.sessionFile}: ${e?.message || e}\n`);
    sessionManager ??= pi.SessionManager.inMemory(cwd);
  }
  sessionManagerKey = key;
  return sessionManager;
}
// What extensions see as ctx.sessionManager: pi's reader over the session's
// own entries. Writes go through the API (appendEntry, setLabel, ...), which
// the bridge carries out.
const readOnlySessionManager = new Proxy(
  {},
  {
    get(_t, prop) {
      if (prop === "getSessionId" && state.sessionId) return () => state.sessionId;
      if (prop === "getSessionFile" && state.sessionFile) return () => state.sessionFile;
      const sm = currentSessionManager();
      const v = sm[prop];
      return typeof v === "function" ? v.bind(sm) : v;
    },
    has(_t, prop) {
      return prop in currentSessionManager();
    },
  },
);

const serviceOptions = {
  cwd,
  agentDir: cfg.agentDir || undefined,
  extensionFlagValues: new Map(Object.entries(cfg.flags || {})),
  resourceLoaderOptions: {
    additionalExtensionPaths: cfg.paths || [],
    noExtensions: cfg.noExtensions === true,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
  },
};
let services = await pi.createAgentSessionServices(serviceOptions);
let loadedResult = services.resourceLoader.getExtensions();
const warnings = services.diagnostics.filter((d) => d.type === "warning").map((d) => d.message);
const problems = services.diagnostics.filter((d) => d.type === "error").map((d) => d.message);

// ctx.modelRegistry: pi's registry, its models the CLI's (as
// get_available_models gives them).
const registry = new pi.ModelRegistry(services.modelRuntime);
registry.getAll = () => state.models;
registry.getAvailable = () => state.models;
registry.find = (provider, id) => state.models.find((m) => m.provider === provider && m.id === id);
registry.hasConfiguredAuth = () => true;

// Dialogs waiting for the bridge's ui_response, with pi's RPC mode's
// timeout and signal: either resolves the dialog with its default and
// withdraws it.
let uiSeq = 0;
const dialogs = new Map();
function dialog(method, fields, opts, defaultValue, pick) {
  if (opts?.signal?.aborted) return Promise.resolve(defaultValue);
  const uiId = ++uiSeq;
  return new Promise((resolve) => {
    let timer;
    const done = (v) => {
      if (timer) clearTimeout(timer);
      opts?.signal?.removeEventListener("abort", onAbort);
      dialogs.delete(uiId);
      resolve(v);
    };
    const onAbort = () => {
      send({ type: "ui_cancel", uiId });
      done(defaultValue);
    };
    opts?.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts?.timeout) timer = setTimeout(onAbort, opts.timeout);
    dialogs.set(uiId, (r) => done(pick(r)));
    send({ type: "ui", uiId, method, ...fields, ...(opts?.timeout ? { timeout: opts.timeout } : {}) });
  });
}

// ctx.ui as pi's RPC mode has it: the same methods, the TUI-only ones doing
// nothing, theme pi's.
const ui = {
  select: (title, options, opts) => dialog("select", { title, options }, opts, undefined, (r) => (r.cancelled ? undefined : r.value)),
  confirm: (title, message, opts) => dialog("confirm", { title, message }, opts, false, (r) => (r.cancelled ? false : r.confirmed === true)),
  input: (title, placeholder, opts) => dialog("input", { title, placeholder }, opts, undefined, (r) => (r.cancelled ? undefined : r.value)),
  editor: (title, prefill) => dialog("editor", { title, prefill }, undefined, undefined, (r) => (r.cancelled ? undefined : r.value)),
  notify: (message, notifyType) => send({ type: "ui", method: "notify", message: String(message), notifyType: notifyType || "info" }),
  onTerminalInput: () => () => {},
  setStatus: (statusKey, statusText) => send({ type: "ui", method: "setStatus", statusKey, statusText }),
  setWorkingMessage() {},
  setWorkingVisible() {},
  setWorkingIndicator() {},
  setHiddenThinkingLabel() {},
  setWidget(widgetKey, content, options) {
    if (content === undefined || Array.isArray(content)) {
      send({ type: "ui", method: "setWidget", widgetKey, widgetLines: content, widgetPlacement: options?.placement });
    }
  },
  setFooter() {},
  setHeader() {},
  setTitle: (title) => send({ type: "ui", method: "setTitle", title: String(title) }),
  custom: async () => undefined,
  pasteToEditor(text) {
    this.setEditorText(text);
  },
  setEditorText: (text) => send({ type: "ui", method: "set_editor_text", text: String(text) }),
  getEditorText: () => "",
  addAutocompleteProvider() {},
  setEditorComponent() {},
  getEditorComponent: () => undefined,
  get theme() {
    return piTheme ?? themeFallback;
  },
  getAllThemes: () => [],
  getTheme: () => undefined,
  setTheme: () => ({ success: false, error: "Theme switching not supported in RPC mode" }),
  getToolsExpanded: () => false,
  setToolsExpanded() {},
};
// Used only when pi's bundle does not export its theme instance: the text
// as given, as pi's RPC mode renders it without a terminal.
const themeFallback = new Proxy({}, { get: (_t, prop) => (prop === "name" ? "dark" : (_a, text) => (text === undefined ? _a : text)) });

// Calls the extensions make that the bridge carries out.
let actionSeq = 0;
const actionWaits = new Map();
function act(name, args) {
  send({ type: "action", name, args });
}
function ask(name, args) {
  const id = ++actionSeq;
  return new Promise((resolve, reject) => {
    actionWaits.set(id, { resolve, reject });
    send({ type: "action", id, name, args });
  });
}

let runner;
let loaded = false; // the bridge was told what loaded: later changes are news
function bind(r) {
  r.bindCore(
    {
      sendMessage: (message, options) => act("sendMessage", { message, options }),
      sendUserMessage: (content, options) => act("sendUserMessage", { content, options }),
      appendEntry: (customType, data) => act("appendEntry", { customType, data }),
      setSessionName: (name) => {
        state.sessionName = name;
        act("setSessionName", { name });
      },
      getSessionName: () => state.sessionName,
      setLabel: (entryId, label) => act("setLabel", { entryId, label }),
      getActiveTools: () => [...state.activeTools],
      getAllTools: () => state.allTools.map((t) => ({ ...t })),
      getSettings: () => services.settingsManager.getSettings(),
      setActiveTools: (toolNames) => {
        state.activeTools = [...toolNames];
        act("setActiveTools", { toolNames });
      },
      refreshTools: () => reportTools(),
      getCommands: () => commandList(),
      setModel: async (model) => {
        const r = await ask("setModel", { provider: model?.provider, id: model?.id });
        return r === true;
      },
      getThinkingLevel: () => state.thinkingLevel,
      setThinkingLevel: (level) => {
        state.thinkingLevel = level;
        act("setThinkingLevel", { level });
      },
    },
    {
      getModel: () => state.model,
      getScopedModels: () => [],
      isIdle: () => state.idle,
      isProjectTrusted: () => true,
      getSignal: () => undefined,
      abort: () => act("abort", {}),
      hasPendingMessages: () => state.pendingMessages > 0,
      shutdown: () => act("shutdown", {}),
      getContextUsage: () => state.contextUsage,
      compact: (options) => {
        ask("compact", { customInstructions: options?.customInstructions }).then(
          (result) => options?.onComplete?.(result),
          (e) => options?.onError?.(e instanceof Error ? e : new Error(String(e))),
        );
      },
      getSystemPrompt: () => state.systemPrompt,
    },
  );
  r.bindCommandContext({
    waitForIdle: () => ask("waitForIdle", {}).then(() => undefined),
    newSession: (options) => ask("newSession", { parentSession: options?.parentSession }).then(cancelled).then((r) => replaced(r, options)),
    fork: (entryId, options) => ask("fork", { entryId, position: options?.position }).then(cancelled).then((r) => replaced(r, options)),
    navigateTree: (targetId, options) => ask("navigateTree", { targetId, ...options }).then(cancelled),
    switchSession: (sessionPath, options) => ask("switchSession", { sessionPath }).then(cancelled).then((r) => replaced(r, options)),
    // As pi's reload: session_shutdown (reload) to the extensions as they
    // are, the extensions loaded again, session_start (reload) to the new
    // ones; the caller's ctx is stale afterwards, as in pi. In order with
    // the events, which wait meanwhile.
    reload: () =>
      inOrder(async () => {
        await runner.emit({ type: "session_shutdown", reason: "reload" });
        await reload();
        await runner.emit({ type: "session_start", reason: "reload" });
      }),
  });
  r.setUIContext(ui, "rpc");
  r.onError((e) => send({ type: "error", extensionPath: e.extensionPath, event: e.event, error: e.error }));
}
function cancelled(v) {
  return { cancelled: v?.cancelled === true };
}

// pi's theme instance, which its bundle does not export: a runner's
// context has it before a UI is set.
let piTheme;
function newRunner() {
  runner?.invalidate?.("the session changed");
  runner = new pi.ExtensionRunner(loadedResult.extensions, loadedResult.runtime, cwd, readOnlySessionManager, registry);
  try {
    piTheme ??= runner.getUIContext().theme;
  } catch {}
  bind(runner);
}
newRunner();

function toolList() {
  return runner.getAllRegisteredTools().map(({ definition: t }) => ({
    name: t.name,
    label: t.label,
    description: t.description || t.label || "",
    parameters: t.parameters ? JSON.parse(JSON.stringify(t.parameters)) : { type: "object" },
  }));
}
function reportTools() {
  lastTools = undefined;
  reportChanges();
}
// reportChanges tells the bridge the tools and commands when they changed
// since it was last told: an extension may register them at any time (in
// a session_start handler, a command, ...), as pi lists them as they are.
let lastTools, lastCommands;
function reportChanges() {
  if (!loaded) return;
  const tools = toolList();
  const t = JSON.stringify(tools);
  if (t !== lastTools) {
    lastTools = t;
    send({ type: "tools", tools });
  }
  const commands = commandList();
  const c = JSON.stringify(commands);
  if (c !== lastCommands) {
    lastCommands = c;
    send({ type: "commands", commands });
  }
}

// reload loads the extensions again, as pi makes a session's runtime anew
// when the session is replaced (new, resume, fork): their factories run
// again with a new pi object, and the old ones' pi and ctx are stale.
async function reload() {
  services = await pi.createAgentSessionServices(serviceOptions);
  loadedResult = services.resourceLoader.getExtensions();
  for (const e of loadedResult.errors) send({ type: "error", extensionPath: e.path, event: "load", error: String(e.error) });
  newRunner();
  reportChanges();
}

// replaced runs a session change's withSession (pi's newSession, fork and
// switchSession options) once the new session's extensions are bound,
// with their context, as pi's createReplacedSessionContext gives it.
async function replaced(result, options) {
  if (result.cancelled || typeof options?.withSession !== "function") return result;
  await inOrder(() => undefined); // the session_start, and its reload, before it
  const ctx = Object.defineProperties({}, Object.getOwnPropertyDescriptors(runner.createCommandContext()));
  ctx.sendMessage = (message, opts) => act("sendMessage", { message, options: opts });
  ctx.sendUserMessage = (content, opts) => act("sendUserMessage", { content, options: opts });
  await options.withSession(ctx);
  return result;
}
function commandList() {
  return runner.getRegisteredCommands().map((c) => ({
    name: c.invocationName,
    description: c.description,
    source: "extension",
    sourceInfo: c.sourceInfo,
  }));
}
function flagList() {
  return [...runner.getFlags().values()].map((f) => ({ name: f.name, type: f.type, description: f.description, default: f.default, extensionPath: f.extensionPath }));
}
function handlerTypes() {
  const types = new Set();
  for (const ext of loadedResult.extensions) for (const k of ext.handlers.keys()) types.add(k);
  return [...types];
}

// Tools run as pi runs them: pi's wrapper gives the tool its context, the
// tool_call handlers may block it or change its input, the tool_result
// handlers its result.
const running = new Map(); // call id → AbortController
async function toolCall(m) {
  const registered = runner.getAllRegisteredTools().find((t) => t.definition.name === m.name);
  if (!registered) throw new Error(`no extension registered a tool named ${m.name}`);
  const ac = new AbortController();
  running.set(m.id, ac);
  try {
    let params = m.params || {};
    const tool = pi.wrapRegisteredTool(registered, runner);
    if (typeof tool.prepareArguments === "function") params = tool.prepareArguments(params);
    if (runner.hasHandlers("tool_call")) {
      const r = await runner.emitToolCall({ type: "tool_call", toolName: m.name, toolCallId: m.toolCallId, input: params });
      if (r?.block) {
        return { content: [{ type: "text", text: r.reason || "Tool call blocked by an extension" }], isError: true };
      }
    }
    const onUpdate = (partial) => send({ type: "update", id: m.id, partialResult: partial ?? {} });
    let result, isError = false;
    try {
      result = await tool.execute(m.toolCallId, params, ac.signal, onUpdate);
    } catch (e) {
      result = { content: [{ type: "text", text: String(e?.message || e) }], details: {} };
      isError = true;
    }
    let content = Array.isArray(result?.content) ? result.content : [{ type: "text", text: result === undefined ? "" : String(result) }];
    let details = result?.details;
    let usage = result?.usage; // a sub-agent's tokens and cost, as pi passes them on
    if (runner.hasHandlers("tool_result")) {
      const r = await runner.emitToolResult({ type: "tool_result", toolName: m.name, toolCallId: m.toolCallId, input: params, content, details, isError, usage });
      if (r) {
        content = r.content ?? content;
        details = r.details ?? details;
        isError = r.isError ?? isError;
        usage = r.usage ?? usage;
      }
    }
    return { content, details, isError, usage };
  } finally {
    running.delete(m.id);
  }
}

// beforeAgentStart runs pi's before_agent_start with the system prompt the
// bridge knows; what the handlers return replaces it, and their messages
// go to the bridge to be sent with the prompt.
async function beforeAgentStart(m) {
  // The event's systemPrompt is the bridge's (what it appends to the CLI's
  // own, which it does not know): "" unless it says otherwise.
  const base = m.systemPrompt || "";
  const r = await runner.emitBeforeAgentStart(
    { messageType: "user", prompt: m.prompt || "", images: m.images || [] },
    { cwd, forceSystemPrompt: base, selectedTools: [...state.activeTools] },
  );
  const forced = r?.systemPromptOptions?.forceSystemPrompt;
  return { systemPrompt: typeof forced === "string" ? forced : base, messages: r?.messages || [] };
}

async function runCommand(m) {
  const command = runner.getCommand(m.name);
  if (!command) return { handled: false };
  try {
    await command.handler(m.args || "", runner.createCommandContext());
  } catch (e) {
    runner.emitError({ extensionPath: `command:${m.name}`, event: "command", error: e instanceof Error ? e.message : String(e) });
  }
  return { handled: true };
}

// Events reach the handlers one at a time, in the order the bridge sent
// them, as pi emits them from one session.
let chain = Promise.resolve();
function inOrder(f) {
  const p = chain.then(f);
  chain = p.catch(() => {});
  return p;
}
async function emit(event) {
  switch (event?.type) {
    case "tool_call": {
      // Handlers block (the result) or change event.input in place: both
      // go back to the bridge.
      const r = await runner.emitToolCall(event);
      return { ...(r || {}), input: event.input };
    }
    case "tool_result":
      return runner.emitToolResult(event);
    case "user_bash":
      return runner.emitUserBash(event);
    case "input":
      return runner.emitInput(event.text, event.images, event.source || "rpc", event.streamingBehavior);
    case "message_end":
      return runner.emitMessageEnd(event);
    case "turn_end":
      return runner.emitBoundary(event, () => ({ messages: [], canContinue: false }));
    case "session_start":
      sessionGen++;
      if (event.reason !== "startup") await reload();
      return runner.emit(event);
    default:
      if (!runner.hasHandlers(event?.type)) return undefined;
      return runner.emit(event);
  }
}

async function answer(m, f) {
  try {
    const value = (await f(m)) ?? null;
    reportChanges(); // what the call registered, before its answer
    send({ type: "result", id: m.id, value });
  } catch (e) {
    reportChanges();
    send({ type: "result", id: m.id, error: String(e?.message || e) });
  }
}

const errors = loadedResult.errors.map((e) => ({ path: e.path, error: e.error }));
loaded = true;
lastTools = JSON.stringify(toolList());
lastCommands = JSON.stringify(commandList());
send({
  type: "loaded",
  node: process.version,
  tools: toolList(),
  commands: commandList(),
  flags: flagList(),
  handlers: handlerTypes(),
  errors,
  warnings,
  problems,
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
    case "state": {
      const { type: _t, ...rest } = m;
      if (rest.sessionFile !== state.sessionFile) sessionGen++;
      state = { ...state, ...rest };
      break;
    }
    case "event":
      inOrder(() => emit(m.event))
        .then(reportChanges)
        .catch((e) => process.stderr.write(`claude-rpc extension host: ${m.event?.type}: ${e?.stack || e}\n`));
      break;
    case "emit":
      answer(m, () => inOrder(() => emit(m.event)));
      break;
    case "before_agent_start":
      answer(m, () => inOrder(() => beforeAgentStart(m)));
      break;
    case "tool_call":
      answer(m, toolCall);
      break;
    case "command":
      answer(m, runCommand);
      break;
    case "cancel":
      running.get(m.id)?.abort();
      break;
    case "ui_response": {
      const d = dialogs.get(m.uiId);
      d?.(m);
      break;
    }
    case "action_result": {
      const w = actionWaits.get(m.id);
      actionWaits.delete(m.id);
      if (!w) break;
      if (m.error !== undefined) w.reject(new Error(String(m.error)));
      else w.resolve(m.value);
      break;
    }
    default:
      process.stderr.write(`claude-rpc extension host: unknown message ${m.type}\n`);
  }
});
rl.on("close", async () => {
  for (const ac of running.values()) ac.abort();
  try {
    await inOrder(() => runner.emit({ type: "session_shutdown", reason: "quit" }));
  } catch (e) {
    process.stderr.write(`claude-rpc extension host: session_shutdown: ${e?.stack || e}\n`);
  }
  process.exit(0);
});
