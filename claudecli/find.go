// Package claudecli finds and runs the Claude Code CLI. It knows the CLI's
// flags, environment and stream-json input format, and owns the lifecycle of
// its processes (process groups, the stop ladder, stderr); it knows nothing
// of the pi RPC protocol.
package claudecli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrNotFound means no Claude CLI could be found.
var ErrNotFound = errors.New("claude CLI not found")

// Find returns the CLI to run: explicit when it is set (a path, or a name
// looked up on PATH), else "claude" on PATH. The error says where it looked
// and how to install the CLI.
func Find(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("%w: --claude-path %q: %v", ErrNotFound, explicit, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("claude")
	if err != nil {
		return "", fmt.Errorf("%w on PATH (%s); install it with `npm install -g @anthropic-ai/claude-code` or pass --claude-path", ErrNotFound, os.Getenv("PATH"))
	}
	return p, nil
}
