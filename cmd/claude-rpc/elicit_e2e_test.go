//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// elicitStep is one dialog the host is shown and how it answers it.
type elicitStep struct {
	method string
	check  func(t *testing.T, req gjson.Result) // may be nil
	// answer is the extension_ui_response's fields beside type and id;
	// nil: the host leaves the dialog unanswered.
	answer map[string]any
}

// elicitingBridge starts a bridge (args) whose folder's .mcp.json runs
// testdata/mcp-elicit, built into the test's folder, as the MCP server
// "elicit" (the project's servers enabled by its settings; the user's
// settings let its tool run without a permission prompt, so the dialogs
// seen are the elicitation's only).
func elicitingBridge(t *testing.T, server string, args ...string) *rpcProc {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"elicit": map[string]any{"type": "stdio", "command": server}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".mcp.json"), cfg, 0o644))
	for folder, settings := range map[string]string{dir: `{"enableAllProjectMcpServers":true}`, home: `{"permissions":{"allow":["mcp__elicit"]}}`} {
		require.NoError(t, os.MkdirAll(filepath.Join(folder, ".claude"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(folder, ".claude", "settings.json"), []byte(settings), 0o644))
	}
	return startBridgeWith(t, bridgeOpts{home: home, dir: dir}, args...)
}

// buildMCPElicit builds testdata/mcp-elicit into a folder of t's.
func buildMCPElicit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-elicit")
	out, err := exec.Command("go", "build", "-o", bin, "../../testdata/mcp-elicit").CombinedOutput()
	require.NoError(t, err, "go build testdata/mcp-elicit: %s", out)
	return bin
}

// ask is the prompt that makes the model call mcp-elicit's ask tool with
// params, elicitation/create's (JSON, made one line: a marker's argument
// is).
func ask(params string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(params)); err != nil {
		panic("ask: " + err.Error())
	}
	return "[[tool:mcp__elicit__ask:" + b.String() + "]]"
}

// elicit runs prompt, answering the dialogs as steps say (a dialog more
// fails the test; unanswered ones are withdrawn by the bridge), and
// returns the run's frames and the text of the tool result the model got
// (the fake API's next request).
func (b *rpcProc) elicit(prompt string, steps []elicitStep) ([]gjson.Result, string) {
	t := b.t
	t.Helper()
	require.True(t, b.call(map[string]any{"type": "prompt", "message": prompt}).Get("success").Bool())
	var frames []gjson.Result
	for {
		f := b.next(60 * time.Second)
		frames = append(frames, f)
		if f.Get("type").String() == "agent_end" {
			break
		}
		if f.Get("type").String() != "extension_ui_request" || f.Get("method").String() == "cancel" {
			continue
		}
		require.NotEmpty(t, steps, "a dialog more than the test expects: %s", f.Raw)
		st := steps[0]
		steps = steps[1:]
		require.Equal(t, st.method, f.Get("method").String(), f.Raw)
		if st.check != nil {
			st.check(t, f)
		}
		if st.answer != nil {
			a := map[string]any{"type": "extension_ui_response", "id": f.Get("id").String()}
			for k, v := range st.answer {
				a[k] = v
			}
			b.sendJSON(a)
		}
	}
	assert.Empty(t, steps, "dialogs the test expected and the bridge did not show")
	return frames, lastToolResult(b.srv)
}

// lastToolResult is the text of the last tool result the model was given.
func lastToolResult(srv *claudetest.Server) string {
	reqs := srv.MessagesRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		msgs := reqs[i].Messages().Array()
		for j := len(msgs) - 1; j >= 0; j-- {
			for _, c := range msgs[j].Get("content").Array() {
				if c.Get("type").String() != "tool_result" {
					continue
				}
				if c.Get("content").IsArray() {
					return c.Get("content.0.text").String()
				}
				return c.Get("content").String()
			}
		}
	}
	return ""
}

// cliVersion is the version of the CLI the tests run.
func cliVersion(t *testing.T) claudecli.Version {
	t.Helper()
	out, err := exec.Command(claudetest.CLI(t), "--version").Output()
	require.NoError(t, err)
	v, ok := claudecli.ParseVersion(strings.Fields(string(out))[0])
	require.True(t, ok, "claude --version: %s", out)
	return v
}

