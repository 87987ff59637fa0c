package cliproto

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A declaration file in the shapes sdk.d.ts and messages.d.ts use.
const testDTS = `
import type { X } from 'x';
/** A comment with { type: 'not_a_member' } and a quote ' in it. */
export declare type StdoutMessage = coreTypes.SDKMessage | SDKControlRequest | SDKKeepAlive;
declare namespace coreTypes { export { SDKMessage } }
export declare type SDKMessage = SDKAssistant | SDKSystemInit | SDKStatus | SDKResult;
declare type SDKAssistant = {
    type: 'assistant';
    message: { type: 'message'; content: string };
    // type: 'commented_out';
};
declare type SDKSystemInit = {
    type: 'system';
    subtype: 'init';
    url?: 'https://example.com/a|b';
};
declare type SDKStatus = SDKBase & {
    subtype: 'status';
    run: (x: number) => void;
};
declare type SDKBase = { type: 'system'; session_id: string };
declare type SDKResult = {
    type: 'result';
    subtype: ResultKind;
};
declare type ResultKind = 'success' | "error_max_turns";
declare type SDKControlRequest = { type: 'control_request'; request: Inner };
declare type Inner = { subtype: 'interrupt' } | {
    subtype: 'can_use_tool';
    input: Record<string, unknown>;
};
declare type SDKKeepAlive = {
    type: 'keep_alive';
};
export interface Delta extends Base<string> {
    text: string;
}
export interface Base<T> {
    type: 'text_delta';
}
`

func TestDTSValues(t *testing.T) {
	d := parseDTS(testDTS)
	for _, c := range []struct {
		expr, key, where, want string
		values                 []string
	}{
		{"StdoutMessage", "type", "", "", []string{"assistant", "system", "result", "control_request", "keep_alive"}},
		{"StdoutMessage", "subtype", "type", "system", []string{"init", "status"}},
		{"StdoutMessage", "subtype", "type", "result", []string{"success", "error_max_turns"}},
		{"Inner", "subtype", "", "", []string{"interrupt", "can_use_tool"}},
		{"Delta", "type", "", "", []string{"text_delta"}},
		{"Missing", "type", "", "", nil},
	} {
		assert.Equal(t, c.values, d.values(c.expr, c.key, c.where, c.want), "%s.%s", c.expr, c.key)
	}
}

// The minified shapes of the CLI's schemas and dispatch (2.1.328's, the
// functions renamed as its minifier does).
const testBinary = `
\x00garbage\xff{"json":1}
mo=p(()=>c({type:E("assistant"),message:ZX(),parent_tool_use_id:n().nullable(),uuid:g()})),
sne=p(()=>c({type:E("system"),subtype:E("away_summary"),content:n(),uuid:g(),session_id:n()}).describe("@internal Summary of what happened."),
V6=p(()=>c({type:E("system"),subtype:E("session_state_changed"),state:U(["idle","running"]),uuid:g(),session_id:n()}).describe("Mirrors it: 'idle' {")),
E8=p(()=>c({type:E("command_lifecycle"),command_uuid:n().regex(/^["(a-f0-9-]{36}\/$/).describe("a \"}\" and ` + "`${x}`" + `"),state:n(),session_id:n()}).describe('@internal lifecycle')),
uz=p(()=>c({type:E("keep_alive")}).describe("Liveness heartbeat.")),
sk=p(()=>c({type:E("skipped")})),
tb=p(()=>c({type:E("text"),text:n(),citations:T(ae()).optional()})),
Ri=p(()=>c({subtype:E("get_session_cost")}).describe("Requests the cost.")),
ok=p(()=>c({subtype:E("success"),request_id:n(),response:ae().optional()})),
if(K.request.subtype==="end_session"){t("end")}
`

func TestScanBinary(t *testing.T) {
	got := scanBinary([]byte(testBinary), len(testBinary))
	want := []binaryName{
		{KindLine, "assistant", false, false},
		{KindLine, "system", false, false}, {KindSystem, "away_summary", true, false},
		{KindLine, "system", false, false}, {KindSystem, "session_state_changed", false, false},
		{KindLine, "command_lifecycle", true, false},
		{KindLine, "keep_alive", false, true},
		{KindLine, "skipped", false, true},
		{KindRequest, "get_session_cost", false, false},
		{KindRequest, "end_session", false, false},
	}
	assert.Equal(t, want, got)
}

func TestLineNames(t *testing.T) {
	for _, c := range []struct {
		line string
		want []Name
	}{
		{`{"type":"system","subtype":"init"}`, []Name{{KindLine, "system"}, {KindSystem, "init"}}},
		{`{"type":"control_request","request_id":"1","request":{"subtype":"set_model"}}`, []Name{{KindLine, "control_request"}, {KindRequest, "set_model"}}},
		{`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta"}}}`, []Name{{KindLine, "stream_event"}, {KindEvent, "content_block_delta"}, {KindDelta, "text_delta"}}},
		{`{"type":"stream_event","event":{"type":"content_block_start","content_block":{"type":"tool_use"}}}`, []Name{{KindLine, "stream_event"}, {KindEvent, "content_block_start"}, {KindBlock, "tool_use"}}},
		{`{"type":"result","subtype":"success"}`, []Name{{KindLine, "result"}}},
		{`{"no":"type"}`, nil},
	} {
		assert.Equal(t, c.want, LineNames([]byte(c.line)), c.line)
	}
}

