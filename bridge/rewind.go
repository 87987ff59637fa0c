package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// restoreTimeout bounds fork's restoreFiles: a CLI process started for it
// (pipe, pty) takes a start-up's time, then two control requests.
const restoreTimeout = time.Minute

// restoreFiles handles fork's restoreFiles: the files the CLI's tools
// changed in session source from its prompt uuid on are put back as they
// were when it was sent (claudecli.RewindFiles), before the fork switches
// sessions (the stream transport's process on source holds its
// checkpoints). A run in progress is stopped first, so no tool writes
// after the files are put back. It returns what was restored, or why
// nothing was; the fork goes on either way.
func (s *server) restoreFiles(c *call, source, uuid string) *restoredFiles {
	if !s.opts.CLI.FileCheckpoints {
		return &restoredFiles{Files: []string{}, Error: "file checkpointing is off (claude-rpc was started with --restore-files=false): the CLI kept no copies of the files"}
	}
	s.runs.stop()
	cfg, _ := s.cliConfig()
	// A process of its own answers no host: it runs no turn.
	cfg.Host, cfg.AskPermissions, cfg.DialogKinds, cfg.SDKServers = nil, false, nil, nil
	ctx, cancel := context.WithTimeoutCause(c.Context(), restoreTimeout, errors.New("the CLI did not restore the files in time"))
	defer cancel()
	r, err := claudecli.RewindFiles(ctx, s.transport(), cfg, claudecli.Session{ID: source, Exists: true}, uuid)
	if err != nil {
		s.log.Info(c.typ+": the files were not restored", "err", err)
		return &restoredFiles{Files: []string{}, Error: err.Error()}
	}
	files := r.Files
	if files == nil {
		files = []string{}
	}
	return &restoredFiles{Restored: true, Files: files, Insertions: r.Insertions, Deletions: r.Deletions, SkippedLinks: r.SkippedLinks}
}
