package sessions

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/sessions/filelock"
)

// PiWriter appends a session's entries to its pi session file, as pi
// does: the file (the header, then every entry so far) is created once the
// session holds a user or assistant message, so a session opened and left
// without a word leaves no file; from then on each entry is appended as
// it comes. It is owned by one goroutine: its methods must not be called
// at once.
//
// Each Append is one write of whole lines to a file opened for appending,
// under an exclusive lock of the file (flock; LockFileEx on Windows), so
// two writers of one file (two bridges on one session) never interleave
// within a line. Files are the user's alone to read (0600; folders 0700):
// they hold the conversation.
type PiWriter struct {
	path    string
	header  []byte
	pending []PiLine // entries held until the file is created
	created bool
}

// NewPiWriter is the writer of a new session file at path with header h.
func NewPiWriter(path string, h PiHeader) (*PiWriter, error) {
	h.Type = "session"
	if h.Version == 0 {
		h.Version = PiVersion
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return &PiWriter{path: path, header: b}, nil
}

// AppendTo is the writer of an existing session file whose header is h:
// entries are appended to it as they come (the header first, should the
// file be gone or empty by then).
func AppendTo(path string, h PiHeader) (*PiWriter, error) {
	w, err := NewPiWriter(path, h)
	if w != nil {
		w.created = true
	}
	return w, err
}

// Held is how many entries wait to be written: until the session holds a
// message, or after a write failed.
func (w *PiWriter) Held() int { return len(w.pending) }

// Created reports whether the file has been written (or existed).
func (w *PiWriter) Created() bool { return w.created }

// PiLine is one entry of a pi file, written as one line (without its line
// end): Bytes, or, for a long one (a long reply's message), what Write
// writes to the file as it encodes it, so the entry is never whole in
// memory. Conversation says whether a written entry is a user or
// assistant message (see Append); an entry of Bytes is read for it.
type PiLine struct {
	Bytes        []byte
	Write        func(w io.Writer) error
	Conversation bool
}

// Append writes entries (each one JSON object, no newline). Before the
// file exists they are held, unless one of them is a user or assistant
// message: then the file is created with the header and all held. An
// error leaves the entries held, to be written with the next Append.
func (w *PiWriter) Append(entries ...[]byte) error {
	lines := make([]PiLine, len(entries))
	for i, e := range entries {
		lines[i].Bytes = e
	}
	return w.AppendLines(lines...)
}

// AppendLines is Append for entries of either kind.
func (w *PiWriter) AppendLines(entries ...PiLine) error {
	w.pending = append(w.pending, entries...)
	if !w.created && !conversationIn(w.pending) {
		return nil
	}
	if err := w.write(w.pending); err != nil {
		return err
	}
	clear(w.pending) // a long message's line is not kept
	w.pending, w.created = w.pending[:0], true
	return nil
}

// write appends lines to the file, made with its header if it is not
// there yet, in one open under the file's lock; a line is written from
// where it is (a long message's is never copied). Whoever finds the file
// empty under the lock writes the header: two writers of one new session
// (two bridges) write one between them.
func (w *PiWriter) write(lines []PiLine) error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := filelock.Lock(f); err != nil {
		f.Close()
		return err
	}
	bw := bufio.NewWriterSize(f, piWriteBuffer)
	if st, err := f.Stat(); err == nil {
		switch last := make([]byte, 1); {
		case st.Size() == 0 && w.header != nil:
			bw.Write(w.header)
			bw.WriteByte('\n')
		case st.Size() > 0 && func() bool { n, _ := f.ReadAt(last, st.Size()-1); return n == 1 }() && last[0] != '\n':
			// A line cut short (a writer killed mid-line): it stays a line
			// of its own, skipped by readers, as pi repairs it.
			bw.WriteByte('\n')
		}
	}
	for _, l := range lines {
		if l.Write != nil {
			_ = l.Write(bw) // bw keeps its error, for Flush
		} else {
			bw.Write(l.Bytes)
		}
		bw.WriteByte('\n')
	}
	err = bw.Flush()                   // the first error of any write above
	if cerr := f.Close(); err == nil { // closing releases the lock
		err = cerr
	}
	return err
}

// piWriteBuffer gathers short lines into one write; a longer one is
// written from where it is.
const piWriteBuffer = 16 << 10

// conversationIn reports whether one of entries is a user or assistant
// message.
func conversationIn(entries []PiLine) bool {
	for _, l := range entries {
		e := l.Bytes
		if l.Write != nil {
			if l.Conversation {
				return true
			}
			continue
		}
		if gjson.GetBytes(e, "type").String() != "message" {
			continue
		}
		if r := gjson.GetBytes(e, "message.role").String(); r == "user" || r == "assistant" {
			return true
		}
	}
	return false
}
