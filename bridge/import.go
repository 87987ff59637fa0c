package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// importBranch writes a CLI transcript holding branch, entries of the pi
// file at path (its current branch, or a fork's), for the CLI to resume,
// and returns its session id: a new one at each import, so no transcript
// is ever overwritten, and the file is only read. The conversation is
// what pi's model saw (transform.ImportPi); what it leaves out is named
// in a warning, the entries that are no conversation (pi's settings,
// labels) in the debug log. A branch with nothing to import is an error:
// loadPi and forkOffBranch import only a branch holding a message.
func (s *server) importBranch(ctx context.Context, branch []sessions.PiEntry, path string) (string, error) {
	raw := make([][]byte, len(branch))
	for i, e := range branch {
		raw[i] = e.Raw
	}
	version := ""
	if info, ok := s.info.known(); ok {
		version = info.Version
	}
	id := sessions.NewID()
	lines, rep := transform.ImportPi(raw, transform.PiImport{SessionID: id, Cwd: s.cwd, Version: version, Now: time.Now()})
	if err := context.Cause(ctx); err != nil {
		return "", err
	}
	if len(lines) == 0 {
		return "", errors.New("the branch holds no message the Claude CLI can be given")
	}
	path, err := sessions.CreateTranscript(s.configDir, s.cwd, id, lines)
	if err != nil {
		return "", err
	}
	s.log.Info("imported a pi session into a Claude transcript", "session", path, "transcript", path, "lines", rep.Lines)
	if len(rep.Dropped) > 0 {
		s.log.Warn("importing a pi session: the Claude CLI's model will not see all of it", "session", path, "left out", rep.Dropped)
	}
	if len(rep.Ignored) > 0 {
		s.log.Debug("importing a pi session: entries that are no conversation", "session", path, "entries", rep.Ignored)
	}
	return id, nil
}
