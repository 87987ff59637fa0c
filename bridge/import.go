package bridge

import (
	"context"
	"errors"

	"github.com/claude-rpc/claude-rpc/sessions"
)

// importPi writes a CLI transcript holding pf's current branch, for the
// CLI to resume, and returns its session id.
func (s *server) importPi(ctx context.Context, pf *sessions.PiFile) (string, error) {
	return "", errors.New("this pi session's conversation is in no Claude transcript, and importing one is not built yet")
}
