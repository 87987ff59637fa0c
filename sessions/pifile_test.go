package sessions

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPiSessionPlace(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(cwd, ".pi"), 0o755))
	env := []string{HomeVar() + "=" + home}
	wantDefault := filepath.Join(home, ".pi", "agent", "sessions", piFolderName(cwd))

	assert.Equal(t, PiPlace{Dir: wantDefault, Cwd: cwd}, PiSessionPlace(env, cwd, ""))
	assert.Equal(t, PiPlace{Dir: filepath.Join(home, "a", "sessions", piFolderName(cwd)), Cwd: cwd},
		PiSessionPlace(append(env, PiAgentDirEnv+"=~/a"), cwd, ""), "PI_CODING_AGENT_DIR, ~ expanded")
	assert.Equal(t, PiPlace{Dir: filepath.Join(home, "e"), Shared: true, Cwd: cwd},
		PiSessionPlace(append(env, PiSessionDirEnv+"="+filepath.Join(home, "e")), cwd, ""))
	assert.Equal(t, PiPlace{Dir: filepath.Join(cwd, "rel"), Shared: true, Cwd: cwd},
		PiSessionPlace(append(env, PiSessionDirEnv+"="+filepath.Join(home, "e")), cwd, "rel"),
		"--session-dir wins over the environment; relative to cwd")

	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi", "agent"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi", "agent", "settings.json"), []byte(`{"sessionDir":"~/g"}`), 0o644))
	assert.Equal(t, filepath.Join(home, "g"), PiSessionPlace(env, cwd, "").Dir, "the agent folder's settings")
	abs := filepath.Join(home, "p") // absolute on every system (a drive on Windows)
	settings, err := json.Marshal(map[string]string{"sessionDir": abs})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cwd, ".pi", "settings.json"), settings, 0o644))
	assert.Equal(t, abs, PiSessionPlace(env, cwd, "").Dir, "the project's settings over the agent folder's")
}

func TestPiFolderName(t *testing.T) {
	// pi's getDefaultSessionDirPath: one leading separator removed; / \ : to -.
	assert.Equal(t, "--home-u-my proj--", piFolderName("/home/u/my proj"))
	assert.Equal(t, "--C--Users-u-p--", piFolderName(`C:\Users\u\p`))
}

func TestPiFileName(t *testing.T) {
	at := time.Date(2026, 11, 27, 14, 5, 6, 789e6, time.UTC)
	assert.Equal(t, "2026-11-27T14-05-06-789Z_abc.jsonl", PiFileName(at, "abc"))
}

func TestIsPiID(t *testing.T) {
	for id, ok := range map[string]bool{
		"0198c0de-aaaa-7bbb-8ccc-0123456789ab": true, "my.session_1": true, "a": true,
		"": false, "..": false, "a/b": false, `a\b`: false, "-a": false, "a..b": false, ".a": false,
	} {
		assert.Equal(t, ok, IsPiID(id), id)
	}
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	var b []byte
	for _, l := range lines {
		b = append(b, l...)
		b = append(b, '\n')
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func TestReadPi(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	writeLines(t, good,
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-27T00:00:00.000Z","cwd":"/w","claudeSessionId":"c1"}`,
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}`,
		`not json`,
		`{"type":"session_info","id":"b","parentId":"a","timestamp":"t","name":" one "}`,
		`{"type":"message","id":"c","parentId":"b","timestamp":"t","claudeSessionId":"c1","message":{"role":"assistant","content":[]}}`,
		`{"type":"message","id":"d","parentId":"a","timestamp":"t","message":{"role":"user","content":"other branch"}}`,
		`{"type":"session_info","id":"e","parentId":"d","timestamp":"t","name":"two"}`,
		`{"type":"message","id":"f","parentId":"d","timestamp":"t","mess`, // cut short: a killed writer
	)
	pf, err := ReadPi(good)
	require.NoError(t, err)
	assert.Equal(t, PiHeader{Type: "session", Version: 3, ID: "s1", Timestamp: "2026-11-27T00:00:00.000Z", Cwd: "/w", ClaudeSessionID: "c1"}, pf.Header)
	assert.Len(t, pf.Entries, 5)
	assert.Equal(t, 2, pf.Skipped)
	assert.Equal(t, "c1", pf.Entries[3-1].ClaudeSessionID)
	var ids []string
	for _, e := range pf.Branch() {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []string{"a", "d", "e"}, ids, "the leaf is the last entry; its branch")
	assert.Equal(t, "two", pf.Name())

	for name, lines := range map[string][]string{
		"transcript": {`{"type":"user","uuid":"u","message":{"role":"user","content":"x"}}`},
		"no id":      {`{"type":"session","version":3}`},
		"empty":      {},
		"garbage":    {"\x00\x01", "{"},
	} {
		p := filepath.Join(dir, name+".jsonl")
		writeLines(t, p, lines...)
		before, _ := os.ReadFile(p)
		_, err := ReadPi(p)
		assert.ErrorIs(t, err, ErrNotPiSession, name)
		after, _ := os.ReadFile(p)
		assert.Equal(t, before, after, "%s: nothing written", name)
	}
	_, err = ReadPi(dir)
	assert.ErrorContains(t, err, "not a file")
}

// TestPiWriterWrittenLines: an entry that writes itself is held like
// the others until the session holds a conversation, which its
// Conversation says, and then written as a line in its place.
func TestPiWriterWrittenLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), PiFileName(time.Now(), "s1"))
	w, err := NewPiWriter(path, PiHeader{ID: "s1", Timestamp: "t", Cwd: "/w"})
	require.NoError(t, err)
	written := func(line string, conversation bool) PiLine {
		return PiLine{Write: func(w io.Writer) error { _, err := io.WriteString(w, line); return err }, Conversation: conversation}
	}
	require.NoError(t, w.AppendLines(written(`{"type":"custom","id":"a","parentId":null}`, false)))
	assert.NoFileExists(t, path, "no conversation yet: held")
	require.NoError(t, w.AppendLines(PiLine{Bytes: []byte(`{"type":"label","id":"b","parentId":"a"}`)},
		written(`{"type":"message","id":"c","parentId":"b","message":{"role":"assistant","content":[]}}`, true)))
	pf, err := ReadPi(path)
	require.NoError(t, err)
	require.Len(t, pf.Entries, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{pf.Entries[0].ID, pf.Entries[1].ID, pf.Entries[2].ID})
	assert.Zero(t, w.Held())
}

