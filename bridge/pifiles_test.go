package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// TestPiFileIsTheEntries: the session's pi file holds what get_entries
// lists, in order, each entry as get_entries gives it plus the CLI session
// holding it; a session opened from the file has those entries (ids kept)
// and its name, and what comes next is appended to the same file.
func TestPiFileIsTheEntries(t *testing.T) {
	dir := t.TempDir()
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text")), replay(recording(t, "text"))}}
	r := newRig(t, fake, Options{PiSessions: true, SessionDir: dir})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("session_settled")
	require.True(t, r.call(map[string]any{"type": "set_session_name", "name": "named"}).Get("success").Bool())
	st := r.call(map[string]any{"type": "get_state"}).Get("data")
	file := st.Get("sessionFile").String()
	assert.Equal(t, dir, filepath.Dir(file), "--session-dir: pi's flat folder")
	entries := r.call(map[string]any{"type": "get_entries"}).Get("data.entries").Array()

	pf, err := sessions.ReadPi(file)
	require.NoError(t, err, "the name is in the file when set_session_name answers")
	assert.True(t, filepath.IsAbs(pf.Header.Cwd), pf.Header.Cwd)
	require.Len(t, pf.Entries, len(entries))
	for i, e := range pf.Entries {
		assert.NotEmpty(t, e.ClaudeSessionID, "entry %d: the CLI session holding it", i)
		assert.JSONEq(t, entries[i].Raw, string(e.Raw), "entry %d", i)
	}
	assert.Equal(t, st.Get("sessionId").String(), pf.Entries[len(pf.Entries)-1].ClaudeSessionID, "the CLI's session (as it said it)")
	assert.Equal(t, "named", pf.Name())

	// Opened again (a new session first, then back to the file).
	require.True(t, r.call(map[string]any{"type": "new_session", "parentSession": file}).Get("success").Bool())
	r2 := r.call(map[string]any{"type": "switch_session", "sessionPath": file})
	require.True(t, r2.Get("success").Bool(), r2.Raw)
	again := r.call(map[string]any{"type": "get_entries"}).Get("data.entries").Array()
	require.Len(t, again, len(entries))
	for i := range entries {
		assert.JSONEq(t, entries[i].Raw, again[i].Raw, "entry %d as read", i)
	}
	assert.Equal(t, "named", r.call(map[string]any{"type": "get_state"}).Get("data.sessionName").String())
	require.True(t, r.call(map[string]any{"type": "set_session_name", "name": "renamed"}).Get("success").Bool())
	pf, err = sessions.ReadPi(file)
	require.NoError(t, err)
	assert.Len(t, pf.Entries, len(entries)+1)
	assert.Equal(t, "renamed", pf.Name())
	assert.Equal(t, entries[len(entries)-1].Get("id").String(), pf.Entries[len(entries)].ParentID, "appended after the leaf")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	assert.Len(t, files, 1, "the new session held no message: no file")
}

// TestPiFileUnwritable: a session folder that cannot be written leaves the
// run as it is; the bridge says so on stderr.
func TestPiFileUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	logs := &syncBuffer{}
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}
	r := newRig(t, fake, Options{PiSessions: true, SessionDir: filepath.Join(blocker, "s"), Log: slog.New(slog.NewTextHandler(logs, nil))})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	end := r.event("agent_end")
	assert.NotEmpty(t, end.Get("messages").Array())
	assert.Eventually(t, func() bool { return strings.Contains(logs.String(), "pi file is not written") }, waitFor, 10*time.Millisecond)
}

