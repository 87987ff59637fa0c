// A pi extension whose commands call the API back: the session's name,
// a prompt of its own, a new session; and a command that throws. Its flag
// --greeting is given on claude-rpc's command line.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.registerFlag("greeting", { type: "string", default: "hello", description: "what name-it says" });
  pi.registerCommand("name-it", {
    description: "Names the session",
    handler: async (args, ctx) => {
      pi.setSessionName(args);
      ctx.ui.notify(ctx.ui.theme.fg("accent", "named ") + args + ", " + pi.getFlag("greeting"), "info");
    },
  });
  pi.registerCommand("status", {
    description: "Shows its argument in the status bar",
    handler: async (args, ctx) => ctx.ui.setStatus("ext.status", args),
  });
  pi.registerCommand("count", {
    description: "Counts the session's messages",
    handler: async (_args, ctx) => {
      const n = ctx.sessionManager.getEntries().filter((e) => e.type === "message").length;
      ctx.ui.notify("messages " + n, "info");
    },
  });
  pi.registerCommand("keep", {
    description: "Keeps a note in the session",
    handler: async (args) => {
      pi.appendEntry("note", { text: args });
    },
  });
  pi.registerCommand("mark", {
    description: "Labels the session's first message",
    handler: async (args, ctx) => {
      const first = ctx.sessionManager.getEntries().find((e) => e.type === "message");
      pi.setLabel(first?.id ?? "none", args);
    },
  });
  // sendMessage: args "<how> <text>", how one of now (idle: into the
  // session), turn (triggerTurn), next (deliverAs nextTurn).
  pi.registerCommand("note", {
    description: "Sends a custom message",
    handler: async (args) => {
      const [how, ...rest] = args.split(" ");
      const message = { customType: "note", content: rest.join(" "), display: true, details: { how } };
      if (how === "turn") pi.sendMessage(message, { triggerTurn: true });
      else if (how === "next") pi.sendMessage(message, { deliverAs: "nextTurn" });
      else pi.sendMessage(message);
    },
  });
  pi.registerCommand("ask", {
    description: "Asks the model",
    handler: async (args) => {
      pi.sendUserMessage(args);
    },
  });
  pi.registerCommand("fresh", {
    description: "Starts over",
    handler: async (_args, ctx) => {
      // After the change the old ctx is stale (as in pi): what comes
      // after goes into withSession, with the new session's.
      await ctx.newSession({ withSession: async (c) => c.ui.notify("fresh " + c.sessionManager.getEntries().length, "info") });
    },
  });
  // before_agent_start's message: a prompt that asks for it gets a
  // reminder, which pi puts into the run after the prompt's message.
  pi.on("before_agent_start", async (event) =>
    event.prompt.includes("remind me") ? { message: { customType: "reminder", content: "buy milk", display: false } } : undefined,
  );
  // Session changes: /block makes the next new session cancelled; each
  // start and shutdown is told.
  let block = false;
  pi.registerCommand("block", { description: "Cancels the next new session", handler: async () => { block = true; } });
  pi.on("session_before_switch", async (event) => {
    if (event.reason === "new" && block) {
      block = false;
      return { cancel: true };
    }
  });
  pi.on("session_shutdown", async (event, ctx) => ctx.ui.notify(`shutdown ${event.reason} to ${event.targetSessionFile ? "file" : "none"}`, "info"));
  pi.on("session_start", async (event, ctx) => ctx.ui.notify(`start ${event.reason} from ${event.previousSessionFile ? "file" : "none"}`, "info"));
  pi.on("model_select", async (event, ctx) => ctx.ui.notify(`model ${event.previousModel?.id} -> ${event.model.id} (${event.source})`, "info"));
  pi.on("thinking_level_select", async (event, ctx) => ctx.ui.notify(`level ${event.previousLevel} -> ${event.level}`, "info"));
  // /no-write turns the write tool off and says what is active.
  pi.registerCommand("no-write", {
    description: "Turns write off",
    handler: async (_args, ctx) => {
      pi.setActiveTools(pi.getActiveTools().filter((n) => n !== "write"));
      ctx.ui.notify("all " + pi.getAllTools().map((t) => t.name).join(",") + "; models " + ctx.modelRegistry.getAvailable().length, "info");
    },
  });
  // input: "please …" becomes a reply of the fake API's, "swallow" is
  // handled here, anything else goes on.
  pi.on("input", async (event) => {
    if (event.text.startsWith("please ")) return { action: "transform", text: "[[say:" + event.text.slice(7) + "]]" };
    if (event.text === "swallow") return { action: "handled" };
    return { action: "continue" };
  });
  // user_bash: "fake …" is answered here, the rest runs.
  pi.on("user_bash", async (event) =>
    event.command.startsWith("fake ") ? { result: { output: "faked " + event.command.slice(5), exitCode: 0, cancelled: false, truncated: false } } : undefined,
  );
  // tool_call and tool_result for the CLI's own tools: bash "rm …" is
  // blocked, "echo secret" becomes "echo public", and what a bash call
  // printed reaches the model marked.
  pi.on("tool_call", async (event) => {
    if (event.toolName !== "bash") return undefined;
    const input = event.input as { command: string };
    if (input.command.startsWith("rm ")) return { block: true, reason: "no rm here" };
    if (input.command === "echo secret") input.command = "echo public";
    return undefined;
  });
  pi.on("tool_result", async (event) =>
    event.toolName === "bash" ? { content: [{ type: "text", text: "[checked] " + event.content.map((c: { text?: string }) => c.text ?? "").join("") }] } : undefined,
  );
  // Compaction: /no-compact cancels the next one; one that happens is told.
  let noCompact = false;
  pi.registerCommand("no-compact", { description: "Cancels the next compaction", handler: async () => { noCompact = true; } });
  pi.on("session_before_compact", async (event) => {
    if (noCompact) {
      noCompact = false;
      return { cancel: true };
    }
    if (!Array.isArray(event.branchEntries)) throw new Error("no branchEntries");
  });
  pi.on("session_compact", async (event, ctx) => ctx.ui.notify("compacted " + event.compactionEntry.type + " " + (event.compactionEntry.summary ? "with" : "without") + " summary", "info"));
  pi.registerCommand("reload-me", { description: "Reloads the extensions", handler: async (_args, ctx) => { await ctx.reload(); } });
  pi.registerCommand("broken", {
    description: "Throws",
    handler: async () => {
      throw new Error("broken on purpose");
    },
  });
}
