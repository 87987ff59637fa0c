// A pi extension for claude-rpc's tests, using what hapi's title extension
// uses: TypeBox's Type, a before_agent_start paragraph, and a tool whose
// execute sets the session's title through ctx.ui. No type syntax, so any
// Node claude-rpc supports loads it.
import { Type } from "@sinclair/typebox";

const PARAGRAPH = "\n\n## Naming\nName this chat with the name_chat tool before anything else.";

export default function (pi) {
  pi.on("before_agent_start", (event) => ({ systemPrompt: event.systemPrompt + PARAGRAPH }));

  pi.registerShortcut("ctrl+t", { handler() {} }); // not served: a no-op that logs once

  pi.registerTool({
    name: "name_chat",
    label: "Name Chat",
    description: "Give the chat a short name.",
    parameters: Type.Object({
      name: Type.String({ description: "The chat's name" }),
      mood: Type.Optional(Type.Union([Type.Literal("calm"), Type.Literal("busy")])),
    }),
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      onUpdate?.({ content: [{ type: "text", text: "naming" }], details: {} });
      ctx.ui.setTitle(params.name);
      ctx.ui.notify("named " + params.name, "info");
      console.log("written to stdout by the extension: must not reach the bridge's stdout");
      return { content: [{ type: "text", text: "Chat named " + params.name }], details: {} };
    },
  });
}
