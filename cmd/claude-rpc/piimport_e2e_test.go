//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// TestPiImport: a session pi 1.6.0 itself wrote (no CLI transcript behind
// it) goes on in claude-rpc, by its file and by its id: claude-rpc writes a
// CLI transcript from pi's entries, and the CLI's next API request carries
// the earlier turns: the text, the tool call under the CLI's name and
// shape and its result; the transcript keeps pi's thinking with its
// signature. When pi went on with the session after claude-rpc, it is
// imported again, with both programs' turns. pi's file is only ever
// appended to.
func TestPiImport(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	pi := installPi16(t)
	srv := claudetest.Start(t)
	home, dir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the otter sleeps\n"), 0o644))

	pi.prompt(t, srv, home, dir, "Remember the word otter. [[think:An otter, noted.]][[say:Noted: otter.]]")
	place := sessions.PiSessionPlace([]string{"HOME=" + home}, dir, "")
	files, _ := filepath.Glob(filepath.Join(place.Dir, "*.jsonl"))
	require.Len(t, files, 1, "pi's session file in %s", place.Dir)
	file := files[0]
	pi.prompt(t, srv, home, dir, `Read the notes. [[tool:read:{"path":"notes.txt"}]]`, "--session", file)
	pf, err := sessions.ReadPi(file)
	require.NoError(t, err)
	for _, e := range pf.Entries {
		require.Empty(t, e.ClaudeSessionID, "pi wrote every entry")
	}
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	transcripts := func() []string {
		m, _ := filepath.Glob(filepath.Join(sessions.ProjectDir(filepath.Join(home, ".claude"), dir), "*.jsonl"))
		return m
	}
	require.Empty(t, transcripts())

	// lastRequest is the last API request, as its conversation and raw.
	lastRequest := func() ([]string, gjson.Result) {
		reqs := srv.MessagesRequests()
		return said(reqs[len(reqs)-1]), reqs[len(reqs)-1].Messages()
	}
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, "--session", file)
	st := b.call(map[string]any{"type": "get_state"}).Get("data")
	assert.Equal(t, file, st.Get("sessionFile").String())
	require.Len(t, transcripts(), 1, "the import's transcript")
	assert.Equal(t, st.Get("sessionId").String()+".jsonl", filepath.Base(transcripts()[0]), "the CLI session is the import's")
	msgs := b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array()
	require.Len(t, msgs, 6, "user, assistant, user, tool call, result, answer")
	b.runPrompt("What was the word? [[say:otter]]")
	conv, raw := lastRequest()
	assert.Equal(t, []string{
		"user: Remember the word otter. [[think:An otter, noted.]][[say:Noted: otter.]]",
		"assistant: Noted: otter.",
		`user: Read the notes. [[tool:read:{"path":"notes.txt"}]]`,
		"assistant: tool_use",
		"user: tool_result",
		"assistant: tool said: the otter sleeps",
	}, conv[:6], "pi's turns")
	assert.Equal(t, "user: What was the word? [[say:otter]]", conv[len(conv)-1])
	call := raw.Get(`#.content|@flatten|#(type=="tool_use")`)
	assert.Equal(t, "Read", call.Get("name").String(), "pi's read as the CLI's: %s", call.Raw)
	assert.JSONEq(t, `{"file_path":"notes.txt"}`, call.Get("input").Raw)
	result := raw.Get(`#.content|@flatten|#(type=="tool_result")`)
	assert.Equal(t, call.Get("id").String(), result.Get("tool_use_id").String())
	assert.Contains(t, result.Get("content").Raw, "the otter sleeps")
	// The thought goes into the transcript with the signature pi got and
	// the model that signed it; the CLI sends a signed thought back only to
	// a model it knows (measured on 2.1.275 to 2.1.332), which the fake
	// provider's is not.
	tr, err := sessions.ReadTranscript(transcripts()[0])
	require.NoError(t, err)
	thinking := gjson.Result{}
	for _, e := range tr.Entries {
		if th := gjson.GetBytes(e.Raw, `message.content.#(type=="thinking")`); th.Exists() {
			thinking = th
			assert.Equal(t, "claude-fake-opus", gjson.GetBytes(e.Raw, "message.model").String())
		}
	}
	assert.Equal(t, "An otter, noted.", thinking.Get("thinking").String(), "thinking, with the signature pi got")
	assert.Equal(t, "fake-signature", thinking.Get("signature").String())
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(after), string(before)), "pi's file appended to, never rewritten")

	// pi goes on with it; claude-rpc, given the session's id, imports it
	// again (its newest message is pi's): both programs' turns.
	pi.prompt(t, srv, home, dir, "And now? [[say:still otter]]", "--session", file)
	b2 := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, "--session", pf.Header.ID)
	assert.Equal(t, file, b2.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String())
	require.Len(t, transcripts(), 2, "a new transcript; the first one left as it was")
	b2.runPrompt("Once more? [[say:otter]]")
	conv, _ = lastRequest()
	assert.Contains(t, conv, "user: Remember the word otter. [[think:An otter, noted.]][[say:Noted: otter.]]")
	assert.Contains(t, conv, "user: What was the word? [[say:otter]]", "claude-rpc's turn")
	assert.Contains(t, conv, "assistant: still otter", "pi's turn after it")
	assert.Equal(t, "user: Once more? [[say:otter]]", conv[len(conv)-1])
	code, _ = b2.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)
}

