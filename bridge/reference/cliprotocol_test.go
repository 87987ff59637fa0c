package reference

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/cliproto"
)

const (
	cliProtocolDoc = "cli-protocol.md"
	// cliTable is the file that holds cliRows, from the module's root.
	cliTable = "bridge/reference/cliprotocol.go"
	// cliRegenerate is the command that rewrites cliProtocolDoc.
	cliRegenerate = "go test ./bridge/reference -run TestCLIProtocol -update"
)

func loadCLIInventory(t *testing.T) *cliproto.Inventory {
	t.Helper()
	inv, err := cliproto.Load(filepath.Join(moduleRoot, cliproto.InventoryFile))
	require.NoError(t, err, "run: go run ./scripts/cli-protocol")
	require.NotEmpty(t, inv.Entries)
	return inv
}

// cliRowsByKey is the table by kind/name.
func cliRowsByKey() map[string]cliRow {
	m := map[string]cliRow{}
	for _, r := range cliRows {
		m[cliproto.Key(r.kind, r.name)] = r
	}
	return m
}

// TestCLIProtocolTable: every name in the inventory has its row in
// cliRows, and every row names something the inventory has, once, with
// what its status needs (a mapped row its pi side and the code that does
// it, which exists; a planned one its pi side; one left out its reason).
func TestCLIProtocolTable(t *testing.T) {
	inv := loadCLIInventory(t)
	rows := cliRowsByKey()
	var missing []string
	have := map[string]bool{}
	for _, e := range inv.Entries {
		have[e.Key()] = true
		if _, ok := rows[e.Key()]; !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", e.Key(), sourcesOf(e, inv)))
		}
	}
	if len(missing) > 0 {
		t.Errorf("the CLI protocol inventory names %d things %s has no row for: say what claude-rpc makes of each (mapped, planned, left out and why):\n  %s",
			len(missing), cliTable, strings.Join(missing, "\n  "))
	}
	seen := map[string]bool{}
	for _, r := range cliRows {
		key := cliproto.Key(r.kind, r.name)
		if seen[key] {
			t.Errorf("%s: two rows", key)
		}
		seen[key] = true
		if !have[key] {
			t.Errorf("%s: a row for a name the inventory does not have (no source names it): remove the row, or regenerate the inventory (go run ./scripts/cli-protocol)", key)
		}
		if r.pi == "" {
			t.Errorf("%s: %s, but the row says nothing of the pi side (or why it is left out)", key, r.status)
		}
		switch r.status {
		case mapped:
			if r.where == "" {
				t.Errorf("%s: mapped, but the row does not say where in the code", key)
			}
			for _, problem := range checkWhere(r.where) {
				t.Errorf("%s: %s", key, problem)
			}
		case planned, leftOut:
			if r.where != "" {
				t.Errorf("%s: %s, but the row names code (%s)", key, r.status, r.where)
			}
		default:
			t.Errorf("%s: unknown status %q", key, r.status)
		}
		if r.kind == cliproto.KindRequest && r.dir == "" {
			t.Errorf("%s: a control request without its direction", key)
		}
	}
}

// TestCLIProtocolRecordings: every line type, system subtype, control
// request and stream event the real CLI printed or was given in a
// recording (testdata/cli, scripts/record) has its row, whatever the
// inventory says.
func TestCLIProtocolRecordings(t *testing.T) {
	recorded, err := cliproto.ReadRecordings(filepath.Join(moduleRoot, cliproto.RecordingsDir))
	require.NoError(t, err)
	rows := cliRowsByKey()
	kinds := map[cliproto.Kind]bool{}
	missing := map[string][]string{}
	for _, r := range recorded {
		kinds[r.Kind] = true
		key := cliproto.Key(r.Kind, r.Name)
		if _, ok := rows[key]; !ok && !slices.Contains(missing[key], r.Scenario) {
			missing[key] = append(missing[key], r.Scenario)
		}
	}
	for key, scenarios := range missing {
		t.Errorf("%s, in the recordings %s, has no row in %s", key, strings.Join(scenarios, ", "), cliTable)
	}
	// The recordings show every kind but the requests the CLI sends.
	for _, k := range []cliproto.Kind{cliproto.KindLine, cliproto.KindSystem, cliproto.KindRequest, cliproto.KindEvent, cliproto.KindDelta, cliproto.KindBlock} {
		require.True(t, kinds[k], "no recording shows a name of kind %s: is testdata/cli read right?", k)
	}
}

