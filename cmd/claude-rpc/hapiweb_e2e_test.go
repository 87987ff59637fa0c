//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// hapi (npm @twsxtd/hapi 0.30.7, scripts/install-hapi) is a real web host:
// a hub (HTTP API, SQLite, the web UI) and a runner that starts agent
// sessions; for pi, `hapi pi` runs `pi --mode rpc --extension
// <HAPI_HOME>/runtime/0.30.7/pi/hapi-title-extension.ts [--session ID]`
// found on PATH. scripts/hapi-web/driver.mjs drives the web UI in headless
// Chromium (playwright-core on Debian's chromium) as a person does. The pi
// on PATH is pi 1.6.0 itself (TestHapiWebOnPi16, which checks that the
// assertions describe what pi gives) or claude-rpc over the real CLI
// (TestHapiWeb, on the stream and pipe transports), both against the fake
// API. The hub listens on 127.0.0.1, started with --no-relay.
//
// What hapi reads from where (0.30.7): the session list is the hub's own
// SQLite (each `hapi pi` registers its session over Socket.IO; pi's
// session files are not read for it); the session's model is get_state's
// model (kept by the hub as the session's model) and the composer's picker
// is get_available_models; pi's session id (get_state's sessionId) is kept
// as the session's agentSessionId and given back as `--session ID` when a
// message resumes an archived session; the history shown is the hub's own
// copy of the messages.

// hapiRun is what one run of the driver gave.
type hapiRun struct {
	target    string // "pi" or "claude-rpc"
	transport string // claude-rpc's --transport
	srv       *claudetest.Server
	tag       string
	args      []string // each start of the pi on PATH: its arguments
	res       map[string]gjson.Result
}

