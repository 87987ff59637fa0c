// claude-rpc's stand-in for @earendil-works/pi-coding-agent (and
// @mariozechner/pi-coding-agent): an extension imports its types, which
// type stripping erases, and a few helpers, given here in their simplest
// working form.
export { Type, StringEnum } from "claude-rpc:typebox";
export const CONFIG_DIR_NAME = ".pi";
export function defineTool(tool) {
  return tool;
}
// No other tool runs in the extension host, so there is no queue to join.
export async function withFileMutationQueue(_path, fn) {
  return fn();
}