// TestCLIProtocol keeps testdata/protocol/cli-protocol.md, the inventory
// and the table as one page, in step with both (-update rewrites it).
func TestCLIProtocol(t *testing.T) {
	checkGenerated(t, filepath.Join(referenceDir, cliProtocolDoc), cliProtocolPage(loadCLIInventory(t), cliRows),
		"the inventory and "+cliTable, cliRegenerate)
}

// TestCLIProtocolPage checks the page's making on a small inventory: each
// kind's section, a row's status, direction and sources, a shared reason
// by its name.
func TestCLIProtocolPage(t *testing.T) {
	inv := &cliproto.Inventory{SDK: []string{"0.3.1", "0.3.2"}, CLI: []string{"2.1.1", "2.1.2"}, Entries: []cliproto.Entry{
		{Kind: cliproto.KindLine, Name: "assistant", SDK: []string{"0.3.1", "0.3.2"}, CLI: []string{"2.1.1", "2.1.2"}, Recorded: []string{"a", "b", "c", "d"}},
		{Kind: cliproto.KindRequest, Name: "ui_close", CLI: []string{"2.1.2"}, Internal: []string{"2.1.2"}},
	}}
	rows := []cliRow{
		{cpLine, "assistant", mapped, "", "the message", "transform/translator.go"},
		{cpRequest, "ui_close", leftOut, unchecked, whyRemoteUI, ""},
	}
	page := string(cliProtocolPage(inv, rows))
	for _, want := range []string{
		"| `assistant` | mapped | the message | transform/translator.go | SDK, CLI, recorded (a, b, c, 1 more) |",
		"| `ui_close` | ? | left out | [remote UI](#why-remote-ui) |  | CLI 2.1.2 (@internal) |",
		"## Line types", "## Control requests",
	} {
		require.Contains(t, page, want)
	}
}

// whyNames are the shared reasons, named on the page once.
var whyNames = []struct{ anchor, name, text string }{
	{"why-internal", "internal", whyInternal},
	{"why-undeclared", "undeclared", whyUndeclared},
	{"why-remote-ui", "remote UI", whyRemoteUI},
	{"why-cli-config", "CLI config", whyCLIConfig},
	{"why-server-block", "server block", whyServerBlock},
	{"why-notice", "notice", whyNoticePlanned},
}

// kindTitles are the page's sections.
var kindTitles = map[cliproto.Kind]string{
	cliproto.KindLine:    "Line types",
	cliproto.KindSystem:  "system subtypes",
	cliproto.KindRequest: "Control requests",
	cliproto.KindEvent:   "Stream events (stream_event's event.type)",
	cliproto.KindDelta:   "Deltas (content_block_delta's delta.type)",
	cliproto.KindBlock:   "Content blocks (content_block_start's content_block.type)",
}