// TestElicitation: an MCP server the CLI runs (testdata/mcp-elicit) asks
// its user (elicitation/create) while its tool runs; the host answers
// pi's dialogs, and the tool's result, which the model gets, carries the
// answer: a form's values, cancel, decline (a form pi's dialogs cannot
// show; the host never answering), and URL mode's confirm.
func TestElicitation(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	server := buildMCPElicit(t)
	const form = `{"message":"Who are you?","requestedSchema":{"type":"object","properties":{
		"name":{"type":"string","title":"Name"},"age":{"type":"integer","minimum":0},"role":{"type":"string","enum":["dev","ops"]}},
		"required":["name"]}}`
	const urlMode = `{"mode":"url","message":"Sign in to go on","url":"https://example.com/sign-in","elicitationId":"e-1"}`
	// 2.1.275's MCP client declares no URL mode (elicitation: {}), and the
	// CLI refuses it itself; 2.1.328 and 2.1.332 declare it and ask the
	// host.
	hasURLMode := cliVersion(t).Compare(claudecli.Version{Major: 2, Minor: 1, Patch: 328}) >= 0
	for _, tc := range []struct {
		name   string
		args   []string
		params string
		steps  []elicitStep
		want   string // the tool's result: the ElicitResult's JSON
	}{
		{name: "form", params: form, steps: []elicitStep{
			{method: "input", answer: map[string]any{"value": "Ada"}, check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, "Name", req.Get("title").String())
				assert.Equal(t, "elicit asks: Who are you?", req.Get("message").String())
				assert.Equal(t, DefaultAskTimeout.Milliseconds(), req.Get("timeout").Int())
			}},
			{method: "input", answer: map[string]any{"value": "36"}},
			{method: "select", answer: map[string]any{"value": "ops"}, check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, `["dev","ops"]`, req.Get("options").Raw)
			}},
		}, want: `{"action":"accept","content":{"name":"Ada","age":36,"role":"ops"}}`},
		// On pipe the CLI asks through the relay's Elicitation hook.
		{name: "form on pipe", args: []string{"--transport", "pipe"}, params: form, steps: []elicitStep{
			{method: "input", answer: map[string]any{"value": "Ada"}, check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, "elicit asks: Who are you?", req.Get("message").String())
			}},
			{method: "input", answer: map[string]any{"value": "36"}},
			{method: "select", answer: map[string]any{"value": "dev"}},
		}, want: `{"action":"accept","content":{"name":"Ada","age":36,"role":"dev"}}`},
		{name: "cancelled mid-way", params: form, steps: []elicitStep{
			{method: "input", answer: map[string]any{"value": "Ada"}},
			{method: "input", answer: map[string]any{"cancelled": true}},
		}, want: `{"action":"cancel"}`},
		{name: "never answered", args: []string{"--ask-timeout", "1500ms"}, params: form,
			steps: []elicitStep{{method: "input", check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, int64(1500), req.Get("timeout").Int())
			}}}, want: `{"action":"decline"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := elicitingBridge(t, server, tc.args...)
			frames, result := b.elicit(ask(tc.params), tc.steps)
			assert.JSONEq(t, tc.want, result)
			assert.False(t, last(frames, "tool_execution_end", "").Get("isError").Bool())
			if tc.name == "never answered" {
				var asked string
				withdrawn := false
				for _, f := range frames {
					switch {
					case f.Get("type").String() != "extension_ui_request":
					case f.Get("method").String() != "cancel":
						asked = f.Get("id").String()
					case f.Get("targetId").String() == asked:
						withdrawn = true
					}
				}
				assert.True(t, withdrawn, "the unanswered dialog is withdrawn")
				assert.Equal(t, "still here", deltaText(b.runPrompt("next [[say:still here]]")), "the CLI goes on")
			}
		})
	}
	t.Run("aborted while asked", func(t *testing.T) {
		// abort interrupts the CLI's turn and ends the run: the dialog is
		// withdrawn, the elicitation left unanswered. An answer after that
		// is refused: nothing waits for it.
		t.Parallel()
		b := elicitingBridge(t, server)
		require.True(t, b.call(map[string]any{"type": "prompt", "message": ask(form)}).Get("success").Bool())
		asked := last(b.until(60*time.Second, isType("extension_ui_request")), "extension_ui_request", "")
		require.True(t, b.call(map[string]any{"type": "abort"}).Get("success").Bool())
		// 2.1.328 and 2.1.332 withdraw the request as the turn is
		// interrupted, before the run's agent_end; 2.1.275 does not, and
		// the run's end withdraws the dialog, after agent_end.
		var withdrawn, settled bool
		for deadline := time.Now().Add(30 * time.Second); !withdrawn || !settled; {
			f := b.next(time.Until(deadline))
			withdrawn = withdrawn || f.Get("method").String() == "cancel" && f.Get("targetId").String() == asked.Get("id").String()
			settled = settled || f.Get("type").String() == "session_settled"
		}
		b.sendJSON(map[string]any{"type": "extension_ui_response", "id": asked.Get("id").String(), "value": "late"})
		late := b.until(10*time.Second, isResponse("extension_ui_response"))
		assert.False(t, late[len(late)-1].Get("success").Bool(), late[len(late)-1].Raw)
		assert.Equal(t, "still here", deltaText(b.runPrompt("next [[say:still here]]")))
	})
	t.Run("a form pi cannot show", func(t *testing.T) {
		t.Parallel()
		// The CLI's MCP client checks the schema (MCP's: a flat object of
		// strings, numbers, booleans, enums and arrays of enums) and refuses
		// the request itself: checked on 2.1.275, 2.1.328 and 2.1.332. So
		// the bridge's own refusal of such a form (declined, logged) is for
		// a CLI that does not check.
		b := elicitingBridge(t, server)
		frames, result := b.elicit(ask(`{"message":"Where?","requestedSchema":{"type":"object","properties":{"address":{"type":"object"}}}}`), nil)
		assert.Contains(t, result, "Invalid elicitation request")
		assert.True(t, last(frames, "tool_execution_end", "").Get("isError").Bool())
	})
	t.Run("URL mode", func(t *testing.T) {
		t.Parallel()
		b := elicitingBridge(t, server)
		if !hasURLMode {
			frames, result := b.elicit(ask(urlMode), nil)
			assert.Contains(t, result, "Client does not support URL-mode elicitation requests", "2.1.275 refuses URL mode itself")
			assert.True(t, last(frames, "tool_execution_end", "").Get("isError").Bool())
			return
		}
		for _, answer := range []struct {
			confirmed bool
			want      string
		}{{true, `{"action":"accept"}`}, {false, `{"action":"decline"}`}} {
			_, result := b.elicit(ask(urlMode), []elicitStep{{method: "confirm", answer: map[string]any{"confirmed": answer.confirmed},
				check: func(t *testing.T, req gjson.Result) {
					assert.Equal(t, "https://example.com/sign-in", req.Get("url").String())
					assert.Equal(t, "Sign in to go on\n\nhttps://example.com/sign-in", req.Get("message").String())
				}}})
			assert.JSONEq(t, answer.want, result)
		}
	})
}
