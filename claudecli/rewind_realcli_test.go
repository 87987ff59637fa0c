package claudecli_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// runTurns runs each prompt as a turn of session id on tr, the user line
// given uuid uuids[i], and reads it to its end.
func runTurns(t *testing.T, tr claudecli.Transport, id string, prompts, uuids []string) {
	t.Helper()
	for i, p := range prompts {
		turn, err := tr.Turn(claudecli.Session{ID: id, Exists: i > 0}, claudecli.UserLineID(p, nil, uuids[i]))
		require.NoError(t, err)
		for {
			line, err := turn.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			if claudecli.IsResult(line) {
				turn.Release()
			}
		}
	}
}

// TestRewindFilesOfTheRealCLI: on the stream transport the running process
// rewinds (the config given for a process of its own names no CLI, so
// none could have); on pipe a process started for it does, from the
// transcript's checkpoints; without FileCheckpoints the CLI says
// rewinding is off.
func TestRewindFilesOfTheRealCLI(t *testing.T) {
	cli := claudetest.CLI(t)
	srv := claudetest.Start(t)
	for _, c := range []struct {
		name, transport string
		on              bool
		err             string
	}{
		{"stream", claudecli.TransportStream, true, ""},
		{"pipe", claudecli.TransportPipe, true, ""},
		{"stream without checkpoints", claudecli.TransportStream, false, "File rewinding is not enabled."},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, "data.txt") // no \n in a Windows path: the fake API reads \n in a marker as a line break
			require.NoError(t, os.WriteFile(notes, []byte("original\n"), 0o644))
			cfg := claudecli.Config{Path: cli, Dir: dir, Env: srv.CLIEnv(t.TempDir()), PermissionMode: "acceptEdits", FileCheckpoints: c.on}
			tr, err := claudecli.New(c.transport, cfg, 1<<20)
			require.NoError(t, err)
			defer tr.Close(5 * time.Second)
			id, uuids := "5e551011-0000-4000-8000-000000000001", []string{"aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"}
			runTurns(t, tr, id, []string{"[[write:" + notes + "|once]]", "[[edit:" + notes + "|once|twice]]"}, uuids)
			require.FileExists(t, notes)
			b, _ := os.ReadFile(notes)
			require.Equal(t, "twice", string(b))

			own := cfg
			if c.transport == claudecli.TransportStream {
				own.Path = filepath.Join(dir, "no-such-cli")
			}
			r, err := claudecli.RewindFiles(context.Background(), tr, own, claudecli.Session{ID: id, Exists: true}, uuids[1])
			if c.err != "" {
				assert.EqualError(t, err, c.err)
				b, _ = os.ReadFile(notes)
				assert.Equal(t, "twice", string(b))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, claudecli.Rewound{Files: []string{notes}, Insertions: 1, Deletions: 1}, r)
			b, _ = os.ReadFile(notes)
			assert.Equal(t, "once", string(b), "as it was when the second line was sent")

			_, err = claudecli.RewindFiles(context.Background(), tr, own, claudecli.Session{ID: id, Exists: true}, "bbbbbbbb-0000-4000-8000-000000000009")
			assert.EqualError(t, err, "No file checkpoint found for this message.")
			r, err = claudecli.RewindFiles(context.Background(), tr, own, claudecli.Session{ID: id, Exists: true}, uuids[0])
			require.NoError(t, err)
			assert.Equal(t, []string{notes}, r.Files)
			b, _ = os.ReadFile(notes)
			assert.Equal(t, "original\n", string(b), "as it was before the first")
		})
	}
}
