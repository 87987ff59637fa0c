// Module hooks of claude-rpc's extension host (node:module register): the
// packages pi gives its extensions map to claude-rpc's stand-ins, and, on a
// Node that strips no TypeScript types, .ts files load as JavaScript.
let shims = {};
let passTS = false;

export async function initialize(data) {
  shims = data.shims;
  passTS = data.passTS;
}

const mapped = {
  "@sinclair/typebox": "typebox",
  typebox: "typebox",
  "@earendil-works/pi-ai": "typebox",
  "@mariozechner/pi-ai": "typebox",
  "@earendil-works/pi-coding-agent": "pi",
  "@mariozechner/pi-coding-agent": "pi",
  "claude-rpc:typebox": "typebox",
};

function dataURL(src) {
  return "data:text/javascript;base64," + Buffer.from(src).toString("base64");
}

export async function resolve(specifier, context, next) {
  const name = mapped[specifier];
  if (name) return { url: dataURL(shims[name]), format: "module", shortCircuit: true };
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (passTS && url.startsWith("file:") && /\.m?ts$/.test(url)) {
    const { readFile } = await import("node:fs/promises");
    const source = await readFile(new URL(url), "utf8");
    return { format: "module", source, shortCircuit: true };
  }
  return next(url, context);
}