// syncBuffer is a bytes.Buffer for a logger's writes from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAppendEntry: an entry's line in its pi file is what get_entries
// writes for it (encoding/json through MarshalJSON), byte for byte when
// its text has none of the characters encoding/json escapes for HTML, and
// the same JSON when it has; an entry read from a pi file is written as
// it was.
func TestAppendEntry(t *testing.T) {
	parent := "0badf00d"
	isErr := true
	tests := []struct {
		name  string
		entry entryJSON
		html  bool // the text has <, > or &
	}{
		{"model change", entryJSON{Type: "model_change", ID: "1234abcd", Timestamp: "2026-11-27T10:00:00.000Z", Provider: "anthropic", ModelID: "claude-x", ClaudeSessionID: "s-1"}, false},
		{"session info, no CLI session", entryJSON{Type: "session_info", ID: "1234abcd", ParentID: &parent, Timestamp: "t", Name: "n \"quoted\""}, false},
		{"compaction", entryJSON{Type: "compaction", ID: "1", Timestamp: "t", Summary: "s\n", FirstKeptEntryID: "2", TokensBefore: 9, ClaudeSessionID: "s"}, false},
		{"assistant message", entryJSON{Type: "message", ID: "1", ParentID: &parent, Timestamp: "t", ClaudeSessionID: "s",
			Message: &transform.Message{Role: transform.RoleAssistant, Content: []transform.Content{transform.TextContent("a\n\"b\"\t")}, Model: "m", StopReason: "stop", Timestamp: 5}}, false},
		{"tool result with <html>", entryJSON{Type: "message", ID: "1", Timestamp: "t", ClaudeSessionID: "s",
			Message: &transform.Message{Role: transform.RoleToolResult, ToolCallID: "c", ToolName: "bash", Content: []transform.Content{transform.TextContent("<a & b>")}, Details: json.RawMessage(`{"x":"<y>"}`), IsError: &isErr}}, true},
		{"user message without CLI session", entryJSON{Type: "message", ID: "1", Timestamp: "t",
			Message: &transform.Message{Role: transform.RoleUser, Content: []transform.Content{transform.TextContent("hi")}}}, false},
		{"read from a pi file", entryJSON{Type: "custom", ID: "1", raw: json.RawMessage(`{"type":"custom","id":"1","x":[1,2]}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.entry)
			require.NoError(t, err)
			got, err := appendEntry([]byte("x"), &tt.entry)
			require.NoError(t, err)
			require.Equal(t, "x", string(got[:1]))
			got = got[1:]
			if tt.entry.Message != nil {
				var w bytes.Buffer
				require.NoError(t, writeEntry(&w, &tt.entry))
				assert.Equal(t, string(got), w.String(), "writeEntry")
			}
			if tt.html {
				assert.JSONEq(t, string(want), string(got))
				assert.NotEqual(t, string(want), string(got), "encoding/json escapes <, > and & here")
			} else {
				assert.Equal(t, string(want), string(got))
			}
		})
	}
	bad := entryJSON{Type: "message", ID: "1", Message: &transform.Message{Role: transform.RoleAssistant,
		Content: []transform.Content{{Type: "toolCall", ID: "c", Name: "Bash", Arguments: json.RawMessage("{nope")}}}}
	got, err := appendEntry([]byte("x"), &bad)
	require.Error(t, err)
	assert.Equal(t, "x", string(got))
}

// TestPiLineOfALongMessage: an entry whose message is past longEntry is
// written as it is encoded, the same line appendEntry makes, and counts as
// the conversation when it is a user or assistant message; a shorter one
// is its bytes; one that does not encode is none.
func TestPiLineOfALongMessage(t *testing.T) {
	long := strings.Repeat("a \"quoted\" line\n", longEntry/10)
	for _, role := range []string{transform.RoleAssistant, transform.RoleUser, transform.RoleToolResult} {
		e := entryJSON{Type: "message", ID: "1", Timestamp: "t", ClaudeSessionID: "s",
			Message: &transform.Message{Role: role, ToolCallID: "c", Content: []transform.Content{transform.TextContent(long)}}}
		line, ok := piLine(&e)
		require.True(t, ok)
		require.NotNil(t, line.Write, role)
		assert.Nil(t, line.Bytes)
		assert.Equal(t, role != transform.RoleToolResult, line.Conversation, role)
		want, err := appendEntry(nil, &e)
		require.NoError(t, err)
		var w bytes.Buffer
		require.NoError(t, line.Write(&w))
		assert.Equal(t, string(want), w.String(), role)
	}
	short := entryJSON{Type: "message", ID: "1", Timestamp: "t", Message: &transform.Message{Role: transform.RoleUser, Content: []transform.Content{transform.TextContent("hi")}}}
	line, ok := piLine(&short)
	require.True(t, ok)
	assert.Nil(t, line.Write)
	want, _ := appendEntry(nil, &short)
	assert.Equal(t, string(want), string(line.Bytes))
	bad := entryJSON{Type: "message", ID: "1", Message: &transform.Message{Role: transform.RoleAssistant, Content: []transform.Content{
		transform.TextContent(long), {Type: "toolCall", ID: "c", Name: "Bash", Arguments: json.RawMessage("{nope")}}}}
	_, ok = piLine(&bad)
	assert.False(t, ok)
}

// TestTreeOfABranchedFile: get_tree of a pi file with branches is pi's
// tree (SessionManager.getTree): each entry under its parent, children
// oldest first, an entry whose parent is not in the file a root; the leaf
// is the file's last entry.
func TestTreeOfABranchedFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "branched.jsonl")
	lines := []string{
		`{"type":"session","version":3,"id":"0198aaaa-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}`,
		`{"type":"model_change","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","provider":"anthropic","modelId":"m"}`,
		`{"type":"thinking_level_change","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:03.000Z","thinkingLevel":"high"}`,
		`{"type":"thinking_level_change","id":"e3","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","thinkingLevel":"low"}`,
		`{"type":"session_info","id":"e4","parentId":"e3","timestamp":"2026-01-01T00:00:04.000Z","name":"n"}`,
		`{"type":"label","id":"e5","parentId":"e4","timestamp":"2026-01-01T00:00:05.000Z","targetId":"e2","label":"there"}`,
		`{"type":"session_info","id":"e6","parentId":"gone","timestamp":"2026-01-01T00:00:06.000Z","name":"orphan"}`,
	}
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	r := newRig(t, &claudetest.Transport{}, Options{PiSessions: true, SessionDir: dir})
	res := r.call(map[string]any{"type": "switch_session", "sessionPath": file})
	require.True(t, res.Get("success").Bool(), res.Raw)
	tree := r.call(map[string]any{"type": "get_tree"}).Get("data")
	var shape func(n gjson.Result) string
	shape = func(n gjson.Result) string {
		s := n.Get("entry.id").String()
		if l := n.Get("label").String(); l != "" {
			s += "[" + l + "]"
		}
		var kids []string
		for _, c := range n.Get("children").Array() {
			kids = append(kids, shape(c))
		}
		if len(kids) > 0 {
			s += "(" + strings.Join(kids, " ") + ")"
		}
		return s
	}
	var roots []string
	for _, n := range tree.Get("tree").Array() {
		roots = append(roots, shape(n))
	}
	assert.Equal(t, []string{"e1(e3(e4(e5)) e2[there])", "e6"}, roots)
	assert.Equal(t, "e6", tree.Get("leafId").String())
}

// TestClearThenFollowUpSameRun: /clear in a run that goes on (a follow-up
// queued while it ran) starts the session over at the clear: the
// messages after it go to the new session's pi file, not the old one's,
// and the run's next CLI turn works on the CLI's new session, on a
// persistent and a per-turn transport. Recorded: clear-then-text (the
// real CLI reports its new session on the init line after
// conversation_reset, and runs the follow-up there).
func TestClearThenFollowUpSameRun(t *testing.T) {
	rec := recording(t, "clear-then-text")
	first := slices.IndexFunc(rec.Lines, func(l []byte) bool { return gjson.GetBytes(l, "type").String() == "result" })
	require.Positive(t, first)
	newID := gjson.GetBytes(rec.Lines[first], "session_id").String()
	for _, per := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "pipe"}[per], func(t *testing.T) {
			dir := t.TempDir()
			queued := make(chan struct{})
			fake := &claudetest.Transport{Per: per, Scenarios: []claudetest.Scenario{
				replay(recording(t, "text")),
				func(turn *claudetest.Turn) { <-queued; turn.Emit(rec.Lines[:first+1]...) },
				func(turn *claudetest.Turn) { turn.Emit(rec.Lines[first+1:]...) },
			}}
			r := newRig(t, fake, Options{PiSessions: true, SessionDir: dir})
			r.sendf(`{"type":"prompt","message":"Remember pelican"}`)
			r.event("session_settled")
			oldFile := r.call(map[string]any{"type": "get_state"}).Get("data.sessionFile").String()
			r.sendf(`{"type":"prompt","message":"/clear"}`)
			require.True(t, r.call(map[string]any{"type": "follow_up", "message": "after [[say:two]]"}).Get("success").Bool())
			close(queued)
			r.event("session_settled")

			turns := fake.Turns()
			require.Len(t, turns, 3)
			assert.Equal(t, newID, turns[2].Session.ID, "the follow-up's turn works on the CLI's new session")
			st := r.call(map[string]any{"type": "get_state"}).Get("data")
			assert.Equal(t, newID, st.Get("sessionId").String())
			newFile := st.Get("sessionFile").String()
			require.NotEqual(t, oldFile, newFile, "a new pi file after /clear")

			old, err := sessions.ReadPi(oldFile)
			require.NoError(t, err)
			for _, e := range old.Entries {
				assert.NotContains(t, string(e.Raw), "[[say:two]]", "the old session's file has nothing of after the clear")
			}
			var pf *sessions.PiFile
			require.Eventually(t, func() bool { // written a moment after the run
				if pf, err = sessions.ReadPi(newFile); err != nil {
					return false
				}
				n := 0
				for _, e := range pf.Entries {
					if e.Type == "message" {
						n++
					}
				}
				return n >= 2
			}, waitFor, 10*time.Millisecond, "the new session's file")
			assert.Equal(t, newID, pf.Header.ClaudeSessionID, "the new file begins on the CLI's new session")
			var texts []string
			for _, e := range pf.Entries {
				assert.Equal(t, newID, e.ClaudeSessionID, "entry %s", e.Raw)
				if e.Type == "message" {
					texts = append(texts, gjson.GetBytes(e.Raw, "message.role").String()+": "+gjson.GetBytes(e.Raw, "message.content.0.text").String())
				}
			}
			assert.Equal(t, []string{"user: after [[say:two]]", "assistant: two"}, texts, "the new file: what came after the clear, once")
			entries := r.call(map[string]any{"type": "get_entries"}).Get("data.entries").Array()
			assert.Len(t, entries, len(pf.Entries), "get_entries is the new file's")
			msgs := r.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array()
			assert.Len(t, msgs, 2, "get_messages: the session after the clear")
		})
	}
}

// TestForkOnABranchedPiFile: a session opened from a pi file with
// branches (pi's own, imported for the CLI, whose transcript holds only
// the current branch) is forked as pi forks it (AgentSessionRuntime.fork):
// get_fork_messages lists the user messages of every branch by entry id
// (getUserMessagesForForking); fork at one on the current branch whose
// text another branch repeats forks there; fork at one on another branch
// makes a session of the file's entries before it, which the CLI then
// resumes.
func TestForkOnABranchedPiFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "branched.jsonl")
	msg := func(id, parent, role, text string, at int) string {
		m := fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}],"timestamp":%d}`, text, at)
		if role == "assistant" {
			m = fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"api":"anthropic-messages","provider":"anthropic","model":"claude-fake-opus","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":%d}`, text, at)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:%02d.000Z","message":%s}`, id, parent, at, m)
	}
	lines := []string{
		`{"type":"session","version":3,"id":"0198aaaa-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}`,
		`{"type":"model_change","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","provider":"anthropic","modelId":"claude-fake-opus"}`,
		msg("u1", "e1", "user", "first", 2), msg("a1", "u1", "assistant", "one", 3),
		// Branch A: left behind.
		msg("uA", "a1", "user", "again", 4), msg("aA", "uA", "assistant", "A", 5), msg("uD", "aA", "user", "deep", 6),
		// Branch B, the current one: "again" once more.
		msg("uB", "a1", "user", "again", 7), msg("aB", "uB", "assistant", "B", 8),
		msg("u4", "aB", "user", "more", 9), msg("a4", "u4", "assistant", "four", 10),
	}
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}
	r := newRig(t, fake, Options{PiSessions: true, SessionDir: dir})
	open := func() {
		t.Helper()
		res := r.call(map[string]any{"type": "switch_session", "sessionPath": file})
		require.True(t, res.Get("success").Bool(), res.Raw)
	}
	texts := func() (out []string) {
		for _, m := range r.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array() {
			out = append(out, m.Get("content.0.text").String())
		}
		return out
	}
	open()
	assert.Equal(t, []string{"first", "one", "again", "B", "more", "four"}, texts(), "the current branch")
	points := r.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages")
	assert.JSONEq(t, `[{"entryId":"u1","text":"first"},{"entryId":"uA","text":"again"},{"entryId":"uD","text":"deep"},{"entryId":"uB","text":"again"},{"entryId":"u4","text":"more"}]`, points.Raw,
		"every branch's user messages, by entry id, as pi lists them")

	// On the current branch, its text repeated by the other branch before it.
	res := r.call(map[string]any{"type": "fork", "entryId": "uB"})
	require.True(t, res.Get("success").Bool(), res.Raw)
	assert.Equal(t, "again", res.Get("data.text").String())
	assert.Equal(t, []string{"first", "one"}, texts())

	// On the other branch.
	open()
	res = r.call(map[string]any{"type": "fork", "entryId": "uD", "restoreFiles": true})
	require.True(t, res.Get("success").Bool(), res.Raw)
	assert.Equal(t, "deep", res.Get("data.text").String())
	assert.False(t, res.Get("data.restoredFiles.restored").Bool())
	assert.Contains(t, res.Get("data.restoredFiles.error").String(), "another branch")
	assert.Equal(t, []string{"first", "one", "again", "A"}, texts(), "the other branch's messages before it")
	st := r.call(map[string]any{"type": "get_state"}).Get("data")
	assert.NotEqual(t, file, st.Get("sessionFile").String(), "a new session")
	r.sendf(`{"type":"prompt","message":"deeper"}`)
	r.event("session_settled")
	turns := fake.Turns()
	require.NotEmpty(t, turns)
	last := turns[len(turns)-1].Session
	assert.Equal(t, st.Get("sessionId").String(), last.ID)
	assert.True(t, last.Exists, "the CLI resumes the branch's transcript")
	assert.Empty(t, last.ForkFrom)
	var pf *sessions.PiFile
	var err error
	require.Eventually(t, func() bool { // written a moment after the run (its own goroutine)
		pf, err = sessions.ReadPi(st.Get("sessionFile").String())
		return err == nil
	}, waitFor, 10*time.Millisecond, "the fork's pi file")
	assert.Equal(t, file, pf.Header.ParentSession)
}
