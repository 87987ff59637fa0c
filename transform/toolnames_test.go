package transform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestParseToolNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ToolNames
		err  string
	}{
		{"pi", toolNamesPi, ""},
		{"claude", toolNamesClaude, ""},
		{"", 0, `unknown tool names "": want pi or claude`},
		{"Claude", 0, `unknown tool names "Claude": want pi or claude`},
	} {
		got, err := ParseToolNames(tc.in)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.in, got.String())
	}
}

// toolArgCases are the CLI's tool calls and how pi mode shows them (pi
// 1.5.2's schemas, dist/core/tools).
var toolArgCases = []struct {
	cli, in, pi, out string
}{
	{"Read", `{"file_path":"/a/b.go","offset":10,"limit":20}`, "read", `{"path":"/a/b.go","offset":10,"limit":20}`},
	{"Read", `{"file_path":"/a/doc.pdf","pages":"1-3"}`, "read", `{"path":"/a/doc.pdf","pages":"1-3"}`},
	{"Write", `{"file_path":"/x \"q\".txt","content":"a\nb"}`, "write", `{"path":"/x \"q\".txt","content":"a\nb"}`},
	{"Edit", `{"file_path":"/f","old_string":"a","new_string":"b"}`, "edit", `{"path":"/f","edits":[{"oldText":"a","newText":"b"}]}`},
	{"Edit", `{"file_path":"/f","old_string":"a","new_string":"b","replace_all":true}`, "edit", `{"path":"/f","edits":[{"oldText":"a","newText":"b"}],"replace_all":true}`},
	{"Edit", `{"new_string":"b","file_path":"/f","old_string":"a"}`, "edit", `{"edits":[{"oldText":"a","newText":"b"}],"path":"/f"}`},
	{"Edit", `{"file_path":"/f"}`, "edit", `{"path":"/f"}`},
	{"Bash", `{"command":"ls","timeout":120000,"description":"List"}`, "bash", `{"command":"ls","timeout":120,"description":"List"}`},
	{"Bash", `{"command":"ls","timeout":1500}`, "bash", `{"command":"ls","timeout":1.5}`},
	{"Bash", `{"command":"ls","run_in_background":true}`, "bash", `{"command":"ls","run_in_background":true}`},
	{"Grep", `{"pattern":"fo+","path":"src","glob":"*.go","-i":true,"-C":2,"head_limit":5,"output_mode":"content"}`, "grep",
		`{"pattern":"fo+","path":"src","glob":"*.go","ignoreCase":true,"context":2,"limit":5,"output_mode":"content"}`},
	{"Glob", `{"pattern":"**/*.go","path":"src"}`, "find", `{"pattern":"**/*.go","path":"src"}`},
	{"LS", `{"path":"src"}`, "ls", `{"path":"src"}`},
	{"TodoWrite", `{"todos":[]}`, "TodoWrite", `{"todos":[]}`},
	{"mcp__host__read", `{"file_path":"x"}`, "mcp__host__read", `{"file_path":"x"}`},
	{"Agent", `{"prompt":"go","description":"d"}`, "Agent", `{"prompt":"go","description":"d"}`},
}

func TestToolArgs(t *testing.T) {
	for _, tc := range toolArgCases {
		t.Run(tc.cli, func(t *testing.T) {
			assert.Equal(t, tc.pi, toolNamesPi.Name(tc.cli))
			assert.Equal(t, tc.cli, toolNamesPi.CLIName(tc.pi), "the inverse")
			got := toolNamesPi.Args(tc.cli, json.RawMessage(tc.in))
			assert.JSONEq(t, tc.out, string(got))
			assert.Equal(t, gjson.Parse(tc.out).Get("@this|@keys").Raw, gjson.ParseBytes(got).Get("@this|@keys").Raw, "members in the CLI's order")
			// claude mode: as the CLI printed it.
			assert.Equal(t, tc.cli, toolNamesClaude.Name(tc.cli))
			assert.Equal(t, tc.pi, toolNamesClaude.CLIName(tc.pi))
			assert.Equal(t, tc.in, string(toolNamesClaude.Args(tc.cli, json.RawMessage(tc.in))))
		})
	}
	assert.Equal(t, "not json", string(toolNamesPi.Args("Read", json.RawMessage("not json"))), "not an object: as it is")
	assert.Equal(t, "Read", CLIToolName("read"))
	assert.Equal(t, "", CLIToolName("nope"))
}