// TestPiImportBadInput: a pi file cut short is imported from its whole
// lines, and one begun in another folder goes on in this one, with a
// warning; what cannot be imported is named in a warning; a branch with
// nothing to import is refused with a clear error. Nothing is overwritten,
// and a refused import writes no transcript.
func TestPiImportBadInput(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	b := startBridge(t)
	cfg := filepath.Join(b.home, ".claude")
	transcripts := func() int {
		m, _ := filepath.Glob(filepath.Join(sessions.ProjectDir(cfg, b.dir), "*.jsonl"))
		return len(m)
	}
	dir := t.TempDir()
	write := func(name string, lines ...string) (string, string) {
		p := filepath.Join(dir, name+".jsonl")
		content := strings.Join(lines, "\n")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p, content
	}
	header := func(id, cwd string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-05-01T10:00:00.000Z","cwd":"` + cwd + `"}`
	}
	user := func(id, parent, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-05-01T10:00:01.000Z","message":{"role":"user","content":"` + text + `","timestamp":1777629601000}}`
	}
	assistant := func(id, parent, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"api":"anthropic-messages","provider":"fake","model":"claude-fake-opus","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1777629602000}}`
	}

	// Cut short mid-line, from another folder, with a message of a role
	// the CLI has no kind for and an unsigned thought.
	cut, content := write("cut", header("cut-session", "/elsewhere"),
		user("u1", "", "Remember the word lynx."),
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"no signature"},{"type":"text","text":"Noted: lynx."}],"api":"anthropic-messages","provider":"fake","model":"claude-fake-opus","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1777629602000}}`,
		`{"type":"message","id":"w1","parentId":"a1","timestamp":"2026-05-01T10:00:03.000Z","message":{"role":"reminder","content":"x"}}`,
		`{"type":"message","id":"u2","parentId":"w1","timestamp":"2026-05-01T10:00:04.000Z","message":{"role":"user","content":"cut sh`)
	r := b.call(map[string]any{"type": "switch_session", "sessionPath": cut})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, 1, transcripts())
	b.runPrompt("Which word? [[say:lynx]]")
	reqs := b.srv.MessagesRequests()
	conv := said(reqs[len(reqs)-1])
	assert.Equal(t, []string{"user: Remember the word lynx.", "assistant: Noted: lynx.", "user: Which word? [[say:lynx]]"}, conv)
	assert.NotContains(t, reqs[len(reqs)-1].Messages().Raw, "no signature", "thinking without a signature is left out")
	assert.Eventually(t, func() bool {
		s := b.stderr.String()
		return strings.Contains(s, "another folder") && strings.Contains(s, `messages of role \"reminder\"`) &&
			strings.Contains(s, "1 thinking blocks without an Anthropic signature")
	}, 5*time.Second, 20*time.Millisecond, "the warnings: %s", b.stderr.String())
	after, _ := os.ReadFile(cut)
	assert.True(t, strings.HasPrefix(string(after), content), "the file kept as it was, appended to")

	// Nothing to import: refused, no transcript, the file as it was.
	n := transcripts()
	empty, content := write("blank", header("blank-session", b.dir), user("u1", "", "   "), assistant("a1", "u1", " "))
	r = b.call(map[string]any{"type": "switch_session", "sessionPath": empty})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Contains(t, r.Get("error").String(), "holds no message the Claude CLI can be given")
	assert.Contains(t, r.Get("error").String(), empty, "the error names the file")
	assert.Equal(t, n, transcripts(), "no transcript written")
	after, _ = os.ReadFile(empty)
	assert.Equal(t, content, string(after))
	assert.True(t, b.call(map[string]any{"type": "get_state"}).Get("success").Bool(), "the bridge serves on")
}

