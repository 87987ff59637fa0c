//go:build linux

package main

import (
	"context"
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

// threeTurns are the prompts of a session the tests continue and branch.
var threeTurns = []string{"one [[say:first answer]]", "[[bash:echo second-turn]]", "three [[say:third answer]]"}

// startThreeTurns runs threeTurns and returns the bridge and its session id.
func startThreeTurns(t *testing.T, args ...string) (*rpcProc, string) {
	b := startBridge(t, args...)
	for _, p := range threeTurns {
		b.runPrompt(p)
	}
	return b, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
}

// roles lists the roles of get_messages.
func (b *rpcProc) roles() []string {
	var out []string
	for _, m := range b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array() {
		out = append(out, m.Get("role").String())
	}
	return out
}

// lastMessagesRaw is the last API request's conversation, as JSON.
func (b *rpcProc) lastMessagesRaw() string { return b.lastRequest().Get("messages").Raw }

var threeTurnRoles = []string{"user", "assistant", "user", "assistant", "toolResult", "assistant", "user", "assistant"}

func TestStartOnASession(t *testing.T) { forStreamAndPipe(t, testStartOnASession) }

// A second bridge started with --session (or --continue) carries on the
// conversation: get_messages shows it, and the next API request has it all.
func testStartOnASession(t *testing.T, tp string) {
	b, sid := startThreeTurns(t, "--transport", tp)
	live := b.call(map[string]any{"type": "get_messages"}).Get("data.messages")
	file := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	require.FileExists(t, file)
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	for _, how := range [][]string{{"--session", sid}, {"--session", file}, {"--continue"}} {
		b2 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, append([]string{"--transport", tp}, how...)...)
		st := b2.call(map[string]any{"type": "get_state"}).Get("data")
		assert.Equal(t, sid, st.Get("sessionId").String(), "%v", how)
		assert.Equal(t, int64(8), st.Get("messageCount").Int(), "%v", how)
		msgs := b2.call(map[string]any{"type": "get_messages"}).Get("data.messages")
		assert.Equal(t, threeTurnRoles, b2.roles(), "%v", how)
		for i := range msgs.Array() { // as the live events showed them, timestamps aside
			want, got := live.Array()[i], msgs.Array()[i]
			assert.Equal(t, want.Get("content").Raw, got.Get("content").Raw, "%v message %d", how, i)
			assert.Equal(t, want.Get("stopReason").String(), got.Get("stopReason").String(), "%v message %d", how, i)
		}
		_, _ = b2.closeAndWait(30 * time.Second)
	}

	b3 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--transport", tp, "--session", sid)
	b3.runPrompt("four [[say:fourth]]")
	conv := b3.lastMessagesRaw()
	for _, want := range []string{"one [[say:first answer]]", "second-turn", "three [[say:third answer]]", "four [[say:fourth]]"} {
		assert.Contains(t, conv, want, "the API request carries every turn")
	}
	assert.Len(t, b3.roles(), 10)
}

func TestBranchAndClone(t *testing.T) { forStreamAndPipe(t, testBranchAndClone) }