// TestToolArgStream streams each case's arguments in pieces of every size
// (the API cuts input_json_delta anywhere, inside keys, escapes and
// numbers): the deltas, concatenated, are the arguments Args gives.
func TestToolArgStream(t *testing.T) {
	for _, tc := range toolArgCases {
		for size := 1; size <= len(tc.in); size++ {
			rn := toolNamesPi.stream(tc.cli, 0)
			if rn == nil {
				continue // streams as it is
			}
			var got string
			var scratch []byte
			for i := 0; i < len(tc.in); i += size {
				got += rn.write(tc.in[i:min(i+size, len(tc.in))], &scratch)
			}
			final := toolNamesPi.Args(tc.cli, json.RawMessage(tc.in))
			got += rn.end(final)
			require.JSONEq(t, tc.out, got, "%s in pieces of %d", tc.cli, size)
			if rn.s.whole() {
				require.Equal(t, string(final), got, "an edit comes whole")
			}
		}
	}
	assert.Nil(t, toolNamesClaude.stream("Read", 0), "claude mode streams the CLI's text")
	assert.Nil(t, toolNamesPi.stream("Glob", 0), "nothing to rename")
}

// TestEditDetails builds pi's details for the CLI's structured patches of
// the edits in testdata/edit-diffs.json and compares them with what pi
// 1.5.2's own edit tool reported for the same edits
// (scripts/pi-edit-diffs).
func TestEditDetails(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "edit-diffs.json"))
	require.NoError(t, err)
	cases := gjson.ParseBytes(b).Array()
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.Get("name").String(), func(t *testing.T) {
			d := toolNamesPi.Details("Edit", c)
			assert.Equal(t, c.Get("diff").String(), gjson.GetBytes(d, "diff").String())
			assert.Equal(t, c.Get("firstChangedLine").Int(), gjson.GetBytes(d, "firstChangedLine").Int())
			assert.Equal(t, c.Raw, string(toolNamesClaude.Details("Edit", c)), "claude mode: the CLI's details")

			// Without the original file: the lines the hunks show, the
			// changes in the same places.
			noFile, err := json.Marshal(map[string]any{"structuredPatch": json.RawMessage(c.Get("structuredPatch").Raw)})
			require.NoError(t, err)
			d = toolNamesPi.Details("Edit", gjson.ParseBytes(noFile))
			assert.Equal(t, c.Get("firstChangedLine").Int(), gjson.GetBytes(d, "firstChangedLine").Int())
			assert.NotEmpty(t, gjson.GetBytes(d, "diff").String())
		})
	}
	noPatch := gjson.Parse(`{"filePath":"/f","structuredPatch":[]}`)
	assert.JSONEq(t, noPatch.Raw, string(toolNamesPi.Details("Edit", noPatch)), "no patch: the CLI's details")
	assert.Nil(t, toolNamesPi.Details("Edit", gjson.Result{}))
}

// BenchmarkToolArgStream renames a Write call's input (10 KB of content)
// as it streams in 20-byte pieces, as input_json_delta brings it: the cost
// pi's names add to each toolcall_delta.
func BenchmarkToolArgStream(b *testing.B) {
	content, err := json.Marshal(string(bytes.Repeat([]byte("some text \"quoted\" and\n"), 450)))
	require.NoError(b, err)
	in := `{"file_path":"/tmp/some/file.txt","content":` + string(content) + `}`
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var scratch []byte
	for b.Loop() {
		r := toolNamesPi.stream("Write", 0)
		for i := 0; i < len(in); i += 20 {
			r.write(in[i:min(i+20, len(in))], &scratch)
		}
	}
}