// TestPiImportForkAsPi: a pi file with branches, opened in claude-rpc
// (imported: the CLI's transcript holds only the current branch), forks
// as pi 1.6.0 forks the same file: get_fork_messages lists what pi lists
// (every branch's user messages, by entry id), and a fork at a prompt on
// the current branch whose text the other branch repeats, or at one on
// the other branch, answers pi's text and leaves pi's messages; the CLI's
// next API request after the second carries the other branch's turns.
func TestPiImportForkAsPi(t *testing.T) {
	claudetest.EndToEnd(t)
	t.Parallel()
	pi := installPi16(t)
	srv := claudetest.Start(t)
	msg := func(id, parent, role, text string, sec int) string {
		m := fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}],"timestamp":17776296%02d000}`, text, sec)
		if role == "assistant" {
			m = fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"api":"anthropic-messages","provider":"fake","model":"claude-fake-opus","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":17776296%02d000}`, text, sec)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-05-01T10:00:%02d.000Z","message":%s}`, id, parent, sec, m)
	}
	branched := func(home, dir string) string {
		place := sessions.PiSessionPlace([]string{"HOME=" + home}, dir, "")
		require.NoError(t, os.MkdirAll(place.Dir, 0o700))
		p := filepath.Join(place.Dir, "2026-05-01T10-00-00-000Z_0198dddd-0000-7000-8000-000000000004.jsonl")
		lines := []string{
			fmt.Sprintf(`{"type":"session","version":3,"id":"0198dddd-0000-7000-8000-000000000004","timestamp":"2026-05-01T10:00:00.000Z","cwd":%q}`, dir),
			strings.Replace(msg("u1", "", "user", "Remember the word lynx.", 1), `"parentId":""`, `"parentId":null`, 1),
			msg("a1", "u1", "assistant", "Noted: lynx.", 2),
			msg("uA", "a1", "user", "again", 3), msg("aA", "uA", "assistant", "A", 4), msg("uD", "aA", "user", "deep", 5),
			msg("uB", "a1", "user", "again", 6), msg("aB", "uB", "assistant", "B", 7),
			msg("u4", "aB", "user", "more", 8), msg("a4", "u4", "assistant", "four", 9),
		}
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
		return p
	}
	texts := func(msgs gjson.Result) (out []string) {
		for _, m := range msgs.Array() {
			c := m.Get("content")
			if c.Type == gjson.String {
				out = append(out, c.String())
			} else {
				out = append(out, c.Get("0.text").String())
			}
		}
		return out
	}
	// pi: each fork from the file as it was written.
	piSays := func(entryID string) (forkPoints string, text string, msgs []string) {
		home, dir := t.TempDir(), t.TempDir()
		file := branched(home, dir)
		r := pi.commands(t, srv, home, dir, []map[string]any{
			{"type": "get_fork_messages"}, {"type": "fork", "entryId": entryID}, {"type": "get_messages"},
		}, "--session", file)
		for _, x := range r {
			require.True(t, x.Get("success").Bool(), "pi: %s", x.Raw)
		}
		return r[0].Get("data.messages").Raw, r[1].Get("data.text").String(), texts(r[2].Get("data.messages"))
	}
	home, dir := t.TempDir(), t.TempDir()
	file := branched(home, dir)
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir}, "--session", file)
	for _, entryID := range []string{"uB", "uD"} {
		points, text, msgs := piSays(entryID)
		r := b.call(map[string]any{"type": "switch_session", "sessionPath": file})
		require.True(t, r.Get("success").Bool(), r.Raw)
		assert.JSONEq(t, points, b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Raw, "get_fork_messages as pi's")
		r = b.call(map[string]any{"type": "fork", "entryId": entryID})
		require.True(t, r.Get("success").Bool(), r.Raw)
		assert.Equal(t, text, r.Get("data.text").String(), "fork %s: pi's text", entryID)
		assert.Equal(t, msgs, texts(b.call(map[string]any{"type": "get_messages"}).Get("data.messages")), "fork %s: pi's messages", entryID)
	}
	assert.Equal(t, []string{"Remember the word lynx.", "Noted: lynx.", "again", "A"}, texts(b.call(map[string]any{"type": "get_messages"}).Get("data.messages")))
	b.runPrompt("And deeper? [[say:lynx]]")
	reqs := srv.MessagesRequests()
	assert.Equal(t, []string{"user: Remember the word lynx.", "assistant: Noted: lynx.", "user: again", "assistant: A", "user: And deeper? [[say:lynx]]"},
		said(reqs[len(reqs)-1]), "the CLI resumes the other branch's turns")
}
