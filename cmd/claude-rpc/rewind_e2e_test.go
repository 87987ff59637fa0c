//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// fileText is path's content, "(none)" when it does not exist.
func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "(none)"
	}
	require.NoError(t, err)
	return string(b)
}

// filesTurns runs three prompts in b: the first changes no file, the
// second writes notes (there before, "original\n"), the third edits it
// and creates made. It returns their fork points.
func filesTurns(t *testing.T, b *rpcProc) (notes, made string, points []gjson.Result) {
	t.Helper()
	notes, made = filepath.Join(b.dir, "notes.txt"), filepath.Join(b.dir, "made.txt")
	require.NoError(t, os.WriteFile(notes, []byte("original\n"), 0o644))
	b.runPrompt("one [[say:nothing changed]]")
	b.runPrompt("two [[write:" + notes + "|written once]]")
	b.runPrompt("three [[edit:" + notes + "|written once|edited twice]][[write:" + made + "|made by a tool]]")
	require.Equal(t, "edited twice", fileText(t, notes), "the tools ran")
	require.Equal(t, "made by a tool", fileText(t, made), "the tools ran")
	points = b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages").Array()
	require.Len(t, points, 3)
	return notes, made, points
}

func TestForkRestoresFiles(t *testing.T) { forEachTransport(t, testForkRestoresFiles) }

// fork {restoreFiles:true} at a prompt puts the files the tools changed
// from it on back as they were when it was sent (through the running
// process on stream, a process started for it on pipe and pty), and forks
// as fork does; the answer lists what was put back.
func testForkRestoresFiles(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp, "--permission-mode", "acceptEdits")
	notes, made, points := filesTurns(t, b)
	sid := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()

	// Bad input changes nothing: no fork, no file put back.
	for _, bad := range []map[string]any{
		{"type": "fork", "entryId": points[1].Get("entryId").String(), "restoreFiles": "yes"},
		{"type": "branch", "entryId": points[1].Get("entryId").String(), "restoreFiles": 1},
		{"type": "fork", "entryId": "no-such-entry", "restoreFiles": true},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), "%v: %s", bad, r.Raw)
		assert.NotEmpty(t, r.Get("error").String(), "%v", bad)
	}
	assert.Contains(t, b.call(map[string]any{"type": "fork", "entryId": "x", "restoreFiles": "yes"}).Get("error").String(), `"restoreFiles" must be a boolean`)
	assert.Equal(t, sid, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	assert.Equal(t, "edited twice", fileText(t, notes))

	// At the second prompt: its write and the third's edit and new file
	// are undone. On pty the fork names the prompt by its pi entry id
	// (get_entries), which the bridge finds in the CLI's transcript: the
	// same prompt, the same checkpoint.
	at := points[1].Get("entryId").String()
	if tp == "pty" {
		var users []string
		for _, e := range b.call(map[string]any{"type": "get_entries"}).Get("data.entries").Array() {
			if e.Get("message.role").String() == "user" {
				users = append(users, e.Get("id").String())
			}
		}
		require.Len(t, users, 3)
		at = users[1]
		require.NotEqual(t, points[1].Get("entryId").String(), at, "a pi entry id, not the CLI's uuid")
	}
	r := b.call(map[string]any{"type": "fork", "entryId": at, "restoreFiles": true})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, "two [[write:"+notes+"|written once]]", r.Get("data.text").String())
	rf := r.Get("data.restoredFiles")
	require.True(t, rf.Get("restored").Bool(), r.Raw)
	assert.ElementsMatch(t, []string{notes, made}, toStrings(rf.Get("files").Array()), r.Raw)
	assert.Positive(t, rf.Get("insertions").Int()+rf.Get("deletions").Int(), r.Raw)
	assert.False(t, rf.Get("error").Exists(), r.Raw)
	assert.Equal(t, "original\n", fileText(t, notes), "the file is as it was before the second prompt")
	assert.Equal(t, "(none)", fileText(t, made), "the file the third prompt made is gone")

	// Forked as fork forks: the new session holds the first turn.
	assert.NotEqual(t, sid, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	assert.Equal(t, []string{"user", "assistant"}, b.roles())
	b.runPrompt("instead [[say:other way]]")
	assert.NotContains(t, b.lastMessagesRaw(), "written once")

	// fork without restoreFiles leaves the files be, and its answer has
	// no restoredFiles.
	require.NoError(t, os.WriteFile(notes, []byte("by hand\n"), 0o644))
	first := b.call(map[string]any{"type": "get_fork_messages"}).Get("data.messages.0.entryId").String()
	r = b.call(map[string]any{"type": "fork", "entryId": first})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.False(t, r.Get("data.restoredFiles").Exists(), r.Raw)
	assert.Equal(t, "by hand\n", fileText(t, notes))
}

func toStrings(rs []gjson.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// TestForkRestoreFilesRefused: what restoreFiles cannot restore is said in
// restoredFiles, the files stay as they are, and the fork is made: with
// --restore-files=false (no checkpoints kept), and in a session whose
// turns ran without checkpoints (resumed by a bridge that keeps them).
func TestForkRestoreFilesRefused(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--restore-files=false", "--permission-mode", "acceptEdits")
	notes, _, points := filesTurns(t, b)
	sid := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	r := b.call(map[string]any{"type": "fork", "entryId": points[1].Get("entryId").String(), "restoreFiles": true})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.False(t, r.Get("data.restoredFiles.restored").Bool(), r.Raw)
	assert.Contains(t, r.Get("data.restoredFiles.error").String(), "--restore-files=false", r.Raw)
	assert.Empty(t, r.Get("data.restoredFiles.files").Array(), r.Raw)
	assert.Equal(t, "edited twice", fileText(t, notes))
	assert.Equal(t, []string{"user", "assistant"}, b.roles(), "forked all the same")
	code, _ := b.closeAndWait(30 * time.Second)
	require.Equal(t, 0, code)

	for _, tp := range transports {
		b2 := startBridgeWith(t, bridgeOpts{srv: b.srv, cli: b.cli, home: b.home, dir: b.dir}, "--transport", tp, "--session", sid)
		r = b2.call(map[string]any{"type": "fork", "entryId": points[1].Get("entryId").String(), "restoreFiles": true})
		require.True(t, r.Get("success").Bool(), "%s: %s", tp, r.Raw)
		assert.False(t, r.Get("data.restoredFiles.restored").Bool(), "%s: %s", tp, r.Raw)
		assert.Equal(t, "No file checkpoint found for this message.", r.Get("data.restoredFiles.error").String(), "%s: %s", tp, r.Raw)
		assert.Equal(t, "edited twice", fileText(t, notes), tp)
		assert.Equal(t, []string{"user", "assistant"}, b2.roles(), tp)
		code, _ := b2.closeAndWait(30 * time.Second)
		require.Equal(t, 0, code, tp)
	}
}
