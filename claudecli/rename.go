package claudecli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
)

// The CLI names a session with the control request rename_session
// ({title, source: "host"}: a rename the user made in the host, counted as
// the user's own). Checked on 2.1.328: it answers success and appends
// {"type":"custom-title","customTitle":…} and {"type":"agent-name",…} to
// the transcript at once, the lines --name writes and --resume reads back;
// a session with no transcript yet gets none.

// ErrNotRunning is [Renamer.Rename]'s answer when no process of the
// transport runs the session.
var ErrNotRunning = errors.New("no CLI process runs the session")

// Renamer is a transport whose running process can name its session at
// once (the stream transport).
type Renamer interface {
	// Rename names session through the process that runs it, and waits
	// for the CLI's answer. It returns ErrNotRunning when none does.
	Rename(session Session, title string) error
}

// renameRequest is the control request that names the session.
func renameRequest(title string) map[string]any {
	return map[string]any{"subtype": "rename_session", "title": title, "source": "host"}
}

// Rename implements [Renamer]. The process is left running: its name is
// now title, so the next turn with that name keeps it.
func (s *stream) Rename(session Session, title string) error {
	s.mu.Lock()
	sp := s.proc
	s.mu.Unlock()
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
// long as the CLI's start-up. No other process may be running the session.
func RenameSession(cfg Config, session Session, title string, timeout time.Duration) error {
	session.Name = "" // the request names it; --name would write it twice
	p, stdin, err := startPiped(cfg, cfg.TurnArgs(session))
	if err != nil {
		return err
	}
	defer func() {
		_ = stdin.Close() // the CLI exits when its input ends
		waitOrStop(p, 2*time.Second)
	}()
	for i, req := range []map[string]any{{"subtype": "initialize", "hooks": nil}, renameRequest(title)} {
		b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": fmt.Sprint("r", i), "request": req})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("asking claude to rename the session: %w (%s)", err, p.Exit())
		}
	}
	done := make(chan error, 1)
	go func() {
		// Reads to the end, so the CLI never blocks on a full pipe while
		// it exits.
		answered := false
		lr := jsonl.NewReader(p.Stdout(), 64<<20)
		for {
			line, err := lr.Next()
			if errors.Is(err, jsonl.ErrLineTooLong) {
				continue
			}
			if err != nil {
				if !answered {
					done <- errors.New("claude exited before answering rename_session")
				}
				return
			}
			v := gjson.ParseBytes(line)
			if answered || v.Get("type").String() != "control_response" || v.Get("response.request_id").String() != "r1" {
				continue
			}
			answered = true
			if v.Get("response.subtype").String() == "error" {
				done <- fmt.Errorf("claude refused rename_session: %s", v.Get("response.error").String())
			} else {
				done <- nil
			}
			_ = stdin.Close()
		}
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		p.Stop()
		return fmt.Errorf("claude did not answer rename_session within %v", timeout)
	}
}