// cliProtocolPage is testdata/protocol/cli-protocol.md: the inventory's
// names by kind, each with its row.
func cliProtocolPage(inv *cliproto.Inventory, rows []cliRow) []byte {
	byKey := map[string]cliRow{}
	for _, r := range rows {
		byKey[cliproto.Key(r.kind, r.name)] = r
	}
	var b strings.Builder
	b.WriteString("# The Claude CLI's stream-json protocol in claude-rpc\n\n")
	b.WriteString("Generated from the inventory [cli-protocol.json](cli-protocol.json) (`go run ./scripts/cli-protocol`) and the table in `" + cliTable + "` (`" + cliRegenerate + "`); do not edit.\n\n")
	fmt.Fprintf(&b, "Every name the Claude CLI's stream-json protocol has, as its sources name it: the Agent SDK's types (`sdk.d.ts` of @anthropic-ai/claude-agent-sdk %s, and the Anthropic SDK's `messages.d.ts` it brings, for the stream events), the CLI binaries (%s: their protocol schemas and their dispatch on a control request's subtype) and the recordings of the real CLI (`testdata/cli`, made by `scripts/record`). For each: what claude-rpc makes of it — **mapped** (to which pi frames or commands, and the code that does it), **planned (issue 34)**, or **left out** on purpose, and why. The tests fail when a source names something the table does not (TestCLIProtocolTable, TestCLIProtocolRecordings, TestCLIProtocolSources).\n\n",
		strings.Join(inv.SDK, ", "), strings.Join(inv.CLI, ", "))
	b.WriteString("Sources: *SDK* and *CLI* without versions mean every version read; *@internal*: the CLI's schema describes it so (not part of the protocol the SDK documents); *recorded*: the recordings that show it.\n\n")
	b.WriteString("| kind | mapped | planned | left out |\n| --- | --- | --- | --- |\n")
	for _, k := range cliproto.Kinds {
		n := map[cliStatus]int{}
		for _, e := range inv.Entries {
			if e.Kind == k {
				n[byKey[e.Key()].status]++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", kindTitles[k], n[mapped], n[planned], n[leftOut])
	}
	b.WriteString("\nReasons shared by many rows:\n\n")
	for _, w := range whyNames {
		fmt.Fprintf(&b, "- <a id=\"%s\"></a>**%s**: %s.\n", w.anchor, w.name, w.text)
	}
	for _, k := range cliproto.Kinds {
		fmt.Fprintf(&b, "\n## %s\n\n", kindTitles[k])
		if k == cliproto.KindRequest {
			b.WriteString("| name | sent | status | pi | where | sources |\n| --- | --- | --- | --- | --- | --- |\n")
		} else {
			b.WriteString("| name | status | pi | where | sources |\n| --- | --- | --- | --- | --- |\n")
		}
		for _, e := range inv.Entries {
			if e.Kind != k {
				continue
			}
			r, ok := byKey[e.Key()]
			status, pi := string(r.status), cell(r.pi)
			if !ok {
				status, pi = "**no row**", ""
			}
			fmt.Fprintf(&b, "| `%s` |", e.Name)
			if k == cliproto.KindRequest {
				fmt.Fprintf(&b, " %s |", r.dir)
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s |\n", status, pi, r.where, sourcesOf(e, inv))
		}
	}
	return []byte(b.String())
}

// cell is a row's pi text for the page: a shared reason by its name
// (linked), what a row adds to one after it.
func cell(text string) string {
	for _, w := range whyNames {
		if rest, ok := strings.CutPrefix(text, w.text); ok {
			return fmt.Sprintf("[%s](#%s)%s", w.name, w.anchor, strings.ReplaceAll(rest, "|", "\\|"))
		}
	}
	return strings.ReplaceAll(text, "|", "\\|")
}

// sourcesOf says which sources have e: SDK and CLI with their versions
// when not all of those read, @internal, the recordings.
func sourcesOf(e cliproto.Entry, inv *cliproto.Inventory) string {
	var parts []string
	versions := func(name string, have, all []string) {
		switch {
		case len(have) == 0:
		case slices.Equal(have, all):
			parts = append(parts, name)
		default:
			parts = append(parts, name+" "+strings.Join(have, ", "))
		}
	}
	versions("SDK", e.SDK, inv.SDK)
	versions("CLI", e.CLI, inv.CLI)
	if len(e.Internal) > 0 {
		parts[len(parts)-1] += " (@internal)"
	}
	if n := len(e.Recorded); n > 0 {
		shown := e.Recorded[:min(n, 3)]
		more := ""
		if n > 3 {
			more = fmt.Sprintf(", %d more", n-3)
		}
		parts = append(parts, "recorded ("+strings.Join(shown, ", ")+more+")")
	}
	return strings.Join(parts, ", ")
}

// whereFile is one file a row's where names, with the identifiers in
// parentheses after it: "transform/translator.go (Translator.user, endRetry)".
var whereFile = regexp.MustCompile(`([\w/.-]+\.go)(?: \(([^)]*)\))?`)

// checkWhere checks that each file a row's where names is a file of the
// module and has the identifiers named with it.
func checkWhere(where string) []string {
	var problems []string
	files := whereFile.FindAllStringSubmatch(where, -1)
	if len(files) == 0 {
		return []string{fmt.Sprintf("where (%s) names no Go file", where)}
	}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(moduleRoot, f[1]))
		if err != nil {
			problems = append(problems, fmt.Sprintf("where names %s, which is not a file of the module", f[1]))
			continue
		}
		for _, id := range strings.Split(f[2], ", ") {
			if id == "" {
				continue
			}
			name := id[strings.LastIndexByte(id, '.')+1:]
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(src) {
				problems = append(problems, fmt.Sprintf("where names %s in %s, which has no %s", id, f[1], name))
			}
		}
	}
	return problems
}