// TestBuild makes an inventory from sources laid out as the install
// scripts lay them out, and reads it back.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	sdk := filepath.Join(dir, "claude-agent-sdk-0.3.2")
	write(filepath.Join(sdk, "node_modules/@anthropic-ai/claude-agent-sdk/sdk.d.ts"), testDTS+`declare type SDKControlRequestInner = Inner;`)
	write(filepath.Join(sdk, "node_modules/@anthropic-ai/sdk/resources/beta/messages/messages.d.ts"), `
export type BetaRawMessageStreamEvent = Start | BetaRawContentBlockStartEvent;
export interface Start { type: 'message_start'; }
export interface BetaRawContentBlockStartEvent { content_block: A | B; type: 'content_block_start'; }
export interface A { type: 'text'; }
export interface B { type: 'tool_use'; }
export type BetaRawContentBlockDelta = Delta;
`+testDTS)
	bin := filepath.Join(dir, "claude-code-2.1.2/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
	write(bin, testBinary+string(make([]byte, maxSchema+8192))+testBinary)
	rec := filepath.Join(dir, "cli")
	write(filepath.Join(rec, "text.jsonl"), `{"type":"system","subtype":"init"}`+"\n"+`{"type":"assistant"}`+"\n")
	write(filepath.Join(rec, "text.input.jsonl"), `{"type":"control_request","request":{"subtype":"interrupt"}}`+"\n")
	write(filepath.Join(rec, "text.transcript.jsonl"), `{"type":"last-prompt"}`+"\n")

	src, missing := Locate(dir, dir, []string{"2.1.2", "2.1.3"})
	assert.Equal(t, []string{
		"the Claude CLI 2.1.3 (CLAUDE_CODE_VERSION=2.1.3 scripts/install-cli)",
		"the Agent SDK 0.3.3 (CLAUDE_AGENT_SDK_VERSION=0.3.3 scripts/install-sdk)",
	}, missing)
	src.Recordings = rec
	inv, err := Build(src)
	require.NoError(t, err)
	find := func(k Kind, name string) *Entry {
		for i := range inv.Entries {
			if inv.Entries[i].Kind == k && inv.Entries[i].Name == name {
				return &inv.Entries[i]
			}
		}
		return nil
	}
	assert.Equal(t, &Entry{Kind: KindLine, Name: "assistant", SDK: []string{"0.3.2"}, CLI: []string{"2.1.2"}, Recorded: []string{"text"}}, find(KindLine, "assistant"))
	assert.Equal(t, &Entry{Kind: KindLine, Name: "keep_alive", SDK: []string{"0.3.2"}, CLI: []string{"2.1.2"}}, find(KindLine, "keep_alive"), "weak, with the SDK")
	assert.Nil(t, find(KindLine, "skipped"), "weak, and no other source has it")
	assert.Nil(t, find(KindLine, "text"), "a content block, not a line")
	assert.Nil(t, find(KindLine, "last-prompt"), "transcripts are not read")
	assert.Equal(t, &Entry{Kind: KindSystem, Name: "away_summary", CLI: []string{"2.1.2"}, Internal: []string{"2.1.2"}}, find(KindSystem, "away_summary"))
	assert.Equal(t, &Entry{Kind: KindRequest, Name: "interrupt", SDK: []string{"0.3.2"}, Recorded: []string{"text"}}, find(KindRequest, "interrupt"))
	assert.NotNil(t, find(KindBlock, "tool_use"))
	assert.NotNil(t, find(KindEvent, "content_block_start"))
	assert.NotNil(t, find(KindDelta, "text_delta"))
	assert.True(t, slices.IsSortedFunc(inv.Entries, func(a, b Entry) int {
		return slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind)
	}))

	// Read in windows smaller than the binary, which put the schemas at
	// their edges.
	for _, w := range []int{1000, 300 << 10} {
		binaryWindow = w
		small, err := Build(src)
		require.NoError(t, err)
		assert.Equal(t, inv, small, "window %d", w)
	}
	binaryWindow = 32 << 20

	back, err := Decode(inv.Encode())
	require.NoError(t, err)
	assert.Equal(t, inv, back)
	assert.Equal(t, "- a\n+ c", Diff([]byte("a\nb"), []byte("b\nc")))

	_, err = Build(Sources{Recordings: filepath.Join(dir, "none")})
	assert.ErrorContains(t, err, "no recordings")
	write(filepath.Join(rec, "bad.jsonl"), "not json\n")
	_, err = Build(Sources{Recordings: rec})
	assert.ErrorContains(t, err, "bad.jsonl:1: not JSON")
}