func testBranchAndClone(t *testing.T, tp string) {
	b, sid := startThreeTurns(t, "--transport", tp)
	file := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	before, err := os.ReadFile(file)
	require.NoError(t, err)

	points := b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Array()
	require.Len(t, points, 3)
	for i, p := range points {
		assert.Equal(t, threeTurns[i], p.Get("text").String())
		assert.NotEmpty(t, p.Get("entryId").String())
	}
	assert.Equal(t, b.call(map[string]any{"type": "get_branch_messages"}).Get("data.messages").Raw,
		b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Raw)

	// Branch at the second prompt: the new session holds turn 1 only.
	resp := b.call(map[string]any{"type": "branch", "entryId": points[1].Get("entryId").String()})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.Equal(t, threeTurns[1], resp.Get("data.text").String())
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	branched := st.Get("sessionId").String()
	assert.NotEqual(t, sid, branched)
	assert.Equal(t, []string{"user", "assistant"}, b.roles())
	b.runPrompt("instead [[say:other way]]")
	conv := b.lastMessagesRaw()
	assert.Contains(t, conv, "one [[say:first answer]]")
	assert.NotContains(t, conv, "second-turn", "turn 2 is not in the branch")
	assert.NotContains(t, conv, "three [[say", "turn 3 is not in the branch")
	assert.Equal(t, []string{"user", "assistant", "user", "assistant"}, b.roles())
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	// The CLI appends its bookkeeping (last-prompt, cost-state) to the
	// session it forks from, never a message.
	require.True(t, strings.HasPrefix(string(after), string(before)), "the original session is left as it was")
	for _, l := range strings.Split(strings.TrimSpace(strings.TrimPrefix(string(after), string(before))), "\n") {
		assert.NotContains(t, []string{"user", "assistant"}, gjson.Get(l, "type").String(), "no message added to the original: %s", l)
	}
	assert.Equal(t, branched, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	points = b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Array()
	require.Len(t, points, 2)
	assert.Equal(t, "instead [[say:other way]]", points[1].Get("text").String())

	// Clone: the same conversation under a new id.
	resp = b.call(map[string]any{"type": "clone"})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	cloned := resp.Get("data.sessionId").String()
	assert.NotEqual(t, branched, cloned)
	assert.Equal(t, []string{"user", "assistant", "user", "assistant"}, b.roles())
	b.runPrompt("in the clone [[say:cloned]]")
	conv = b.lastMessagesRaw()
	assert.Contains(t, conv, "instead [[say:other way]]")
	assert.Contains(t, conv, "one [[say:first answer]]")

	// Branching at the first prompt starts afresh.
	first := b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages.0.entryId").String()
	require.True(t, b.call(map[string]any{"type": "branch", "entryId": first}).Get("success").Bool())
	assert.Empty(t, b.roles())
	b.runPrompt("from scratch [[say:new]]")
	assert.NotContains(t, b.lastMessagesRaw(), "first answer")
}

func TestSessionErrors(t *testing.T) {
	t.Parallel()
	b, sid := startThreeTurns(t)
	notJSONL := filepath.Join(t.TempDir(), "notes.jsonl")
	require.NoError(t, os.WriteFile(notJSONL, []byte("hello\nworld\n"), 0o644))
	for _, bad := range []map[string]any{
		{"type": "switch_session"},
		{"type": "switch_session", "sessionPath": filepath.Join(t.TempDir(), "missing.jsonl")},
		{"type": "switch_session", "sessionPath": t.TempDir()},
		{"type": "switch_session", "sessionPath": notJSONL},
		{"type": "switch_session", "sessionPath": "00000000-0000-4000-8000-000000000000"},
		{"type": "switch_session", "sessionPath": "../../etc/passwd"},
		{"type": "branch"},
		{"type": "branch", "entryId": "no-such-entry"},
		{"type": "fork", "entryId": 5},
		{"type": "new_session", "parentSession": 7},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), "%v: %s", bad, r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, sid, st.Get("sessionId").String(), "the session in use is unchanged")
	assert.Equal(t, threeTurnRoles, b.roles())

	// A fresh session has nothing to clone or branch from.
	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	assert.False(t, b.call(map[string]any{"type": "clone"}).Get("success").Bool())
	assert.Empty(t, b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Array())

	// switch_session back to the first one, by id.
	r := b.call(map[string]any{"type": "switch_session", "sessionPath": sid})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, sid, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	assert.Equal(t, threeTurnRoles, b.roles())
	b.runPrompt("back again [[say:yes]]")
	assert.Contains(t, b.lastMessagesRaw(), "three [[say:third answer]]")
}

func TestStartOnAMissingSession(t *testing.T) {
	t.Parallel()
	out, err := runBinary(t, nil, "--mode", "rpc", "--session", "00000000-0000-4000-8000-000000000000")
	require.Error(t, err)
	assert.Contains(t, out, "no transcript of session")
	out, err = runBinary(t, nil, "--mode", "rpc", "--session", "x", "--continue")
	require.Error(t, err)
	assert.True(t, strings.Contains(out, "choose one"), out)
}

// --no-session: the CLI writes no transcript. The stream transport keeps
// the conversation in its process; a per-turn process cannot resume one.
func TestNoSession(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--no-session")
	b.runPrompt("one [[say:first answer]]")
	b.runPrompt("two [[say:second]]")
	assert.Contains(t, b.lastMessagesRaw(), "first answer", "the stream process remembers")
	projects, _ := filepath.Glob(filepath.Join(b.home, ".claude", "projects", "*", "*.jsonl"))
	assert.Empty(t, projects, "no transcript written")
}

// TestExportHTML exports a session with thinking, a tool call and hostile
// text, and checks what headless Chromium renders of it.
func TestExportHTML(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	chromium := claudetest.Chromium(t)
	b := startBridge(t)
	b.runPrompt("[[think:Pondering.]][[say:Running it.]][[bash:echo from-the-tool]]")
	hostile := `look: </script><b>bold?</b><img src=x onerror="document.body.setAttribute('data-pwned','1')">`
	b.runPrompt(hostile + "[[say:plain " + "```go\nfmt.Println(1 < 2)\n```" + "]]")

	out := filepath.Join(t.TempDir(), "session.html")
	r := b.call(map[string]any{"type": "export_html", "outputPath": out})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, out, r.Get("data.path").String())
	def := b.call(map[string]any{"type": "export_html"})
	require.True(t, def.Get("success").Bool(), def.Raw)
	assert.FileExists(t, def.Get("data.path").String(), "the default path is in the working folder")
	assert.Equal(t, b.dir, filepath.Dir(def.Get("data.path").String()))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+out)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	dom, err := cmd.Output()
	require.NoError(t, err)
	page := string(dom)
	for _, want := range []string{"Pondering.", "Running it.", "echo from-the-tool", "from-the-tool", "fmt.Println(1 &lt; 2)",
		"look: &lt;/script&gt;&lt;b&gt;bold?&lt;/b&gt;&lt;img src=x onerror="} {
		assert.Contains(t, page, want, "rendered")
	}
	assert.NotContains(t, page, "<b>bold?</b>", "message text never becomes markup")
	assert.NotRegexp(t, `<body[^>]*data-pwned`, page, "no script from message text ran")
	assert.Equal(t, 0, strings.Count(page, "<img"), "no image element came from message text")

	for _, bad := range []map[string]any{
		{"type": "export_html", "outputPath": t.TempDir()},
		{"type": "export_html", "outputPath": filepath.Join(t.TempDir(), "no", "such", "dir", "x.html")},
		{"type": "export_html", "outputPath": 3},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
	}
}