// runHapiWeb starts a hub and a runner with target as the pi on PATH and
// runs the driver's story on them.
func runHapiWeb(t *testing.T, target, transport string) *hapiRun {
	t.Helper()
	claudetest.EndToEnd(t)
	chromium := claudetest.Chromium(t)
	hapiDir := runInstaller(t, "install-hapi")
	hapi := filepath.Join(hapiDir, "bin", "hapi")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	srv := claudetest.Start(t)
	tmp := t.TempDir()
	home, hapiHome, bin, work := filepath.Join(tmp, "home"), filepath.Join(tmp, "hapi"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "hapi-work")
	for _, d := range []string{home, hapiHome, bin, work} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	marker := newMarker()
	agentLog, argsLog := filepath.Join(tmp, "agent.log"), filepath.Join(tmp, "args.log")
	piCmd := filepath.Join(bin, "pi")
	logArgs := fmt.Sprintf("printf '%%s\\n' \"$*\" >>%q\n", argsLog)
	var env []string
	driverTarget := "claude"
	switch target {
	case "pi":
		driverTarget = "pi"
		pi := runInstaller(t, "install-pi16")
		agent := filepath.Join(home, "pi-agent")
		require.NoError(t, os.MkdirAll(agent, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(agent, "models.json"), acpFakeModels(srv.URL), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(agent, "settings.json"),
			[]byte(`{"defaultProvider":"fake","defaultModel":"claude-fake-opus"}`), 0o644))
		writeScript(t, piCmd, logArgs+fmt.Sprintf("PI_CODING_AGENT_DIR=%q PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 exec %q %q \"$@\" 2>>%q\n",
			agent, filepath.Join(pi, "node_modules", ".bin", "node"),
			filepath.Join(pi, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js"), agentLog))
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k == "HOME" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "PI_") || strings.HasPrefix(k, "CLAUDE") {
				continue
			}
			env = append(env, kv)
		}
		env = append(env, "HOME="+home)
	case "claude-rpc":
		// hapi's title extension runs on pi's runtime, in the Node it needs.
		nodeEnv := ""
		for _, kv := range piNode(t) {
			k, v, _ := strings.Cut(kv, "=")
			nodeEnv += fmt.Sprintf("%s=%q ", k, v)
		}
		writeScript(t, piCmd, logArgs+fmt.Sprintf("%sexec %q --claude-path %q --transport %s --log-level debug \"$@\" 2>>%q\n",
			nodeEnv, binary(t), claudetest.CLI(t), transport, agentLog))
		env = srv.CLIEnv(home)
	default:
		t.Fatalf("unknown target %q", target)
	}
	// hapi's own settings come from here only.
	kept := env[:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HAPI_") || k == "CLI_API_TOKEN" || k == "PATH" {
			continue
		}
		kept = append(kept, kv)
	}
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	token := newMarker() + newMarker()
	env = append(kept,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HAPI_HOME="+hapiHome,
		"HAPI_LISTEN_HOST=127.0.0.1",
		fmt.Sprintf("HAPI_LISTEN_PORT=%d", port),
		"HAPI_API_URL="+url,
		"CLI_API_TOKEN="+token,
		"CLAUDE_RPC_TEST_MARKER="+marker)

	if target == "claude-rpc" {
		warmInfoCache(t, srv, home, work, "--transport", transport)
	}

	logs := map[string]string{}
	start := func(name string, args ...string) {
		log := filepath.Join(tmp, name+".log")
		logs[name] = log
		f, err := os.Create(log)
		require.NoError(t, err)
		cmd := exec.Command(hapi, args...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, tmp, f, f
		require.NoError(t, cmd.Start(), "hapi %s", strings.Join(args, " "))
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); _ = f.Close(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	// Cleanups run last first: this one, after the hub and the runner are
	// gone, ends what they left (the sessions' hapi pi and their pi) and
	// shows the logs of a failed run.
	t.Cleanup(func() {
		var left []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if left = processesWithEnv("CLAUDE_RPC_TEST_MARKER=" + marker); len(left) == 0 {
				break
			}
		}
		for _, p := range left {
			var pid int
			if _, err := fmt.Sscan(p, &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			for _, name := range []string{"hub", "runner"} {
				b, _ := os.ReadFile(logs[name])
				t.Logf("hapi %s's output (tail):\n%s", name, tail(string(b), 3000))
			}
			b, _ := os.ReadFile(agentLog)
			t.Logf("%s's stderr (tail):\n%s", target, tail(string(b), 6000))
			// hapi's own logs: the hub's, the runner's and each hapi pi's.
			files, _ := filepath.Glob(filepath.Join(hapiHome, "logs", "*.log"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				t.Logf("%s (tail):\n%s", filepath.Base(f), tail(string(b), 3000))
			}
		}
	})
	start("hub", "hub", "--no-relay")
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "hapi hub answers on %s", url)
	start("runner", "runner", "start-sync")

	run := &hapiRun{target: target, transport: transport, srv: srv, tag: newMarker()[:8], res: map[string]gjson.Result{}}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	driverHome := t.TempDir()
	cmd := exec.CommandContext(ctx, filepath.Join(hapiDir, "node_modules", ".bin", "node"),
		filepath.Join(root, "scripts", "hapi-web", "driver.mjs"))
	cmd.Env = []string{
		"HOME=" + driverHome,
		"PATH=" + os.Getenv("PATH"),
		"HAPI_PLAYWRIGHT=" + filepath.Join(hapiDir, "node_modules", "playwright-core", "index.mjs"),
		"HAPI_CHROMIUM=" + chromium,
		"HAPI_URL=" + url,
		"HAPI_TOKEN=" + token,
		"HAPI_WORK=" + work,
		"HAPI_TARGET=" + driverTarget,
		"HAPI_TAG=" + run.tag,
	}
	if shots := os.Getenv("HAPI_WEB_SHOTS"); shots != "" {
		dir := filepath.Join(shots, strings.ReplaceAll(t.Name(), "/", "_"))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		cmd.Env = append(cmd.Env, "HAPI_SHOTS="+dir)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "driver.mjs: %s", tail(stderr.String(), 3000))
	if dump := os.Getenv("HAPI_WEB_DUMP"); dump != "" {
		_ = os.WriteFile(filepath.Join(dump, strings.ReplaceAll(t.Name(), "/", "_")+".json"), out, 0o644)
	}
	require.True(t, gjson.ValidBytes(out), "the report is one JSON object: %.500s", out)
	for _, sc := range gjson.GetBytes(out, "scenarios").Array() {
		run.res[sc.Get("name").String()] = sc
	}
	if b, err := os.ReadFile(argsLog); err == nil {
		run.args = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if target == "claude-rpc" {
		// Its first start's word on the cache: "cached CLI info", not "no
		// cached CLI info".
		b, _ := os.ReadFile(agentLog)
		first := ""
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "cached CLI info") {
				first = l
				break
			}
		}
		assert.Regexp(t, `DBG cached CLI info`, first, "hapi's claude-rpc started on what the CLI said before (warmInfoCache)")
	}
	return run
}

// warmInfoCache starts claude-rpc through the harness as hapi will start
// it (the same fake API, HOME and folder, so the same info cache), with
// args, asks for the models and waits for the answer: the bridge keeps
// what the CLI said, so hapi's claude-rpc names the model in its first
// get_state at once, as on any machine where claude-rpc ran before. That
// first get_state is the only one hapi reads the model from. On a fresh
// machine it waits up to firstModelWait for the CLI to say it, which a
// CLI slowed by a loaded machine can miss (ci at 29edf9f: the model picker
// never showed on pipe, where the answer takes a cold CLI start):
// TestFirstStateModel is about that start.
func warmInfoCache(t *testing.T, srv *claudetest.Server, home, dir string, args ...string) {
	t.Helper()
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, args...)
	models := b.call(map[string]any{"type": "get_available_models"})
	require.True(t, models.Get("success").Bool() && len(models.Get("data.models").Array()) > 0, "%s", models.Raw)
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// scenario returns the driver's report of a scenario, failing the test when
// it is missing or failed.
func (r *hapiRun) scenario(t *testing.T, name string) gjson.Result {
	t.Helper()
	sc, ok := r.res[name]
	require.True(t, ok, "the report has scenario %s", name)
	require.Empty(t, sc.Get("error").String(), "scenario %s failed; the page:\n%s", name, sc.Get("page").String())
	return sc
}

// request returns the fake API's (last) Messages request whose last user
// text is text.
func (r *hapiRun) request(t *testing.T, text string) (fakeapi.Request, bool) {
	t.Helper()
	reqs := r.srv.MessagesRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUserText() == text {
			return reqs[i], true
		}
	}
	return fakeapi.Request{}, false
}

