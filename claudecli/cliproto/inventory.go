// Package cliproto is the inventory of the Claude CLI's stream-json
// protocol: every line type, system subtype, control request and API
// stream event the CLI's sources name, and which sources and versions
// name it. The sources are the Agent SDK's types (sdk.d.ts of
// @anthropic-ai/claude-agent-sdk, and the Anthropic SDK's messages.d.ts
// it brings, for the stream events), the CLI binary itself (its protocol
// schemas, see binary.go) and the recordings of the real CLI
// (testdata/cli, made by scripts/record).
//
// go run ./scripts/cli-protocol writes the inventory to
// testdata/protocol/cli-protocol.json; the protocol reference's CLI
// protocol table says, for each name, what claude-rpc makes of it
// (bridge/reference/cliprotocol.go), and its tests fail when the inventory
// names something the table does not.
package cliproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// Kind is what a name names.
type Kind string

const (
	// KindLine: a line's type, on the CLI's stdout or stdin.
	KindLine Kind = "line"
	// KindSystem: the subtype of a system line.
	KindSystem Kind = "system"
	// KindRequest: the subtype of a control_request, in either direction.
	KindRequest Kind = "request"
	// KindEvent: the type of a stream_event line's event (the Messages
	// API's stream events, relayed).
	KindEvent Kind = "event"
	// KindDelta: the type of a content_block_delta event's delta.
	KindDelta Kind = "delta"
	// KindBlock: the type of a content_block_start event's content block.
	KindBlock Kind = "block"
)

// Kinds lists the kinds in the order the inventory and its table have them.
var Kinds = []Kind{KindLine, KindSystem, KindRequest, KindEvent, KindDelta, KindBlock}

// Entry is one name and where it was found.
type Entry struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
	// SDK: the Agent SDK versions whose types name it.
	SDK []string `json:"sdk,omitempty"`
	// CLI: the CLI versions whose binary names it.
	CLI []string `json:"cli,omitempty"`
	// Internal: the CLI versions whose schema of it is described
	// "@internal" (not part of the protocol the SDK documents).
	Internal []string `json:"internal,omitempty"`
	// Recorded: the recordings (testdata/cli scenarios) that show it.
	Recorded []string `json:"recorded,omitempty"`
}

// Key is an entry's kind and name, "system/init".
func (e Entry) Key() string { return Key(e.Kind, e.Name) }

// Key is the key of a name of kind k.
func Key(k Kind, name string) string { return string(k) + "/" + name }

// Inventory is every name the sources have.
type Inventory struct {
	// SDK and CLI are the versions read.
	SDK     []string `json:"sdk"`
	CLI     []string `json:"cli"`
	Entries []Entry  `json:"names"`
}

// Sources are the files an inventory is made from.
type Sources struct {
	// SDK: version → the folder scripts/install-sdk installed it into.
	SDK map[string]string
	// CLI: version → its binary.
	CLI map[string]string
	// Recordings is testdata/cli.
	Recordings string
}

// Build reads the sources into an inventory.
func Build(src Sources) (*Inventory, error) {
	b := builder{entries: map[string]*Entry{}}
	inv := &Inventory{SDK: sortedVersions(src.SDK), CLI: sortedVersions(src.CLI)}
	for _, v := range inv.SDK {
		names, err := ReadSDK(src.SDK[v])
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			e := b.add(n.Kind, n.Name)
			e.SDK = appendOnce(e.SDK, v)
		}
	}
	recorded, err := ReadRecordings(src.Recordings)
	if err != nil {
		return nil, err
	}
	for _, r := range recorded {
		e := b.add(r.Kind, r.Name)
		e.Recorded = appendOnce(e.Recorded, r.Scenario)
	}
	// The binaries last: a weak name counts when the SDK or a recording
	// has it.
	for _, v := range inv.CLI {
		names, err := scanBinaryFile(src.CLI[v])
		if err != nil {
			return nil, fmt.Errorf("the CLI %s: %w", v, err)
		}
		for _, n := range names {
			if n.weak && b.entries[Key(n.kind, n.name)] == nil {
				continue
			}
			e := b.add(n.kind, n.name)
			e.CLI = appendOnce(e.CLI, v)
			if n.internal {
				e.Internal = appendOnce(e.Internal, v)
			}
		}
	}
	for _, e := range b.entries {
		sort.Strings(e.Recorded)
		inv.Entries = append(inv.Entries, *e)
	}
	inv.sort()
	return inv, nil
}

type builder struct{ entries map[string]*Entry }

func (b *builder) add(k Kind, name string) *Entry {
	key := Key(k, name)
	e := b.entries[key]
	if e == nil {
		e = &Entry{Kind: k, Name: name}
		b.entries[key] = e
	}
	return e
}

// appendOnce appends s unless list ends with it (each source is read in
// order, once).
func appendOnce(list []string, s string) []string {
	if len(list) > 0 && list[len(list)-1] == s {
		return list
	}
	return append(list, s)
}

func (inv *Inventory) sort() {
	order := map[Kind]int{}
	for i, k := range Kinds {
		order[k] = i
	}
	sort.Slice(inv.Entries, func(i, j int) bool {
		a, b := inv.Entries[i], inv.Entries[j]
		if a.Kind != b.Kind {
			return order[a.Kind] < order[b.Kind]
		}
		return a.Name < b.Name
	})
}