// TestOpenSession: omp's open_session on the folder the CLI keeps this
// working directory's sessions in (get_state's sessionFile's): a new
// session there while none is written, then the most recent one (a new
// session switched away from it is opened again, its conversation going
// on); another folder is refused, saying which one it can open.
func TestOpenSession(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	dir := filepath.Dir(b.transcript())
	r := b.call(map[string]any{"type": "open_session", "sessionDir": dir})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.False(t, r.Get("data.resumed").Bool(), "nothing written yet: a new session")
	first := r.Get("data.sessionId").String()

	b.runPrompt("Remember the word pelican. [[say:Noted.]]")
	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	assert.NotEqual(t, first, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	r = b.call(map[string]any{"type": "open_session", "sessionDir": dir})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.True(t, r.Get("data.resumed").Bool(), r.Raw)
	assert.Equal(t, first, r.Get("data.sessionId").String())
	assert.Equal(t, filepath.Join(dir, first+".jsonl"), b.transcript())
	assert.Contains(t, r.Get("data.sessionFile").String(), "_"+first+".jsonl", "its pi file")
	assert.Equal(t, first, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	b.runPrompt("What was the word? [[say:pelican]]")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "Remember the word pelican", "the conversation goes on")

	r = b.call(map[string]any{"type": "open_session", "sessionDir": t.TempDir()})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Contains(t, r.Get("error").String(), dir)
}

func TestSessionNameAtOnce(t *testing.T) { forStreamAndPipe(t, testSessionNameAtOnce) }

// set_session_name reaches the transcript at once, as pi writes its
// session_info entry, through the CLI (its rename_session): a second
// bridge on the session, started without another prompt, has the name.
// A name given before the first turn is written with that turn.
func testSessionNameAtOnce(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	named := func(b *rpcProc, name string) bool {
		data, _ := os.ReadFile(b.transcript()) // not there yet: not named
		for _, line := range strings.Split(string(data), "\n") {
			if gjson.Get(line, "type").String() == "custom-title" && gjson.Get(line, "customTitle").String() == name {
				return true
			}
		}
		return false
	}
	require.True(t, b.call(map[string]any{"type": "set_session_name", "name": "Before the first turn"}).Get("success").Bool())
	b.runPrompt("one [[say:first answer]]")
	assert.Eventually(t, func() bool { return named(b, "Before the first turn") }, 10*time.Second, 50*time.Millisecond,
		"a name given before the first turn is in the transcript after it")

	start := time.Now()
	require.True(t, b.call(map[string]any{"type": "set_session_name", "name": "Named at once"}).Get("success").Bool())
	require.Eventually(t, func() bool { return named(b, "Named at once") }, 10*time.Second, 20*time.Millisecond,
		"the name is in the transcript with no turn after it")
	t.Logf("%s: the name reached the transcript after %v", tp, time.Since(start).Round(time.Millisecond))
	sid := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	b2 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--transport", tp, "--session", sid)
	st := b2.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, "Named at once", st.Get("sessionName").String(), st.Raw)
	assert.EqualValues(t, 2, st.Get("messageCount").Int(), "naming added no message")
	_, _ = b2.closeAndWait(30 * time.Second)
	assert.Len(t, b.srv.MessagesRequests(), 1, "naming called no API")

	// The CLI reads the name back: its --resume takes a session's name.
	cmd := exec.Command(b.cli, "-p", "two [[say:second answer]]", "--output-format", "stream-json", "--verbose", "--resume", "Named at once")
	cmd.Dir, cmd.Env = b.dir, b.srv.CLIEnv(b.home)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var resumed string
	for _, line := range strings.Split(string(out), "\n") {
		if gjson.Get(line, "type").String() == "result" {
			resumed = gjson.Get(line, "session_id").String()
		}
	}
	assert.Equal(t, sid, resumed, "claude --resume <name> resumes the session")
}