func TestPiWriter(t *testing.T) {
	place := PiPlace{Dir: filepath.Join(t.TempDir(), "s", "--w--"), Cwd: "/w"}
	path := filepath.Join(place.Dir, PiFileName(time.Now(), "s1"))
	w, err := NewPiWriter(path, PiHeader{ID: "s1", Timestamp: "t", Cwd: "/w", ClaudeSessionID: "s1"})
	require.NoError(t, err)
	require.NoError(t, w.Append([]byte(`{"type":"model_change","id":"a","parentId":null}`)))
	assert.NoFileExists(t, path, "no conversation yet: held")
	assert.False(t, w.Created())
	require.NoError(t, w.Append([]byte(`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"hi"}}`)))
	require.NoError(t, w.Append([]byte(`{"type":"session_info","id":"c","parentId":"b","name":"n"}`)))
	pf, err := ReadPi(path)
	require.NoError(t, err)
	assert.Equal(t, PiHeader{Type: "session", Version: 3, ID: "s1", Timestamp: "t", Cwd: "/w", ClaudeSessionID: "s1"}, pf.Header)
	assert.Len(t, pf.Entries, 3)
	assert.Equal(t, "n", pf.Name())
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the user's alone")
		st, err = os.Stat(place.Dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	}
	found, ok := FindPi(place, "s1")
	assert.True(t, ok)
	assert.Equal(t, path, found)
	_, ok = FindPi(place, "../s1")
	assert.False(t, ok)
	found, ok = FindPi(place, "s2")
	assert.False(t, ok)
	assert.Empty(t, found, "none: no path")
	found, ok = FindPiByClaude(place, "s1")
	assert.True(t, ok)
	assert.Equal(t, path, found)
	_, ok = FindPi(PiPlace{Dir: place.Dir, Shared: true, Cwd: "/elsewhere"}, "s1")
	assert.False(t, ok, "a shared folder's file of another cwd")

	// Reopened for appending.
	w2, err := AppendTo(path, pf.Header)
	require.NoError(t, err)
	require.NoError(t, w2.Append([]byte(`{"type":"label","id":"d","parentId":"c"}`)))
	pf, err = ReadPi(path)
	require.NoError(t, err)
	assert.Len(t, pf.Entries, 4)

	// A line cut short stays a line of its own: the next entry is whole.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"message","id":"e","par`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, w2.Append([]byte(`{"type":"label","id":"f","parentId":"d"}`)))
	pf, err = ReadPi(path)
	require.NoError(t, err)
	assert.Len(t, pf.Entries, 5)
	assert.Equal(t, 1, pf.Skipped)
	assert.Equal(t, "f", pf.Entries[4].ID)
}