// sortedVersions returns the keys of m, oldest version first.
func sortedVersions(m map[string]string) []string {
	vs := make([]string, 0, len(m))
	for v := range m {
		vs = append(vs, v)
	}
	slices.SortFunc(vs, compareVersions)
	return vs
}

// compareVersions orders dotted versions by their numbers.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		var x, y int
		fmt.Sscan(as[i], &x)
		fmt.Sscan(bs[i], &y)
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
}

// Encode writes the inventory as JSON, one name a line (its diffs read
// as the names that came and went).
func (inv *Inventory) Encode() []byte {
	var buf bytes.Buffer
	head, _ := json.Marshal(map[string]any{"sdk": inv.SDK, "cli": inv.CLI})
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"names":[`)
	for i, e := range inv.Entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		line, _ := json.Marshal(e)
		buf.WriteString("\n")
		buf.Write(line)
	}
	buf.WriteString("\n]}\n")
	return buf.Bytes()
}

// Decode reads an inventory [Inventory.Encode] wrote.
func Decode(b []byte) (*Inventory, error) {
	var inv Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("the CLI protocol inventory: %w", err)
	}
	return &inv, nil
}

// Load reads the inventory file at path.
func Load(path string) (*Inventory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Name is a name of kind Kind.
type Name struct {
	Kind Kind
	Name string
}

// ReadSDK reads the names the Agent SDK installed in dir (by
// scripts/install-sdk) declares: the line types and system subtypes of
// its StdoutMessage, the subtypes of SDKControlRequestInner, and from
// the Anthropic SDK it depends on the stream events, deltas and content
// blocks of BetaRawMessageStreamEvent.
func ReadSDK(dir string) ([]Name, error) {
	sdk, err := readDTS(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "sdk.d.ts"))
	if err != nil {
		return nil, err
	}
	api, err := readDTS(filepath.Join(dir, "node_modules", "@anthropic-ai", "sdk", "resources", "beta", "messages", "messages.d.ts"))
	if err != nil {
		return nil, err
	}
	var out []Name
	add := func(k Kind, names []string, from string) error {
		if len(names) == 0 {
			return fmt.Errorf("%s: no %s names found in %s: has the SDK's layout changed?", dir, k, from)
		}
		for _, n := range names {
			out = append(out, Name{k, n})
		}
		return nil
	}
	blocks := ""
	for _, body := range api.objects("BetaRawContentBlockStartEvent", map[string]bool{}) {
		blocks = member(body, "content_block")
	}
	for _, q := range []struct {
		d                       *dts
		kind                    Kind
		expr, key, where, value string
	}{
		{sdk, KindLine, "StdoutMessage", "type", "", ""},
		{sdk, KindSystem, "StdoutMessage", "subtype", "type", "system"},
		{sdk, KindRequest, "SDKControlRequestInner", "subtype", "", ""},
		{api, KindEvent, "BetaRawMessageStreamEvent", "type", "", ""},
		{api, KindDelta, "BetaRawContentBlockDelta", "type", "", ""},
		{api, KindBlock, blocks, "type", "", ""},
	} {
		if err := add(q.kind, q.d.values(q.expr, q.key, q.where, q.value), q.expr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readDTS(path string) (*dts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDTS(string(b)), nil
}

// Recorded is a name a recording shows.
type Recorded struct {
	Kind     Kind
	Name     string
	Scenario string // the recording's name: testdata/cli/<Scenario>.jsonl
}

// ReadRecordings reads the names the recordings in dir (testdata/cli)
// show: what the CLI printed (<scenario>.jsonl) and what it was given
// (<scenario>.input.jsonl); the session transcripts beside them
// (.transcript.jsonl) are the CLI's files, not its stream.
func ReadRecordings(dir string) ([]Recorded, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no recordings in %s", dir)
	}
	var out []Recorded
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, ".transcript.jsonl") {
			continue
		}
		scenario := strings.TrimSuffix(strings.TrimSuffix(base, ".jsonl"), ".input")
		names, err := lineNames(f)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, Recorded{n.Kind, n.Name, scenario})
		}
	}
	return out, nil
}

// lineNames returns the names each line of a JSON lines file shows.
func lineNames(path string) ([]Name, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Name
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if !gjson.ValidBytes(sc.Bytes()) {
			return nil, fmt.Errorf("%s:%d: not JSON", path, n)
		}
		out = append(out, LineNames(sc.Bytes())...)
	}
	return out, sc.Err()
}

// LineNames returns the names one line of the CLI's stream shows: its
// type, and its system subtype, control request subtype, or stream event
// (with its delta or content block) type.
func LineNames(line []byte) []Name {
	v := gjson.GetManyBytes(line, "type", "subtype", "request.subtype", "event.type", "event.delta.type", "event.content_block.type")
	typ := v[0].String()
	if typ == "" {
		return nil
	}
	out := []Name{{KindLine, typ}}
	switch typ {
	case "system":
		out = append(out, Name{KindSystem, v[1].String()})
	case "control_request":
		out = append(out, Name{KindRequest, v[2].String()})
	case "stream_event":
		out = append(out, Name{KindEvent, v[3].String()})
		if d := v[4].String(); d != "" {
			out = append(out, Name{KindDelta, d})
		}
		if b := v[5].String(); b != "" {
			out = append(out, Name{KindBlock, b})
		}
	}
	return out
}

// Diff lists the lines of inventory b that a lacks (+) and those of a
// that b lacks (-).
func Diff(a, b []byte) string {
	in := func(lines []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	am, bm := in(al), in(bl)
	var out []string
	for _, l := range al {
		if !bm[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !am[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
