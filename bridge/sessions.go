package bridge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"

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
}

// loadSession reads a session (a transcript path or a session id) without
// touching the one in use: any error leaves the bridge as it was.
func (s *server) loadSession(idOrPath string) (*loaded, error) {
	path, err := sessions.Find(s.configDir, s.cwd, idOrPath)
	if err != nil {
		return nil, err
	}
	tr, err := sessions.ReadTranscript(path)
	if err != nil {
		return nil, err
	}
	l := &loaded{id: tr.SessionID(), path: path, messages: transform.FromTranscript(raws(tr.Conversation()))}
	for _, e := range tr.Entries {
		if e.Type == "custom-title" {
			l.name = gjson.GetBytes(e.Raw, "customTitle").String()
		}
	}
	return l, nil
}

func raws(entries []sessions.Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.Raw
	}
	return out
}

// use makes l the session in use. Called with s.mu held and no run.
func (s *server) use(l *loaded) {
	s.sessionID, s.sessionFile, s.sessionName = l.id, l.path, l.name
	s.messages = l.messages
	s.fork, s.todos = nil, todoState{}
	s.steerQ, s.followQ, s.bashContext = nil, nil, nil
}

// stopRun aborts the running prompt, if any, and waits until it ended.
func (s *server) stopRun() {
	s.mu.Lock()
	r := s.run
	if r != nil {
		r.interrupt()
	}
	s.mu.Unlock()
	if r != nil {
		s.waitIdle()
	}
}

func (s *server) switchSession(c command) {
	path, err := c.str("sessionPath")
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	l, err := s.loadSession(path)
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, "switch_session: "+err.Error()))
		return
	}
	s.stopRun()
	s.mu.Lock()
	s.use(l)
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"cancelled": false}))
}

// history is the conversation of the session in use, as entries of the
// transcript it lives in: its own, or, for a fork the CLI has not made
// yet, the source's up to the fork point. A session without a transcript
// has none.
func (s *server) history() (entries []sessions.Entry, sourceID string, err error) {
	s.mu.Lock()
	id, f, file := s.sessionID, s.fork, s.sessionFile
	exists := sessions.Exists(s.configDir, s.cwd, id)
	s.mu.Unlock()
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

// forkPoint is pi's entry a session can be branched from: a prompt.
type forkPoint struct {
	EntryID string `json:"entryId"`
	Text    string `json:"text"`
}

// getForkMessages handles get_branch_messages and get_fork_messages: the
// prompts of the session in use, oldest first, with their entry ids.
func (s *server) getForkMessages(c command) {
	conv, _, err := s.history()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	points := []forkPoint{}
	for _, e := range conv {
		if text, ok := transform.TranscriptPrompt(e.Raw); ok {
			points = append(points, forkPoint{EntryID: e.UUID, Text: text})
		}
	}
	s.w.send(okResponse(c.id, c.typ, map[string]any{"messages": points}))
}

// branch handles branch and fork: a new session holding the conversation
// before the prompt entryId; the next prompt continues from there. The
// answer carries that prompt's text, for the host to edit and send again.
func (s *server) branch(c command) {
	entryID, err := c.str("entryId")
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	conv, source, err := s.history()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	at := -1
	for i, e := range conv {
		if _, ok := transform.TranscriptPrompt(e.Raw); ok && e.UUID == entryID {
			at = i
		}
	}
	if at < 0 {
		s.w.send(errResponse(c.id, c.typ, fmt.Sprintf("%s: no prompt %q in this session (see get_fork_messages)", c.typ, entryID)))
		return
	}
	text, _ := transform.TranscriptPrompt(conv[at].Raw)
	s.stopRun()
	s.mu.Lock()
	s.use(&loaded{id: sessions.NewID(), messages: transform.FromTranscript(raws(conv[:at]))})
	if at > 0 { // else nothing came before it: a fresh session
		s.fork = &fork{from: source, at: conv[at-1].UUID}
	}
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"text": text, "cancelled": false}))
}

// clone handles clone: the same conversation under a new session id; the
// session in use is left as it is on disk.
func (s *server) clone(c command) {
	conv, source, err := s.history()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	if len(conv) == 0 {
		s.w.send(errResponse(c.id, c.typ, "clone: the session has no messages yet"))
		return
	}
	s.stopRun()
	s.mu.Lock()
	msgs, name := s.messages, s.sessionName
	s.use(&loaded{id: sessions.NewID(), messages: msgs, name: name})
	s.fork = &fork{from: source, at: conv[len(conv)-1].UUID}
	id := s.sessionID
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"cancelled": false, "sessionId": id}))
}

// startOn starts the bridge on an existing session (--session, --continue).
func (s *server) startOn(idOrPath string, latest bool) error {
	if latest {
		id, err := sessions.Latest(s.configDir, s.cwd)
		if err != nil {
			s.log.Warn("--continue: starting a new session", "why", err)
			return nil
		}
		idOrPath = id
	}
	l, err := s.loadSession(idOrPath)
	if err != nil {
		return fmt.Errorf("--session %s: %w", idOrPath, err)
	}
	s.use(l)
	return nil
}

// transcriptPath is where the session in use is (or will be) written.
// Called with s.mu held.
func (s *server) transcriptPath() string {
	if s.sessionFile != "" {
		return s.sessionFile
	}
	return sessions.TranscriptPath(s.configDir, s.cwd, s.sessionID)
}

// exportHTML handles export_html: the session's messages as one
// self-contained HTML page, at outputPath or in the working folder. The
// file is written whole (a temp file renamed), so a reader never sees half.
func (s *server) exportHTML(c command) {
	path, err := c.optStr("outputPath")
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	msgs := append([]transform.Message(nil), s.messages...)
	id, title := s.sessionID, s.sessionName
	s.mu.Unlock()
	if title == "" {
		title = "Claude session " + id
	}
	if path == "" {
		path = filepath.Join(s.cwd, "claude-session-"+id+".html")
	}
	raws := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			s.w.send(errResponse(c.id, c.typ, "export_html: encoding a message: "+err.Error()))
			return
		}
		raws = append(raws, b)
	}
	if err := writeFileAtomic(path, func(w io.Writer) error { return htmlexport.Render(w, title, raws) }); err != nil {
		s.w.send(errResponse(c.id, c.typ, "export_html: "+err.Error()))
		return
	}
	s.w.send(okResponse(c.id, c.typ, map[string]string{"path": path}))
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
