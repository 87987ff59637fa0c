package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/sessions/htmlexport"
	"github.com/claude-rpc/claude-rpc/transform"
)

// fork is a session the bridge made (branch, fork, clone) that the CLI
// creates at its next turn as a copy of another, up to a message.
type fork struct {
	from, at string // the session copied; the last message kept ("" for all)
}

// loaded is a session read from its transcript, ready to switch to.
type loaded struct {
	id, path, name string
	messages       []transform.Message
	// pi is the session's pi file when it was loaded from one (then
	// entries are its entries), else nil: a new pi file is begun, a copy
	// of parent's (a pi file's path) when parent is set.
	pi      *piLog
	entries []entryJSON
	parent  string
}

// loadSession reads a session (a pi session file or a CLI transcript, by
// path or by id) without touching the one in use: any error leaves the
// bridge as it was. It stops after the step at work (reading, converting)
// once ctx has ended.
func (s *server) loadSession(ctx context.Context, idOrPath string) (*loaded, error) {
	if pf, err := s.findPi(idOrPath); err != nil || pf != nil {
		if err != nil {
			return nil, err
		}
		return s.loadPi(ctx, pf)
	}
	path, err := sessions.Find(s.configDir, s.cwd, idOrPath)
	if err != nil {
		return nil, err
	}
	tr, err := sessions.ReadTranscript(path)
	if errors.Is(err, sessions.ErrNotTranscript) {
		return nil, fmt.Errorf("%s is neither a pi session file nor a Claude transcript: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if place := s.piPlace(); place != nil {
		// A transcript whose session has a pi file (one claude-rpc began):
		// the session is that file's, its entries and name go on.
		if p, ok := sessions.FindPiByClaude(*place, tr.SessionID()); ok {
			if pf, err := sessions.ReadPi(p); err == nil {
				return s.loadPi(ctx, pf)
			}
		}
	}
	l := &loaded{id: tr.SessionID(), path: path, messages: transform.FromTranscript(raws(tr.Conversation()), s.opts.ToolNames)}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	for _, e := range tr.Entries {
		if e.Type == "custom-title" {
			l.name = gjson.GetBytes(e.Raw, "customTitle").String()
		}
	}
	return l, nil
}

// latest is the working folder's most recent session, for --continue:
// its pi file or its CLI transcript, whichever was written last ("" when
// there is none).
func (s *server) latest() string {
	id, err := sessions.Latest(s.configDir, s.cwd)
	if err != nil {
		id = ""
	}
	if place := s.piPlace(); place != nil {
		if p, at, ok := sessions.LatestPi(*place); ok {
			if t, ok := sessions.Locate(s.configDir, s.cwd, id); !ok || modTime(t).Before(at) {
				return p
			}
		}
	}
	return id
}

func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// findPiID is the pi file of pi session id where pi keeps this folder's
// sessions.
func (s *server) findPiID(id string) (string, bool) {
	if place := s.piPlace(); place != nil {
		return sessions.FindPi(*place, id)
	}
	return "", false
}

// piPlace is where pi's session files are kept, nil when they are not.
func (s *server) piPlace() *sessions.PiPlace { return s.piAt }

// findPi reads the pi session file idOrPath names: a path to one, or the
// id of one where pi keeps this folder's sessions, or, when no session
// (a pi file's or a CLI transcript's) has that whole id, the beginning of
// one, as pi's --session takes it (sessions.FindPiPrefix). nil, nil: it
// names none (a transcript, or a CLI session id). A file that begins as
// no pi file is not one; one that cannot be read is an error.
func (s *server) findPi(idOrPath string) (*sessions.PiFile, error) {
	path := ""
	if strings.ContainsAny(idOrPath, `/\`) || strings.HasSuffix(idOrPath, ".jsonl") {
		path = idOrPath
	} else if p, ok := s.findPiID(idOrPath); ok {
		path = p
	} else if place := s.piPlace(); place != nil && !sessions.Exists(s.configDir, s.cwd, idOrPath) {
		path, _ = sessions.FindPiPrefix(*place, idOrPath)
	}
	if path == "" {
		return nil, nil
	}
	pf, err := sessions.ReadPi(path)
	switch {
	case errors.Is(err, sessions.ErrNotPiSession), errors.Is(err, fs.ErrNotExist):
		return nil, nil // a transcript, or nothing: sessions.Find says
	case err != nil:
		return nil, err
	}
	return pf, nil
}

// loadPi reads a session from its pi file. The record that wins: the
// conversation the model goes on with is the CLI's transcript, which
// holds what the model was sent (thinking signatures, the CLI's own
// blocks), when it holds the file's conversation: when the newest
// message of the file's current branch is one claude-rpc wrote (its
// claudeSessionId) and that transcript exists. Otherwise (pi wrote the
// file, or went on with it; the transcript is gone) the file wins: its
// branch is imported into a new transcript (importPi). What hosts see
// (get_messages, get_entries, the name) is the file's either way.
func (s *server) loadPi(ctx context.Context, pf *sessions.PiFile) (*loaded, error) {
	l := &loaded{name: pf.Name(), pi: &piLog{path: pf.Path, header: pf.Header, exists: true}}
	for _, pe := range pf.Entries {
		l.entries = append(l.entries, entryFromPi(pe))
	}
	var newest *sessions.PiEntry
	branch := pf.Branch()
	msgs, last := piMessages(branch)
	l.messages = msgs
	if last >= 0 {
		newest = &branch[last]
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if pf.Header.Cwd != "" && filepath.Clean(pf.Header.Cwd) != filepath.Clean(s.cwd) {
		s.log.Warn("the session was begun in another folder; it goes on in this one", "session", pf.Path, "its cwd", pf.Header.Cwd, "cwd", s.cwd)
	}
	switch {
	case newest == nil: // no conversation yet: the CLI session is begun with the first prompt
		l.id = pf.Header.ClaudeSessionID
		if !sessions.IsID(l.id) {
			l.id = sessions.CLIID(pf.Header.ID)
		}
	case newest.ClaudeSessionID != "" && sessions.Exists(s.configDir, s.cwd, newest.ClaudeSessionID):
		l.id = newest.ClaudeSessionID
		l.path, _ = sessions.Locate(s.configDir, s.cwd, l.id)
	default:
		id, err := s.importBranch(ctx, branch, pf.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pf.Path, err)
		}
		l.id = id
		l.path, _ = sessions.Locate(s.configDir, s.cwd, id)
	}
	return l, nil
}

// piMessages are the messages of a pi file's branch, and the index of the
// last message entry among them (-1 when none).
func piMessages(branch []sessions.PiEntry) (msgs []transform.Message, last int) {
	last = -1
	for i, pe := range branch {
		if m, ok := customMessageOf(pe.Raw); ok {
			msgs = append(msgs, m) // an extension's: the transcript has it as the user's
			continue
		}
		if pe.Type != "message" {
			continue
		}
		if m, ok := transform.MessageFromPi([]byte(gjson.GetBytes(pe.Raw, "message").Raw)); ok {
			msgs = append(msgs, m)
			last = i
		}
	}
	return msgs, last
}

func raws(entries []sessions.Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.Raw
	}
	return out
}

// switchTo makes l the session in use at once and waits for the run of
// the old one, if any, to end: the dispatcher lets calls that only touch
// the session go as soon as it switched (c.settle). The old run is
// detached: it ends as an abort, its queue is dropped, and what it learns
// stays out of the new session (state.gen). The extensions hear why
// (reason: pi's new, resume or fork).
func (s *server) switchTo(c *call, l *loaded, f *fork, reason string) {
	_, previous := s.st.where() // the session file get_state reports
	done, _ := s.runs.detach(func() {
		s.st.useSession(l, f)
		s.subs.reset()
		s.clearStatuses()
	})
	c.settle()
	s.extSessionChanged(reason, previous)
	if done != nil {
		<-done // its end calls Options.Idle when nothing runs then
	}
	s.prewarm() // the new session's process
}

// idleNow calls Options.Idle when nothing runs. The session in use
// changed: its messages are what the heap keeps between runs.
func (s *server) idleNow() {
	s.runs.do(s.runs.idle)
}

func (s *server) newSession(c *call) (any, error) {
	// pi records parentSession in the new session's file header; so does
	// claude-rpc (the CLI keeps no such link).
	if s.extSessionBefore(c, map[string]any{"type": "session_before_switch", "reason": "new"}) {
		return cancelledData{Cancelled: true}, nil
	}
	s.switchTo(c, &loaded{id: sessions.NewID(), parent: c.str("parentSession")}, nil, "new")
	return cancelledData{Cancelled: false}, nil
}

// openSession handles omp's open_session {sessionDir}: the most recent
// session in a folder of sessions, or a new one there. The bridge's
// working directory is fixed, so the folders it can open are the ones
// holding that directory's sessions: the CLI's (sessions.ProjectDir) and,
// when it keeps them, pi's (the session files' folder). The session in
// use stays when it is that latest one.
func (s *server) openSession(c *call) (any, error) {
	dir, err := filepath.Abs(c.str("sessionDir"))
	if err != nil {
		return nil, fmt.Errorf("open_session: %w", err)
	}
	own := []string{sessions.ProjectDir(s.configDir, s.cwd)}
	if place := s.piPlace(); place != nil {
		own = append(own, place.Dir)
	}
	if !slices.ContainsFunc(own, func(d string) bool { return filepath.Clean(d) == filepath.Clean(dir) }) {
		return nil, fmt.Errorf("open_session: the sessions of %s are in %s; claude-rpc opens those only (start another claude-rpc with --cwd for another project)", s.cwd, strings.Join(own, " and "))
	}
	current, file := s.st.where()
	latest := s.latest()
	switch {
	case latest == "": // none yet: a new one
		s.switchTo(c, &loaded{id: sessions.NewID()}, nil, "new")
	case latest != current && latest != file:
		l, err := s.loadSession(c.Context(), latest)
		if err != nil {
			return nil, fmt.Errorf("open_session: %w", err)
		}
		s.switchTo(c, l, nil, "resume")
	default:
		c.settle()
	}
	id, file := s.st.where()
	return openSessionData{Cancelled: false, Resumed: latest != "", SessionID: id, SessionFile: file}, nil
}

func (s *server) switchSession(c *call) (any, error) {
	if s.extSessionBefore(c, map[string]any{"type": "session_before_switch", "reason": "resume", "targetSessionFile": c.str("sessionPath")}) {
		return cancelledData{Cancelled: true}, nil
	}
	l, err := s.loadSession(c.Context(), c.str("sessionPath"))
	if err != nil {
		return nil, fmt.Errorf("switch_session: %w", err)
	}
	s.switchTo(c, l, nil, "resume")
	return cancelledData{Cancelled: false}, nil
}

// history is the conversation of the session in use, as entries of the
// transcript it lives in: its own, or, for a fork the CLI has not made
// yet, the source's up to the fork point. A session without a transcript
// has none.
func (s *server) history() (entries []sessions.Entry, sourceID string, err error) {
	id, f, file := s.st.source()
	exists := sessions.Exists(s.configDir, s.cwd, id)
	if f != nil && !exists {
		id, file = f.from, ""
	}
	if file == "" {
		var ok bool
		if file, ok = sessions.Locate(s.configDir, s.cwd, id); !ok {
			return nil, id, nil
		}
	}
	tr, err := sessions.ReadTranscript(file)
	if err != nil {
		return nil, id, err
	}
	conv := tr.Conversation()
	if f != nil && !exists && f.at != "" {
		for i, e := range conv {
			if e.UUID == f.at {
				conv = conv[:i+1]
				break
			}
		}
	}
	return conv, tr.SessionID(), nil
}

// getForkMessages handles get_branch_messages and get_fork_messages: the
// prompts of the session in use, oldest first, with their entry ids.
func (s *server) getForkMessages(*call) (any, error) {
	if points, ok := s.st.piForkPoints(); ok {
		// A session opened from a pi file: its prompts are the file's
		// user messages, on every branch, by entry id, as pi lists them;
		// the CLI's transcript holds only the current branch.
		return forkMessagesData{Messages: points}, nil
	}
	conv, _, err := s.history()
	if err != nil {
		return nil, err
	}
	points := []forkPoint{}
	for _, e := range conv {
		if text, ok := transform.TranscriptPrompt(e.Raw); ok {
			points = append(points, forkPoint{EntryID: e.UUID, Text: text})
		}
	}
	return forkMessagesData{Messages: points}, nil
}

// fork handles fork and branch: a new session holding the conversation
// before the prompt entryId; the next prompt continues from there. The
// answer carries that prompt's text, for the host to edit and send again,
// and with restoreFiles what [server.restoreFiles] did (rewind.go).
func (s *server) fork(c *call) (any, error) {
	entryID := c.str("entryId")
	if s.extSessionBefore(c, map[string]any{"type": "session_before_fork", "entryId": entryID, "position": "before"}) {
		return forkData{Cancelled: true}, nil
	}
	// entryId is a prompt's uuid in the CLI's transcript (get_fork_messages)
	// or a user message's entry id (get_entries; get_fork_messages of a
	// session opened from a pi file): that prompt is found by its text
	// among the current branch's, which the transcript holds. One on
	// another branch of the pi file is forked from the file's entries.
	p, isEntry := s.st.promptOfEntry(entryID)
	if isEntry && p.offBranch {
		return s.forkOffBranch(c, p)
	}
	text, nth := p.text, p.nth
	conv, source, err := s.history()
	if err == nil {
		err = c.stopped()
	}
	if err != nil {
		return nil, err
	}
	at := -1
	for i, e := range conv {
		t, ok := transform.TranscriptPrompt(e.Raw)
		switch {
		case !ok:
		case e.UUID == entryID:
			at = i
		case isEntry && t == text && at < 0:
			if nth == 0 {
				at = i
			}
			nth--
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("%s: no prompt %q in this session (see get_fork_messages)", c.typ, entryID)
	}
	text, _ = transform.TranscriptPrompt(conv[at].Raw)
	var restored *restoredFiles
	if c.raw.Get("restoreFiles").Bool() {
		restored = s.restoreFiles(c, source, conv[at].UUID)
	}
	var f *fork
	if at > 0 { // else nothing came before it: a fresh session
		f = &fork{from: source, at: conv[at-1].UUID}
	}
	msgs := transform.FromTranscript(raws(conv[:at]), s.opts.ToolNames)
	if err := c.stopped(); err != nil {
		return nil, err
	}
	_, parent := s.st.where() // its pi file (none is begun when none is kept)
	s.switchTo(c, &loaded{id: sessions.NewID(), messages: msgs, parent: parent}, f, "fork")
	return forkData{Text: text, Cancelled: false, RestoredFiles: restored}, nil
}

// forkOffBranch is fork at a user message on a branch of the session's pi
// file other than the current one: the CLI's transcript holds only the
// current branch, so the new session is made, as pi makes it, from the
// file's entries before that message (from the first to its parent),
// imported into a transcript of its own (importBranch) as a session
// opened from a pi file is. No files are restored: the CLI's checkpoints
// are of the transcript's turns, and that branch's are not among them.
func (s *server) forkOffBranch(c *call, p entryPrompt) (any, error) {
	branch := make([]sessions.PiEntry, 0, len(p.before))
	for i := range p.before {
		e := &p.before[i]
		raw, err := appendEntry(nil, e)
		if err != nil {
			continue // none of ours: every entry the bridge makes encodes
		}
		pe := sessions.PiEntry{Type: e.Type, ID: e.ID, ClaudeSessionID: e.ClaudeSessionID, Raw: raw}
		if e.ParentID != nil {
			pe.ParentID = *e.ParentID
		}
		branch = append(branch, pe)
	}
	msgs, _ := piMessages(branch)
	_, parent := s.st.where()
	l := &loaded{id: sessions.NewID(), parent: parent}
	if len(msgs) > 0 {
		id, err := s.importBranch(c.Context(), branch, parent)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.typ, err)
		}
		l.id, l.messages = id, msgs
		l.path, _ = sessions.Locate(s.configDir, s.cwd, id)
	}
	if err := c.stopped(); err != nil {
		return nil, err
	}
	var restored *restoredFiles
	if c.raw.Get("restoreFiles").Bool() {
		restored = &restoredFiles{Files: []string{}, Error: "the prompt is on another branch of the pi file than the CLI's transcript holds: the CLI has no checkpoints of its files"}
	}
	s.switchTo(c, l, nil, "fork")
	return forkData{Text: p.text, Cancelled: false, RestoredFiles: restored}, nil
}

// clone handles clone: the same conversation under a new session id; the
// session in use is left as it is on disk.
func (s *server) clone(c *call) (any, error) {
	conv, source, err := s.history()
	if err == nil {
		err = c.stopped()
	}
	if err != nil {
		return nil, err
	}
	if len(conv) == 0 {
		return nil, errors.New("clone: the session has no messages yet")
	}
	// pi's clone is a fork at the leaf.
	if s.extSessionBefore(c, map[string]any{"type": "session_before_fork", "entryId": s.leafID(), "position": "at"}) {
		return cloneData{Cancelled: true}, nil
	}
	s.runs.stop() // its messages are part of what is cloned
	msgs, _, name := s.st.conversation()
	id := sessions.NewID()
	_, parent := s.st.where()
	s.switchTo(c, &loaded{id: id, messages: msgs, name: name, parent: parent}, &fork{from: source, at: conv[len(conv)-1].UUID}, "fork")
	return cloneData{Cancelled: false, SessionID: id}, nil
}

// startOn sets the session and settings the bridge starts with: an
// existing session (--session, --continue), a copy of one (--fork), a
// session id of the host's (--session-id), a name, a thinking level.
func (s *server) startOn(opts Options) error {
	idOrPath := opts.Session
	if opts.Continue {
		if idOrPath = s.latest(); idOrPath == "" {
			s.log.Warn("--continue: no session of this folder to continue; starting a new one", "cwd", s.cwd)
		}
	}
	id := opts.SessionID
	if id != "" && !sessions.IsID(id) {
		id = sessions.CLIID(id) // the CLI takes UUIDs only
		s.log.Info("--session-id is not a UUID; the CLI's session id is one made from it", "given", opts.SessionID, "id", id)
	}
	if id != "" && !opts.Fork {
		// pi's --session-id: the session with this id, if there is one:
		// its pi file, else its CLI transcript.
		if p, ok := s.findPiID(opts.SessionID); ok {
			idOrPath = p
		} else if sessions.Exists(s.configDir, s.cwd, id) {
			idOrPath = id
		}
	}
	given, piID := id, opts.SessionID // the session's ids, when none was loaded
	if idOrPath != "" {
		given, piID = "", ""
		l, err := s.loadSession(s.ctx, idOrPath)
		if err != nil {
			return fmt.Errorf("--session %s: %w", idOrPath, err)
		}
		s.st.useSession(l, nil)
		if opts.Fork {
			conv, source, err := s.history()
			if err != nil {
				return fmt.Errorf("--fork %s: %w", idOrPath, err)
			}
			if id == "" {
				id = sessions.NewID()
			}
			var f *fork
			if len(conv) > 0 {
				f = &fork{from: source, at: conv[len(conv)-1].UUID}
			}
			s.st.useSession(&loaded{id: id, messages: l.messages, name: l.name, parent: l.pi.filePath()}, f)
		}
	}
	s.st.startWith(given, piID, opts.SessionName, opts.ThinkingLevel)
	return nil
}

// exportHTML handles export_html: the session's messages as one
// self-contained HTML page, at outputPath or in the working folder. The
// file is written whole (a temp file renamed), so a reader never sees half;
// it stops, writing nothing, once the call's context has ended.
func (s *server) exportHTML(c *call) (any, error) {
	path := c.str("outputPath")
	msgs, id, title := s.st.conversation()
	if title == "" {
		title = "Claude session " + id
	}
	if path == "" {
		path = filepath.Join(s.cwd, "claude-session-"+id+".html")
	}
	raws := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		if err := c.stopped(); err != nil {
			return nil, err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("export_html: encoding a message: %w", err)
		}
		raws = append(raws, b)
	}
	if err := writeFileAtomic(path, func(w io.Writer) error { return htmlexport.Render(c.Context(), w, title, raws) }); err != nil {
		return nil, fmt.Errorf("export_html: %w", err)
	}
	return exportData{Path: path}, nil
}

// writeFileAtomic writes path through a temp file in its folder.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".export-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename: nothing to remove
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// persistName has the CLI write name into session id's transcript now,
// as pi writes its session_info entry, in the background (the answer does
// not wait; shutdown does, the flush wait at most: owedContext): through the stream transport's process when it
// runs the session, else, when the session has a transcript and no run is
// in progress, through a CLI process of its own (claudecli.RenameSession,
// about a start-up's time). A session without a transcript gets the name
// with its first turn (--name), as does one whose run is in progress on
// the pipe or pty transport (its process would race a second one).
func (s *server) persistName(id, name string) {
	if s.opts.CLI.NoPersistence || id == "" {
		return
	}
	// Refused at shutdown: the name goes with the session's next start
	// (--name).
	s.goes.start(func() {
		ses := claudecli.Session{ID: id, Exists: sessions.Exists(s.configDir, s.cwd, id)}
		if rename := s.transport().Caps().Rename; rename != nil {
			err := rename(ses, name)
			if err == nil || !errors.Is(err, claudecli.ErrNotRunning) {
				if err != nil {
					s.log.Warn("set_session_name: the CLI did not write the name; the next turn gives it", "err", err)
				}
				return
			}
		}
		if !ses.Exists || s.runs.busy() {
			return
		}
		cfg, _ := s.cliConfig()
		cfg.Host = nil
		ctx, cancel := s.owedContext()
		defer cancel()
		if err := claudecli.RenameSession(ctx, cfg, ses, name, 30*time.Second); err != nil {
			s.log.Warn("set_session_name: the CLI did not write the name; the next turn gives it", "err", err)
		}
	})
}
