package sessions

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateTranscript(t *testing.T) {
	cfg, cwd := t.TempDir(), "/some/project"
	id := NewID()
	lines := [][]byte{
		[]byte(`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`),
		[]byte(`{"type":"assistant","uuid":"u2","parentUuid":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"yo"}]}}`),
	}
	path, err := CreateTranscript(cfg, cwd, id, lines)
	require.NoError(t, err)
	assert.Equal(t, TranscriptPath(cfg, cwd, id), path)
	tr, err := ReadTranscript(path)
	require.NoError(t, err)
	assert.Len(t, tr.Conversation(), 2)
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "the conversation is the user's alone")
		st, err = os.Stat(filepath.Dir(path))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o700), st.Mode().Perm())
	}
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = CreateTranscript(cfg, cwd, id, lines[:1])
	assert.ErrorIs(t, err, fs.ErrExist, "never overwritten")
	_, err = CreateTranscript(cfg, "/another/project", id, lines[:1])
	assert.ErrorIs(t, err, fs.ErrExist, "nor made twice under another folder")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	_, err = CreateTranscript(cfg, cwd, "../x", lines)
	assert.EqualError(t, err, `"../x" is no session id`)
	_, err = CreateTranscript(cfg, cwd, NewID(), nil)
	assert.EqualError(t, err, "a transcript needs a line")

	blocked := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(blocked, "projects"), nil, 0o600)) // a file where the folder goes
	_, err = CreateTranscript(blocked, cwd, NewID(), lines)
	assert.Error(t, err)
}
