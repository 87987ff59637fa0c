// main.mjs writes transform/testdata/edit-diffs.json: for a few edits, the
// structured patch the Claude CLI gives in an Edit's tool_use_result (the
// npm package diff's structuredPatch, 3 lines of context, as the CLI makes
// it), the original file, and what pi 1.5.2's own edit tool reports as
// details for the same edit (generateDiffString in its
// dist/core/tools/edit-diff.js): the cases transform's edit details are
// tested against.
//
//	PI_EDIT_DIFF=<pi 1.5.2>/dist/core/tools/edit-diff.js \
//	DIFF_MODULE=<diff@8.0.4, as pi 1.5.2 depends on it>/libesm/index.js \
//	node scripts/pi-edit-diffs/main.mjs > transform/testdata/edit-diffs.json
//
// pi's edit-diff.js is loaded from a copy whose imports point at
// DIFF_MODULE, with its two file-system helpers (unused here) stubbed.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const src = fs.readFileSync(process.env.PI_EDIT_DIFF, "utf8")
	.replace(/^import \* as Diff from "diff";$/m, `import * as Diff from ${JSON.stringify(pathToFileURL(process.env.DIFF_MODULE).href)};`)
	.replace(/^import \{ splitBom \} from .*$/m, "const splitBom = (text) => ({ bom: \"\", text });")
	.replace(/^import \{ resolveToCwd \} from .*$/m, "const resolveToCwd = (p) => p;");
const copy = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "pi-edit-diff-")), "edit-diff.mjs");
fs.writeFileSync(copy, src);
const { generateDiffString } = await import(pathToFileURL(copy).href);
const Diff = await import(pathToFileURL(process.env.DIFF_MODULE).href);

const lines = (n) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);
const cases = [
	["middle", lines(12).join("\n") + "\n", (s) => s.replace("line 7\n", "line seven\n")],
	["first line", lines(12).join("\n") + "\n", (s) => s.replace("line 1\n", "line one\n")],
	["last line without newline", lines(9).join("\n"), (s) => s.replace("line 9", "line nine")],
	["insert", lines(10).join("\n") + "\n", (s) => s.replace("line 5\n", "line 5\nnew a\nnew b\n")],
	["delete", lines(10).join("\n") + "\n", (s) => s.replace("line 4\nline 5\n", "")],
	["two hunks", lines(40).join("\n") + "\n", (s) => s.replace("line 3\n", "line three\n").replace("line 30\n", "line thirty\n")],
	["close changes", lines(20).join("\n") + "\n", (s) => s.replace("line 8\n", "line eight\n").replace("line 12\n", "line twelve\n")],
	["wide", lines(120).join("\n") + "\n", (s) => s.replace("line 99\n", "line ninety-nine\n")],
	["short file", "a\nb\n", () => "a\nc\n"],
	["12 lines, line 07", Array.from({ length: 12 }, (_, i) => `line ${String(i + 1).padStart(2, "0")}`).join("\n") + "\n", (s) => s.replace("line 07", "line seven")],
];
const out = cases.map(([name, originalFile, edit]) => {
	const edited = edit(originalFile);
	const patch = Diff.structuredPatch("f", "f", originalFile, edited, undefined, undefined, { context: 3 });
	const structuredPatch = patch.hunks.map(({ oldStart, oldLines, newStart, newLines, lines }) => ({ oldStart, oldLines, newStart, newLines, lines }));
	const { diff, firstChangedLine } = generateDiffString(originalFile, edited);
	return { name, originalFile, structuredPatch, diff, firstChangedLine };
});
process.stdout.write(JSON.stringify(out, null, "\t") + "\n");
