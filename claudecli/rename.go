package claudecli

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The CLI names a session with the control request rename_session
// ({title, source: "host"}: a rename the user made in the host, counted as
// the user's own). Checked on 2.1.328: it answers success and appends
// {"type":"custom-title","customTitle":…} and {"type":"agent-name",…} to
// the transcript at once, the lines --name writes and --resume reads back;
// a session with no transcript yet gets none.

// ErrNotRunning is [Caps.Rename]'s answer when no process of the
// transport runs the session.
var ErrNotRunning = errors.New("no CLI process runs the session")

// renameRequest is the control request that names the session.
func renameRequest(title string) map[string]any {
	return map[string]any{"subtype": "rename_session", "title": title, "source": "host"}
}

// Rename is [Caps.Rename]. The process is left running: its name is
// now title, so the next turn with that name keeps it.
// A change of process under way is waited for: the process it starts may
// run the session.
func (s *stream) Rename(session Session, title string) error {
	sp, _ := s.procAfterSwap(context.Background())
	if sp == nil || sp.isDead() || sp.session != session.ID {
		return ErrNotRunning
	}
	if _, err := sp.request(renameRequest(title), 10*time.Second); err != nil {
		return err
	}
	s.mu.Lock()
	if s.proc == sp {
		sp.name = title
	}
	s.mu.Unlock()
	return nil
}

// RenameSession names an existing session (one with a transcript) through
// a CLI process of its own: it resumes the session, asks rename_session and
// exits, without a turn (so without calling the API). It takes about as
// long as the CLI's start-up, timeout at most; when ctx ends first, the
// CLI's process group is stopped. No other process may be running the
// session.
func RenameSession(ctx context.Context, cfg Config, session Session, title string, timeout time.Duration) error {
	session.Name = "" // the request names it; --name would write it twice
	c, err := startControl(ctx, cfg, cfg.TurnArgs(session))
	if err != nil {
		return err
	}
	defer c.close()
	for i, req := range []map[string]any{{"subtype": "initialize", "hooks": nil}, renameRequest(title)} {
		if err := c.send(fmt.Sprint("r", i), req); err != nil {
			return fmt.Errorf("asking claude to rename the session: %w", err)
		}
	}
	deadline := time.After(timeout)
	for {
		a, ok, err := c.next(deadline, "rename_session", timeout)
		switch {
		case err != nil:
			return err
		case !ok:
			return errors.New("claude exited before answering rename_session")
		case a.Get("request_id").String() != "r1":
		case a.Get("subtype").String() == "error":
			return fmt.Errorf("claude refused rename_session: %s", a.Get("error").String())
		default:
			return nil
		}
	}
}
