// A pi extension whose tool ends the extension host's process.
export default function (pi) {
  pi.registerTool({
    name: "die",
    label: "Die",
    description: "Ends the extension host.",
    parameters: { type: "object", properties: {} },
    async execute() {
      process.exit(3);
    },
  });
}
