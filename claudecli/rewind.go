package claudecli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// The CLI puts files back with the control request rewind_files
// ({user_message_id, dry_run}). Checked on 2.1.275, 2.1.328 and 2.1.332,
// each started with [checkpointEnv]:
//
//   - user_message_id is the uuid of a user message of the session (the
//     transcript's; a user line given with [UserLineID] keeps its uuid).
//     The files the CLI's tools changed from that message on are put back
//     as they were when it was sent, before its turn's tools ran.
//   - dry_run answers success with {canRewind, filesChanged (absolute
//     paths), insertions, deletions} and changes nothing; the real rewind
//     answers success with {canRewind: true, skippedLinks} only (no list of
//     files), or an error response ("No file checkpoint found for this
//     message.", "File rewinding is not enabled.").
//   - without checkpointEnv every request gets "File rewinding is not
//     enabled."; for a message it has no checkpoint of (a uuid it does not
//     know, one sent before checkpointing was on), "No file checkpoint
//     found for this message.".
//   - a process that resumes the session reads the checkpoints back from
//     its transcript (file-history-snapshot lines), so a CLI process of its
//     own can rewind a session no process runs.

// checkpointEnv is the environment variable that turns the CLI's file
// checkpointing on in print mode ([Config.FileCheckpoints]).
const checkpointEnv = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// Rewound is what [RewindFiles] put back: the CLI's preview of the rewind
// (its dry run), and what the rewind itself reported.
type Rewound struct {
	// Files are the files put back (absolute paths, as the CLI names them;
	// a file the tools created is removed); empty when none had changed.
	Files []string
	// Insertions and Deletions are the lines the rewind added and removed
	// across Files, as the CLI counts them.
	Insertions, Deletions int
	// SkippedLinks counts files the CLI left alone for safety: a link, or
	// a path that no longer leads where it did when checkpointed.
	SkippedLinks int
}

// rewindTimeout bounds each rewind_files request: the CLI copies the
// files back from its backups.
const rewindTimeout = 30 * time.Second

// RewindFiles puts back the files the CLI's tools changed in session from
// its user message uuid on, as they were when that message was sent. It
// asks the process that runs the session when the transport keeps one
// (stream), else, when the session has a transcript, a CLI process of its
// own that resumes it (about a start-up's time; cfg is how to run it, and
// needs FileCheckpoints). It first asks for a dry run, for the files and
// lines the rewind changes (the real one does not say), then rewinds when
// there is something to put back. An error is the CLI's reason (no
// checkpoint for that message, checkpointing off) or why the CLI could
// not be asked. No turn may run on the session meanwhile: a tool that
// writes after the rewind undoes it.
func RewindFiles(ctx context.Context, tr Transport, cfg Config, session Session, uuid string) (Rewound, error) {
	if s, ok := tr.(*stream); ok {
		sp, err := s.procOn(ctx, session)
		if err == nil {
			return rewind(uuid, func(req map[string]any) (gjson.Result, error) { return sp.request(req, rewindTimeout) })
		}
		if !errors.Is(err, ErrNotRunning) {
			return Rewound{}, err
		}
	}
	if q := tr.Caps().Quiesce; q != nil {
		q() // the last turn's process writes its transcript as it exits
	}
	if !session.Exists {
		return Rewound{}, errors.New("the session has no transcript yet, so no checkpoints")
	}
	session.Name = "" // --name would write the name again
	c, err := startControl(ctx, cfg, cfg.TurnArgs(session))
	if err != nil {
		return Rewound{}, err
	}
	defer c.close()
	if err := c.send("init", map[string]any{"subtype": "initialize", "hooks": nil}); err != nil {
		return Rewound{}, err
	}
	n := 0
	return rewind(uuid, func(req map[string]any) (gjson.Result, error) {
		n++
		id := fmt.Sprint("rewind", n)
		if err := c.send(id, req); err != nil {
			return gjson.Result{}, err
		}
		deadline := time.After(rewindTimeout)
		for {
			a, ok, err := c.next(deadline, "rewind_files", rewindTimeout)
			switch {
			case err != nil:
				return gjson.Result{}, err
			case !ok:
				return gjson.Result{}, c.failed(errors.New("claude exited before answering rewind_files"))
			case a.Get("request_id").String() != id:
			case a.Get("subtype").String() == "error":
				return a, fmt.Errorf("claude refused rewind_files: %s", a.Get("error").String())
			default:
				return a, nil
			}
		}
	})
}

// rewind asks for uuid's dry run, then for the rewind when it changes
// something, through ask (a control request: its response, or why none).
func rewind(uuid string, ask func(map[string]any) (gjson.Result, error)) (Rewound, error) {
	r, err := ask(map[string]any{"subtype": "rewind_files", "user_message_id": uuid, "dry_run": true})
	if err != nil {
		return Rewound{}, err
	}
	p := r.Get("response")
	if !p.Get("canRewind").Bool() {
		why := p.Get("error").String()
		if why == "" {
			why = "claude cannot rewind to that message"
		}
		return Rewound{}, errors.New(why)
	}
	var out Rewound
	for _, f := range p.Get("filesChanged").Array() {
		out.Files = append(out.Files, f.String())
	}
	out.Insertions, out.Deletions = int(p.Get("insertions").Int()), int(p.Get("deletions").Int())
	if len(out.Files) == 0 {
		return out, nil
	}
	if r, err = ask(map[string]any{"subtype": "rewind_files", "user_message_id": uuid}); err != nil {
		return Rewound{}, err
	}
	if !r.Get("response.canRewind").Bool() { // answered as an error by the versions checked
		return Rewound{}, fmt.Errorf("claude did not rewind: %s", r.Get("response.error").String())
	}
	out.SkippedLinks = int(r.Get("response.skippedLinks").Int())
	return out, nil
}

// procOn is the process in use, once a change of process under way is
// done, when it runs session; [ErrNotRunning] when none does (none runs,
// it died, or it runs another session), or ctx's cause when ctx ends
// first.
func (s *stream) procOn(ctx context.Context, session Session) (*streamProc, error) {
	sp, ok := s.procAfterSwap(ctx)
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if !ok || sp.isDead() || sp.session != session.ID {
		return nil, ErrNotRunning
	}
	return sp, nil
}