func TestHapiWebOnPi16(t *testing.T) {
	checkHapiWeb(t, runHapiWeb(t, "pi", ""))
}

func TestHapiWeb(t *testing.T) {
	claudetest.EndToEnd(t)
	for _, tp := range []string{"stream", "pipe"} {
		t.Run(tp, func(t *testing.T) {
			checkHapiWeb(t, runHapiWeb(t, "claude-rpc", tp))
		})
	}
}

// checkHapiWeb checks what the web showed, one subtest per feature.
func checkHapiWeb(t *testing.T, r *hapiRun) {
	t.Run("list", func(t *testing.T) {
		sc := r.scenario(t, "list")
		assert.Contains(t, sc.Get("listText").String(), sc.Get("group").String(), "the list groups the session under its folder")
		assert.Contains(t, sc.Get("listText").String(), sc.Get("folder").String(), "the list names the session after its folder")
		assert.True(t, strings.HasSuffix(sc.Get("url").String(), "/sessions/"+sc.Get("sessionId").String()), "clicking it opens it: %s", sc.Get("url"))
		assert.Equal(t, "pi", sc.Get("hub.flavor").String())
		assert.NotEmpty(t, sc.Get("hub.piSessionId").String(), "the hub keeps pi's session id (get_state's sessionId)")
		require.NotEmpty(t, r.args, "hapi started the pi on PATH")
		assert.Regexp(t, `^--mode rpc --extension \S+/hapi-title-extension\.ts$`, r.args[0], "how hapi starts pi")
	})
	// The composer's model picker needs get_state's model, which hapi reads
	// only from the first get_state (a fresh machine: nothing cached).
	t.Run("model", func(t *testing.T) {
		sc := r.scenario(t, "model")
		label := sc.Get("label").String()
		var labels, checked []string
		for _, o := range sc.Get("options").Array() {
			labels = append(labels, o.Get("label").String())
			if o.Get("checked").Bool() {
				checked = append(checked, o.Get("label").String())
			}
		}
		assert.GreaterOrEqual(t, len(labels), 2, "the picker offers the models (get_available_models): %s", sc.Get("options").Raw)
		assert.Equal(t, []string{label}, checked, "the composer shows the one the picker marks")
		assert.Equal(t, "model: "+sc.Get("hubModel").String(), sc.Get("header").String(), "the header shows get_state's model")
		if r.target == "pi" {
			assert.Equal(t, "Claude Fake Opus", label)
		}
	})
	t.Run("prompt", func(t *testing.T) {
		sc := r.scenario(t, "prompt")
		_, ok := r.request(t, sc.Get("prompt").String())
		assert.True(t, ok, "the prompt reached the API")
		var partial int
		for _, n := range sc.Get("samples").Array() {
			if n.Int() > 0 && n.Int() < 40 {
				partial++
			}
		}
		assert.GreaterOrEqual(t, partial, 2, "the reply was shown as it streamed: words seen %s", sc.Get("samples").Raw)
	})
	t.Run("tool", func(t *testing.T) {
		sc := r.scenario(t, "tool")
		card := sc.Get("cardText").String()
		assert.True(t, strings.HasPrefix(card, "bash\n"), "the card names pi's tool: %q", card)
		assert.Contains(t, card, "echo "+sc.Get("out").String(), "the card shows the command")
		assert.Contains(t, sc.Get("page").String(), "tool said: "+sc.Get("out").String(), "the reply after the tool ran")
	})
	t.Run("switch", func(t *testing.T) {
		sc := r.scenario(t, "switch")
		assert.NotEmpty(t, sc.Get("chosen").String())
		assert.NotEqual(t, sc.Get("before").String(), sc.Get("chosen").String())
		assert.Equal(t, sc.Get("chosen").String(), sc.Get("after").String(), "the composer shows the model chosen")
		assert.Equal(t, "model: "+sc.Get("hubModel").String(), sc.Get("header").String(), "the header follows")
		req, ok := r.request(t, sc.Get("prompt").String())
		require.True(t, ok, "the prompt after the switch reached the API")
		first, ok := r.request(t, r.res["prompt"].Get("prompt").String())
		require.True(t, ok)
		model := gjson.GetBytes(req.Body, "model").String()
		assert.NotEqual(t, gjson.GetBytes(first.Body, "model").String(), model, "the turn after the switch runs on another model")
		if r.target == "pi" {
			assert.Equal(t, "claude-fake-haiku", model)
		}
	})
	// hapi's title extension (a tool, hapi_change_title, and a paragraph
	// of the system prompt asking for it): claude-rpc runs it in its
	// extension host (--extension), the tool served to the CLI as an MCP
	// tool (on pipe through the relay).
	t.Run("title", func(t *testing.T) {
		req, ok := r.request(t, r.res["prompt"].Get("prompt").String())
		require.True(t, ok, "the prompt reached the API")
		var tools []string
		for _, tool := range gjson.GetBytes(req.Body, "tools").Array() {
			tools = append(tools, tool.Get("name").String())
		}
		assert.Contains(t, gjson.GetBytes(req.Body, "system").Raw, "## Session title", "the extension's paragraph of the system prompt")
		sc := r.scenario(t, "title")
		switch {
		case r.target == "pi":
			assert.Contains(t, tools, "hapi_change_title", "the title extension's tool is offered")
		default:
			assert.Contains(t, tools, "mcp__ext__hapi_change_title", "the title extension's tool is offered, under the CLI's MCP name")
		}
		assert.Equal(t, sc.Get("title").String(), sc.Get("hubTitle").String(), "the title the model gave is the session's: %s", sc.Raw)
	})
	t.Run("abort", func(t *testing.T) {
		sc := r.scenario(t, "abort")
		req, ok := r.request(t, sc.Get("prompt").String())
		require.True(t, ok, "the prompt reached the API")
		// Abort was clicked once 3 words were on the page: the request cut
		// short also shows that the reply was shown as it streamed.
		assert.False(t, req.Completed, "the reply was cut short")
		assert.Less(t, sc.Get("settled").Int(), int64(400), "the reply stopped")
		assert.Equal(t, sc.Get("settled").Int(), sc.Get("later").Int(), "and grew no more")
		assert.Contains(t, sc.Get("page").String(), "still-here-"+r.tag, "the session answers after the abort")
	})
	t.Run("resume", func(t *testing.T) {
		sc := r.scenario(t, "resume")
		assert.Equal(t, sc.Get("before.id").String(), sc.Get("after.id").String(), "the same hapi session")
		assert.True(t, sc.Get("after.active").Bool())
		history := sc.Get("history").String()
		out := r.res["tool"].Get("out").String()
		for _, s := range []string{r.res["prompt"].Get("prompt").String(), r.res["tool"].Get("prompt").String(), "tool said: " + out} {
			assert.Contains(t, history, s, "the archived session's page shows its history")
		}
		id := sc.Get("before.piSessionId").String()
		var resumed bool
		for _, a := range r.args {
			resumed = resumed || strings.HasSuffix(a, "--session "+id)
		}
		assert.True(t, resumed, "hapi resumed pi's session %s: %q", id, r.args)
		req, ok := r.request(t, sc.Get("prompt").String())
		require.True(t, ok, "the prompt after the resume reached the API")
		conv := strings.Join(conversation(gjson.ParseBytes(req.Body)), "\n")
		assert.Contains(t, conv, "user: "+r.res["tool"].Get("prompt").String(), "the resumed agent has the conversation")
		assert.Contains(t, conv, "assistant: tool said: "+out)
	})
}