func TestPiWritersOnOneFile(t *testing.T) {
	// Two bridges on one session: whole lines, none lost.
	path := filepath.Join(t.TempDir(), "f.jsonl")
	first, err := NewPiWriter(path, PiHeader{ID: "s"})
	require.NoError(t, err)
	second, err := NewPiWriter(path, PiHeader{ID: "s"})
	require.NoError(t, err)
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = 'x'
	}
	entry := func(who string, i int) []byte {
		return []byte(`{"type":"message","id":"` + who + string(rune('a'+i%26)) + `","message":{"role":"user","content":"` + string(big) + `"}}`)
	}
	var wg sync.WaitGroup
	for who, w := range map[string]*PiWriter{"a": first, "b": second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				assert.NoError(t, w.Append(entry(who, i)))
			}
		}()
	}
	wg.Wait()
	pf, err := ReadPi(path)
	require.NoError(t, err)
	assert.Equal(t, 0, pf.Skipped, "no interleaved line")
	assert.Len(t, pf.Entries, 40)
}

func TestPiWriterUnwritable(t *testing.T) {
	// A path through a file (root writes anywhere, so no chmod).
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	w, err := NewPiWriter(filepath.Join(blocker, "sub", "x.jsonl"), PiHeader{ID: "s"})
	require.NoError(t, err)
	msg := []byte(`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`)
	assert.Error(t, w.Append(msg))
	assert.False(t, w.Created())
	assert.Len(t, w.pending, 1, "held for the next try")
}

func TestLatestPi(t *testing.T) {
	dir := t.TempDir()
	place := PiPlace{Dir: dir, Shared: true, Cwd: "/w"}
	_, _, ok := LatestPi(place)
	assert.False(t, ok)
	old := time.Now().Add(-time.Hour)
	for i, f := range []struct{ name, cwd string }{{"a.jsonl", "/w"}, {"b.jsonl", "/w"}, {"c.jsonl", "/other"}} {
		p := filepath.Join(dir, f.name)
		writeLines(t, p, `{"type":"session","version":3,"id":"`+f.name+`","cwd":"`+f.cwd+`"}`)
		at := old.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(p, at, at))
	}
	p, _, ok := LatestPi(place)
	assert.True(t, ok)
	assert.Equal(t, filepath.Join(dir, "b.jsonl"), p, "c is another folder's")
	place.Shared = false
	p, _, _ = LatestPi(place)
	assert.Equal(t, filepath.Join(dir, "c.jsonl"), p, "a folder of its own: every file is its")
}

// TestFindPiPrefix: an id's beginning finds the session pi 1.6.0's
// --session finds: of those whose id begins so, the one with the latest
// activity (its newest user or assistant message, else its header's time),
// whatever the files' order or modification times.
func TestFindPiPrefix(t *testing.T) {
	dir := t.TempDir()
	place := PiPlace{Dir: dir, Cwd: "/w"}
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
		return p
	}
	msg := func(ts string, role string, at int64) string {
		return fmt.Sprintf(`{"type":"message","id":"m%d","parentId":null,"timestamp":%q,"message":{"role":%q,"content":"x","timestamp":%d}}`, at, ts, role, at)
	}
	// Begun last, but its newest message is the oldest activity.
	a := write("1.jsonl", `{"type":"session","version":3,"id":"0198aaaa","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/w"}`,
		msg("2026-03-01T00:00:01.000Z", "user", 1000))
	// Begun first; a message of late.
	b := write("2.jsonl", `{"type":"session","version":3,"id":"0198bbbb","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`,
		msg("2026-01-01T00:00:01.000Z", "user", 5000), `{"type":"label","id":"l","parentId":"m5000","timestamp":"2027-01-01T00:00:00.000Z","targetId":"m5000","label":"late, not a message"}`)
	// No message: its header's time, later than both.
	c := write("3.jsonl", `{"type":"session","version":3,"id":"0199cccc","timestamp":"2026-06-01T00:00:00.000Z","cwd":"/w"}`)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(b, old, old), "the file's time is not pi's")

	found, ok := FindPiPrefix(place, "0198")
	assert.True(t, ok)
	assert.Equal(t, b, found, "the latest activity of those that match")
	found, ok = FindPiPrefix(place, "0198a")
	assert.True(t, ok)
	assert.Equal(t, a, found)
	found, ok = FindPiPrefix(place, "01")
	assert.True(t, ok)
	assert.Equal(t, c, found, "a session without messages: its header's time")
	_, ok = FindPiPrefix(place, "0197")
	assert.False(t, ok)
	_, ok = FindPiPrefix(place, "../0198")
	assert.False(t, ok, "no path")
	_, ok = FindPiPrefix(PiPlace{Dir: dir, Shared: true, Cwd: "/elsewhere"}, "0198")
	assert.False(t, ok, "a shared folder's files of another cwd")
}
