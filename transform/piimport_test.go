package transform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

var importAt = PiImport{SessionID: "11111111-2222-4333-8444-555555555555", Cwd: "/work/p", Version: "2.1.328",
	Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}

// piBranch reads a branch of pi entries, one a line, from testdata/piimport.
func piBranch(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "piimport", name+".pi.jsonl"))
	require.NoError(t, err)
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

// TestImportPiGolden: each pi branch in testdata/piimport becomes the
// transcript lines and report in its golden file (go test -update).
func TestImportPiGolden(t *testing.T) {
	for _, name := range []string{"everything", "compacted"} {
		t.Run(name, func(t *testing.T) {
			lines, rep := ImportPi(piBranch(t, name), importAt)
			var got bytes.Buffer
			for _, l := range lines {
				require.True(t, gjson.ValidBytes(l), "%s", l)
				got.Write(l)
				got.WriteByte('\n')
			}
			r, err := json.Marshal(map[string]any{"report": rep})
			require.NoError(t, err)
			got.Write(r)
			got.WriteByte('\n')
			golden := filepath.Join("testdata", "piimport", name+".golden.jsonl")
			if *update {
				require.NoError(t, os.WriteFile(golden, got.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "go test ./transform -run TestImportPiGolden -update")
			assert.Equal(t, string(want), got.String())
		})
	}
}

// TestImportPi checks what the golden file shows, one rule at a time.
func TestImportPi(t *testing.T) {
	lines, rep := ImportPi(piBranch(t, "everything"), importAt)
	vs := make([]gjson.Result, len(lines))
	for i, l := range lines {
		vs[i] = gjson.ParseBytes(l)
	}
	require.NotEmpty(t, vs)

	t.Run("a chain the CLI resumes", func(t *testing.T) {
		seen := map[string]bool{}
		for i, v := range vs {
			for _, k := range []string{"type", "uuid", "timestamp", "message"} {
				assert.True(t, v.Get(k).Exists(), "line %d lacks %s", i, k)
			}
			assert.Equal(t, importAt.SessionID, v.Get("sessionId").String())
			assert.Equal(t, importAt.Cwd, v.Get("cwd").String())
			assert.Equal(t, "2.1.328", v.Get("version").String())
			assert.False(t, seen[v.Get("uuid").String()], "uuids are unique")
			seen[v.Get("uuid").String()] = true
			if i == 0 {
				assert.Equal(t, gjson.Null, v.Get("parentUuid").Type, "the first line's parentUuid is null")
			} else {
				assert.Equal(t, vs[i-1].Get("uuid").String(), v.Get("parentUuid").String())
			}
			_, err := time.Parse(time.RFC3339Nano, v.Get("timestamp").String())
			assert.NoError(t, err)
		}
		assert.Equal(t, "2026-05-01T10:00:18.000Z", vs[len(vs)-1].Get("timestamp").String(), "a bad ISO time falls back to the message's")
	})

	// text joins a line's text blocks (or its string content).
	text := func(v gjson.Result) string {
		c := v.Get("message.content")
		if c.Type == gjson.String {
			return c.String()
		}
		var parts []string
		for _, b := range c.Array() {
			parts = append(parts, b.Get("text").String())
		}
		return strings.Join(parts, "|")
	}
	var texts []string
	for _, v := range vs {
		texts = append(texts, v.Get("type").String()+":"+text(v))
	}
	t.Run("pi's context, as pi sends it", func(t *testing.T) {
		assert.Equal(t, "user:hello <there> & more", texts[0], "pi's system prompt and settings are not messages")
		assert.Contains(t, texts, "user:Ran `git status`\n```\nclean\n```\n\nCommand exited with code 1", "a bash command the user ran")
		assert.Contains(t, texts, "user:extension context")
		assert.Contains(t, texts, "assistant:Done (edited).", "a context edit's replacement")
		assert.NotContains(t, strings.Join(texts, "\n"), "hidden by an edit", "a context edit's omission")
		assert.NotContains(t, strings.Join(texts, "\n"), "secret", "a command kept out of the context")
		assert.NotContains(t, strings.Join(texts, "\n"), "Partial", "an aborted reply")
		assert.NotContains(t, strings.Join(texts, "\n"), "an extension's own role")
		assert.Equal(t, "user:last words", texts[len(texts)-1])
	})

	t.Run("tools under the CLI's names, each call with its result", func(t *testing.T) {
		var a2 gjson.Result
		for _, v := range vs {
			if v.Get("message.content.#(type==\"tool_use\")").Exists() && a2.Raw == "" {
				a2 = v
			}
		}
		calls := a2.Get(`message.content.#(type=="tool_use")#`).Array()
		require.Len(t, calls, 4)
		assert.Equal(t, "Read", calls[0].Get("name").String())
		assert.JSONEq(t, `{"file_path":"a.txt","offset":2}`, calls[0].Get("input").Raw)
		assert.Equal(t, "Bash", calls[1].Get("name").String())
		assert.JSONEq(t, `{"command":"ls","timeout":2000}`, calls[1].Get("input").Raw)
		assert.Equal(t, "Edit", calls[2].Get("name").String())
		assert.JSONEq(t, `{"file_path":"a.txt","old_string":"x","new_string":"y"}`, calls[2].Get("input").Raw)
		assert.Equal(t, "my_tool", calls[3].Get("name").String(), "a tool of pi's the CLI lacks keeps its name")
		assert.Equal(t, "call_a_fc_b", calls[3].Get("id").String(), "an id the API takes")
		assert.Equal(t, "tool_use", a2.Get("message.stop_reason").String())
		assert.Empty(t, a2.Get(`message.content.#(type=="thinking")#`).Array(), "unsigned thinking is left out")
		for _, c := range calls {
			n := 0
			for _, v := range vs {
				if v.Get(`message.content.0.tool_use_id`).String() == c.Get("id").String() {
					n++
					assert.Equal(t, a2.Get("uuid").String(), v.Get("sourceToolAssistantUUID").String())
				}
			}
			assert.Equal(t, 1, n, "one result for %s", c.Get("id"))
		}
	})

	t.Run("thinking kept with its Anthropic signature", func(t *testing.T) {
		assert.Equal(t, `{"type":"thinking","thinking":"The user greets.","signature":"c2lnLTE="}`, vs[1].Get("message.content.0").Raw)
		assert.Equal(t, "claude-sonnet-4-5", vs[1].Get("message.model").String(), "the CLI sends thinking to the model that signed it")
		assert.Equal(t, int64(100), vs[1].Get("message.usage.input_tokens").Int())
		assert.Contains(t, string(lines[len(lines)-2]), `{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}`)
	})

	t.Run("images", func(t *testing.T) {
		assert.Equal(t, `[{"type":"text","text":"look at this"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]`,
			vs[2].Get("message.content").Raw, "the image kept, blank text left out")
	})

	t.Run("calls without results, results without calls", func(t *testing.T) {
		var synthetic []gjson.Result
		for _, v := range vs {
			if v.Get("message.content.0.content.0.text").String() == noResult {
				synthetic = append(synthetic, v)
			}
		}
		require.Len(t, synthetic, 2, "find and ls (one pi id twice) before the next prompt")
		assert.True(t, synthetic[0].Get("message.content.0.is_error").Bool())
		assert.NotEqual(t, synthetic[0].Get("message.content.0.tool_use_id").String(), synthetic[1].Get("message.content.0.tool_use_id").String())
		assert.NotContains(t, strings.Join(texts, "\n"), "late", "the result after the prompt has no call before it")
	})

	t.Run("what is left out is named", func(t *testing.T) {
		assert.Equal(t, []string{
			"1 assistant messages that ended in an error or were aborted (pi leaves them out of the model's context too)",
			`1 messages of role "reminder" (no kind of the CLI's)`,
			"2 thinking blocks without an Anthropic signature (the API takes thinking back only with its signature)",
			"2 tool calls without a result (each given an error result)",
			"1 tool results whose call is not in the message before them",
		}, rep.Dropped)
		assert.Equal(t, []string{
			"1 bash commands run by the user and kept out of the context",
			"1 custom entries", "1 label entries", "1 model_change entries",
			"1 pi system prompts (the CLI sends its own)", "1 session_info entries", "1 thinking_level_change entries",
		}, rep.Ignored)
		assert.Equal(t, len(lines), rep.Lines)
	})

	t.Run("pure", func(t *testing.T) {
		again, _ := ImportPi(piBranch(t, "everything"), importAt)
		assert.Equal(t, lines, again)
		other := importAt
		other.SessionID = "99999999-2222-4333-8444-555555555555"
		third, _ := ImportPi(piBranch(t, "everything"), other)
		assert.NotEqual(t, gjson.GetBytes(lines[0], "uuid").String(), gjson.GetBytes(third[0], "uuid").String(), "a new session, new uuids")
	})
}

// TestImportPiCompacted: after compactions, the newest one's summary and
// the entries it kept (without pi's system messages) and all after it.
func TestImportPiCompacted(t *testing.T) {
	lines, rep := ImportPi(piBranch(t, "compacted"), importAt)
	var got []string
	for _, l := range lines {
		v := gjson.ParseBytes(l)
		c := v.Get("message.content")
		s := c.String()
		if c.IsArray() {
			s = c.Get("0.text").String()
		}
		got = append(got, v.Get("type").String()+":"+v.Get("piEntryId").String()+":"+s)
	}
	assert.Equal(t, []string{
		"user:k2:" + compactionPrefix + "The user asked questions." + compactionSuffix,
		"user:u2:kept question",
		"assistant:a2:kept answer",
		"user:g1:" + branchPrefix + "Tried approach A." + branchSuffix,
		"user:u3:new question",
		"assistant:a3:new answer",
	}, got)
	assert.True(t, gjson.GetBytes(lines[0], "isCompactSummary").Bool())
	assert.False(t, gjson.GetBytes(lines[1], "isCompactSummary").Exists())
	assert.Empty(t, rep.Dropped)
	assert.Empty(t, rep.Ignored, "the system message before the compaction is in its checkpoint")
}

func TestImportPiEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []string
		want    int // lines
		dropped []string
	}{
		{"nothing", nil, 0, nil},
		{"not json", []string{`{`, `[1]`}, 0, nil},
		{"blank prompt", []string{`{"type":"message","id":"a","message":{"role":"user","content":"  "}}`}, 0, nil},
		{"null content", []string{`{"type":"message","id":"a","message":{"role":"assistant","content":null,"stopReason":"stop"}}`}, 0, nil},
		{"a call at the leaf", []string{
			`{"type":"message","id":"a","message":{"role":"user","content":"x"}}`,
			`{"type":"message","id":"b","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":"oops"}],"stopReason":"toolUse"}}`,
		}, 3, []string{"1 tool calls without a result (each given an error result)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in [][]byte
			for _, e := range tc.entries {
				in = append(in, []byte(e))
			}
			lines, rep := ImportPi(in, importAt)
			assert.Len(t, lines, tc.want)
			assert.Equal(t, tc.dropped, nilIfEmpty(rep.Dropped))
			for _, l := range lines {
				if u := gjson.GetBytes(l, `message.content.#(type=="tool_use")`); u.Exists() {
					assert.Equal(t, "{}", u.Get("input").Raw, "arguments that are no object")
				}
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestImportCallIDs(t *testing.T) {
	im := importer{ids: map[string]bool{}}
	long := strings.Repeat("x", 70)
	assert.Equal(t, "call_1_fc_2", im.callID("call_1|fc_2"))
	assert.Equal(t, "call_1_fc_2_2", im.callID("call_1.fc_2"), "two ids alike once cleaned stay apart")
	assert.Equal(t, long[:64], im.callID(long))
	assert.Equal(t, long[:62]+"_2", im.callID(long))
	assert.Equal(t, "toolu_pi", im.callID(""))
}

// FuzzImportPi: whatever the entries, the lines are a chain the CLI
// resumes and the API takes: each a JSON object with a type, uuid,
// timestamp and message, the child of the one before; every tool call,
// with an id the API takes, answered by exactly one result right after
// it; no blank text, no thinking without a signature.
func FuzzImportPi(f *testing.F) {
	for _, name := range []string{"everything", "compacted"} {
		entries := piBranch(f, name)
		for i := 0; i+1 < len(entries); i++ {
			f.Add(entries[i], entries[i+1])
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		lines, rep := ImportPi([][]byte{a, b, a}, importAt)
		require.Equal(t, len(lines), rep.Lines)
		parent := ""
		open := map[string]bool{}
		for i, l := range lines {
			v := gjson.ParseBytes(l)
			require.True(t, gjson.ValidBytes(l) && v.IsObject(), "%s", l)
			typ := v.Get("type").String()
			require.Contains(t, []string{"user", "assistant"}, typ)
			require.NotEmpty(t, v.Get("uuid").String())
			require.NotEmpty(t, v.Get("timestamp").String())
			if i == 0 {
				require.Equal(t, gjson.Null, v.Get("parentUuid").Type)
			} else {
				require.Equal(t, parent, v.Get("parentUuid").String())
			}
			parent = v.Get("uuid").String()
			content := v.Get("message.content")
			isResult := content.Get("0.type").String() == "tool_result"
			if !isResult {
				require.Empty(t, open, "every call answered before line %d", i)
			}
			if content.Type == gjson.String {
				require.NotEmpty(t, strings.TrimSpace(content.String()))
				continue
			}
			require.NotEmpty(t, content.Array(), "%s", l)
			for _, blk := range content.Array() {
				switch blk.Get("type").String() {
				case "text":
					require.NotEmpty(t, strings.TrimSpace(blk.Get("text").String()))
				case "thinking":
					require.NotEmpty(t, blk.Get("signature").String())
				case "tool_use":
					id := blk.Get("id").String()
					require.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, id)
					require.False(t, open[id])
					require.True(t, blk.Get("input").IsObject())
					open[id] = true
				case "tool_result":
					id := blk.Get("tool_use_id").String()
					require.True(t, open[id], "a result of an open call: %s", l)
					delete(open, id)
				}
			}
		}
		require.Empty(t, open, "every call answered")
	})
}
