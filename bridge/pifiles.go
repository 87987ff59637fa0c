package bridge

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// Each session is also kept as pi keeps its sessions (Options.PiSessions):
// a pi session file (sessions.PiWriter) holding the session's entries
// (entries.go), so that hosts and pi's own tools that read pi's files
// list, name, open and continue claude-rpc's sessions.
//
// State owns the entries; sessionFiles, a goroutine of its own, owns the
// files: state queues each entry it adds for the session's file (addEntry)
// and wakes it; it takes what is queued (state.takeUnwritten) and writes
// it with no lock held, in the order the entries were made. A file that
// cannot be written is warned of once; its entries stay queued in its
// writer and go with the next that can be, and the turn goes on.

// piLog is a session's pi file: where it is and how it begins. Fixed once
// made; several state generations may share one (a session reloaded).
type piLog struct {
	path   string
	header sessions.PiHeader
	// exists: the file was there when the session was loaded; entries are
	// appended to it.
	exists bool
}

func (l *piLog) existing() bool { return l != nil && l.exists }

func (l *piLog) filePath() string {
	if l == nil {
		return ""
	}
	return l.path
}

func (l *piLog) parent() string {
	if l == nil {
		return ""
	}
	return l.header.ParentSession
}

// newPiLog is the file of a new session in place, begun now: pi's id
// piID for the CLI session cliID (the same but where a host's pi id is no
// UUID: --session-id), a copy of parent's (a pi file's path) when parent
// is set.
func newPiLog(place sessions.PiPlace, piID, cliID, parent string) *piLog {
	now := time.Now()
	return &piLog{
		path: filepath.Join(place.Dir, sessions.PiFileName(now, piID)),
		header: sessions.PiHeader{Version: sessions.PiVersion, ID: piID, Timestamp: isoMillis(now.UnixMilli()),
			Cwd: place.Cwd, ParentSession: parent, ClaudeSessionID: cliID},
	}
}

// piPending is an entry of a pi file not yet written. The entry's message
// is the session's, which nothing changes once it is kept.
type piPending struct {
	log   *piLog
	entry entryJSON
}

// sessionFiles is the goroutine that writes pi session files (see above).
type sessionFiles struct {
	st    *state
	log   *slog.Logger
	wake  chan struct{}      // cap 1: entries are queued
	synch chan chan struct{} // sync's: closed once what was queued is written
	quit  chan struct{}      // closed: write what is queued, then end
	done  chan struct{}      // closed when it ended
}

func newSessionFiles(st *state, log *slog.Logger, wake chan struct{}) *sessionFiles {
	f := &sessionFiles{st: st, log: log, wake: wake, synch: make(chan chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

// sync waits until the entries queued before it was called are written
// (or failed to be), at most until ctx ends: for a command whose answer
// says its entry is in the file (set_session_name). Never on the runner's
// loop.
func (f *sessionFiles) sync(ctx context.Context) {
	if f == nil {
		return
	}
	written := make(chan struct{})
	select {
	case f.synch <- written:
	case <-f.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-written:
	case <-ctx.Done():
	}
}

func (f *sessionFiles) run() {
	defer close(f.done)
	writers := map[*piLog]*sessions.PiWriter{}
	warned := map[*piLog]bool{}
	for {
		var quitting bool
		var synced chan struct{}
		select {
		case <-f.wake:
		case synced = <-f.synch:
		case <-f.quit:
			quitting = true
		}
		pending, current := f.st.takeUnwritten()
		for len(pending) > 0 {
			// The entries of one file that came one after another: one
			// write.
			log, n := pending[0].log, 1
			for n < len(pending) && pending[n].log == log {
				n++
			}
			lines := make([]sessions.PiLine, 0, n)
			for i := range n {
				if line, ok := piLine(&pending[i].entry); ok {
					lines = append(lines, line)
				} // else none of ours: every entry the bridge makes encodes
			}
			pending = pending[n:]
			w := writers[log]
			if w == nil {
				open := sessions.NewPiWriter
				if log.exists {
					open = sessions.AppendTo
				}
				if w, _ = open(log.path, log.header); w == nil {
					continue // a header that does not encode: none of ours
				}
				writers[log] = w
			}
			if err := w.AppendLines(lines...); err != nil && !warned[log] {
				warned[log] = true
				f.log.Warn("the session's pi file is not written (the session goes on; its entries are written when the file can be)", "file", log.path, "err", err)
			} else if err == nil && warned[log] {
				delete(warned, log)
				f.log.Info("the session's pi file is written again", "file", log.path)
			}
		}
		// A session left gets no more entries (opened again, it is a
		// piLog of its own): its writer goes once what it holds is
		// written (tried again at each wake-up), or at once when it never
		// held a message (as pi, no file).
		for log, w := range writers {
			if log == current {
				continue
			}
			if w.Created() && w.Held() > 0 {
				_ = w.Append() // warned of already
			}
			if w.Held() == 0 || !w.Created() {
				delete(writers, log)
				delete(warned, log)
			}
		}
		if synced != nil {
			close(synced)
		}
		if quitting {
			return
		}
	}
}

// longEntry is the size of a message past which its entry is written as
// it is encoded (writeEntry) rather than encoded first (appendEntry):
// a long reply's entry would be one more copy of its text at the reply's
// end (issue 44: 34 MB of a 32 MB reply's 84 MiB peak heap).
const longEntry = 64 << 10

// piLine is e's line in its pi file; false when e does not encode.
func piLine(e *entryJSON) (sessions.PiLine, bool) {
	if m := e.Message; e.raw == nil && m != nil && messageSize(m) > longEntry {
		if transform.CheckMessage(m) != nil {
			return sessions.PiLine{}, false
		}
		return sessions.PiLine{
			Write:        func(w io.Writer) error { return writeEntry(w, e) },
			Conversation: e.Type == "message" && (m.Role == transform.RoleUser || m.Role == transform.RoleAssistant),
		}, true
	}
	line, err := appendEntry(nil, e)
	return sessions.PiLine{Bytes: line}, err == nil
}

// messageSize is about the bytes of m's text, arguments and details.
func messageSize(m *transform.Message) int {
	n := len(m.Details)
	for i := range m.Content {
		c := &m.Content[i]
		n += c.TextLen() + len(c.Arguments) + len(c.Data)
	}
	return n
}

// close writes what is queued and ends the goroutine.
func (f *sessionFiles) close() {
	close(f.quit)
	<-f.done
}