// TestCLICall: every call pi mode shows comes back as the CLI's call, and
// pi's own shapes the table does not make (several edits, pi's older
// edit, seconds as a fraction) map to the CLI's.
func TestCLICall(t *testing.T) {
	for _, tc := range toolArgCases {
		name, args := cliCall(tc.pi, json.RawMessage(tc.out))
		assert.Equal(t, tc.cli, name, tc.out)
		assert.JSONEq(t, tc.in, string(args), "%s %s", tc.pi, tc.out)
	}
	for _, tc := range []struct{ pi, in, cli, out string }{
		{"edit", `{"path":"/f","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`,
			"MultiEdit", `{"file_path":"/f","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`},
		{"edit", `{"path":"/f","oldText":"a","newText":"b"}`, "Edit", `{"file_path":"/f","old_string":"a","new_string":"b"}`},
		{"edit", `{"path":"/f","edits":[{"oldText":"a"}]}`, "Edit", `{"file_path":"/f","old_string":"a","new_string":""}`},
		{"bash", `{"command":"x","timeout":0.25}`, "Bash", `{"command":"x","timeout":250}`},
		{"read", `"not an object"`, "Read", `"not an object"`},
		{"custom_tool", `{"path":"p"}`, "custom_tool", `{"path":"p"}`},
	} {
		name, args := cliCall(tc.pi, json.RawMessage(tc.in))
		assert.Equal(t, tc.cli, name, tc.in)
		assert.JSONEq(t, tc.out, string(args), tc.in)
	}
}

// TestExtensionToolNames: an extension's tool (claude-rpc's MCP server
// "ext") shows by its own name under pi's names, as pi shows it, and as
// the CLI printed it under the CLI's; the name outlives the buffer it was
// read from.
func TestExtensionToolNames(t *testing.T) {
	buf := []byte("mcp__ext__name_chat")
	name := toolNamesPi.Name(string(buf[:len(buf):len(buf)]))
	copy(buf, "xxxxxxxxxxxxxxxxxxx")
	if name != "name_chat" {
		t.Errorf("pi names: %q, want name_chat", name)
	}
	for _, tc := range []struct {
		n         ToolNames
		cli, want string
	}{
		{toolNamesClaude, "mcp__ext__name_chat", "mcp__ext__name_chat"},
		{toolNamesPi, "mcp__ext__", "mcp__ext__"},
		{toolNamesPi, "mcp__host__echo", "echo"},
		{toolNamesClaude, "mcp__host__echo", "mcp__host__echo"},
		{toolNamesPi, "mcp__host__", "mcp__host__"},
		{toolNamesPi, "mcp__other__echo", "mcp__other__echo"},
		{toolNamesPi, "mcp__host__bash", "mcp__host__bash"}, // pi's name: kept
	} {
		if got := tc.n.Name(tc.cli); got != tc.want {
			t.Errorf("%v Name(%q) = %q, want %q", tc.n, tc.cli, got, tc.want)
		}
	}
}

// TestCLIArgsUndoArgs: what Args shows, CLIArgs takes back to the CLI's
// arguments, for each of pi's tools; an edit of two pairs cannot be.
func TestCLIArgsUndoArgs(t *testing.T) {
	for _, tc := range []struct{ cli, args string }{
		{"Read", `{"file_path":"/a","offset":2,"limit":3}`},
		{"Write", `{"file_path":"/a","content":"x"}`},
		{"Edit", `{"file_path":"/a","old_string":"o","new_string":"n"}`},
		{"Bash", `{"command":"ls","timeout":1500}`},
		{"Grep", `{"pattern":"p","-i":true,"-C":2,"head_limit":5}`},
		{"Glob", `{"pattern":"*.go"}`},
		{"mcp__other__x", `{"a":1}`},
	} {
		shown := toolNamesPi.Args(tc.cli, json.RawMessage(tc.args))
		back, ok := toolNamesPi.CLIArgs(tc.cli, shown)
		require.True(t, ok, tc.cli)
		assert.JSONEq(t, tc.args, string(back), "%s: shown as %s", tc.cli, shown)
	}
	_, ok := toolNamesPi.CLIArgs("Edit", json.RawMessage(`{"path":"/a","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`))
	assert.False(t, ok)
	_, ok = toolNamesPi.CLIArgs("Read", json.RawMessage(`[1]`))
	assert.False(t, ok)
}
