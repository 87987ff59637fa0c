package sessions

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// Entry is one line of a CLI transcript. What this package relies on (true
// of 2.1.328's transcripts): every line has a "type"; conversation lines (user, assistant, attachment, system)
// have a "uuid" and a "parentUuid" linking them into a tree whose newest
// leaf is the session's current branch; an assistant message is written as
// one entry per content block, all with the same message.id. Other kinds
// (queue-operation, api-request, cost-state, last-prompt, custom-title, …)
// carry no conversation.
type Entry struct {
	Type   string
	UUID   string
	Parent string
	// Raw is the whole line.
	Raw []byte
}

// Transcript is a transcript file as read.
type Transcript struct {
	Path    string
	Entries []Entry
	// Skipped counts lines that were not JSON objects (a line cut short
	// by a CLI still writing, or killed).
	Skipped int
}

// ErrNotTranscript is returned for a file that holds no transcript line.
var ErrNotTranscript = errors.New("not a Claude transcript")

// maxEntry bounds one transcript line (a pasted 20 MB file fits).
const maxEntry = 256 << 20

// eachObject calls object with each line of the file at path that is a
// JSON object (trimmed; its own copy) and skipped with each that is not (a
// line of other text, or one over maxEntry), until object returns an
// error, which it returns. A directory or an unreadable file is an error.
func eachObject(path string, object func(line []byte, v gjson.Result) error, skipped func()) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > maxEntry {
			skipped()
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			if v := gjson.ParseBytes(line); gjson.ValidBytes(line) && v.IsObject() {
				if err := object(line, v); err != nil {
					return err
				}
			} else {
				skipped()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ReadTranscript reads a transcript tolerantly: lines that are not JSON
// objects are counted and skipped, unknown kinds are kept. It never writes
// the file. A directory, an unreadable file, or one in which no line is a
// transcript entry is an error.
func ReadTranscript(path string) (*Transcript, error) {
	tr := &Transcript{Path: path}
	err := eachObject(path, func(line []byte, v gjson.Result) error {
		if v.Get("type").String() == "" {
			tr.Skipped++
			return nil
		}
		tr.Entries = append(tr.Entries, Entry{Type: v.Get("type").String(), UUID: v.Get("uuid").String(),
			Parent: v.Get("parentUuid").String(), Raw: line})
		return nil
	}, func() { tr.Skipped++ })
	if err != nil {
		return nil, err
	}
	// Every transcript the CLI writes names its session on its lines
	// (queue operations too); JSON lines that never do are another
	// program's (a pi session file without its header).
	named := false
	for _, e := range tr.Entries {
		if gjson.GetBytes(e.Raw, "sessionId").Exists() || e.UUID != "" {
			named = true
			break
		}
	}
	if !named {
		return nil, fmt.Errorf("%s: %w (%d lines, none a transcript entry)", path, ErrNotTranscript, tr.Skipped+len(tr.Entries))
	}
	return tr, nil
}

// SessionID is the session the transcript belongs to: its entries'
// sessionId, else its file name.
func (t *Transcript) SessionID() string {
	for _, e := range t.Entries {
		if id := gjson.GetBytes(e.Raw, "sessionId").String(); id != "" {
			return id
		}
	}
	return strings.TrimSuffix(filepath.Base(t.Path), ".jsonl")
}

// Conversation returns the user and assistant entries of the current branch,
// oldest first: from the newest such entry back along parentUuid. A parent
// that is missing (a fork copies messages without their attachments) is
// stepped over by falling back to file order. Side chains (subagents) are
// left out.
func (t *Transcript) Conversation() []Entry {
	byID := map[string]int{}
	last := -1
	for i, e := range t.Entries {
		if e.UUID != "" {
			byID[e.UUID] = i
		}
		if isMessage(e) {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var rev []Entry
	seen := map[int]bool{}
	for i := last; i >= 0 && !seen[i]; {
		seen[i] = true
		e := t.Entries[i]
		if isMessage(e) {
			rev = append(rev, e)
		}
		j, ok := byID[e.Parent]
		switch {
		case e.Parent == "":
			i = -1
		case ok:
			i = j
		default:
			i = t.previousMessage(i)
		}
	}
	out := make([]Entry, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// previousMessage is the index of the message entry before i in file order,
// or -1.
func (t *Transcript) previousMessage(i int) int {
	for j := i - 1; j >= 0; j-- {
		if isMessage(t.Entries[j]) {
			return j
		}
	}
	return -1
}

func isMessage(e Entry) bool {
	return (e.Type == "user" || e.Type == "assistant") && !gjson.GetBytes(e.Raw, "isSidechain").Bool()
}

// Find locates a session's transcript: path when it is one, else the
// session id's file in cwd's project folder or any other.
func Find(configDir, cwd, idOrPath string) (string, error) {
	if strings.ContainsAny(idOrPath, `/\`) || strings.HasSuffix(idOrPath, ".jsonl") {
		return idOrPath, nil
	}
	if !validID(idOrPath) {
		return "", fmt.Errorf("%q is neither a transcript path nor a session id", idOrPath)
	}
	if p, ok := Locate(configDir, cwd, idOrPath); ok {
		return p, nil
	}
	return "", fmt.Errorf("no transcript of session %s under %s", idOrPath, filepath.Join(configDir, "projects"))
}

// validID accepts what a session id can be: letters, digits and dashes
// (the CLI's are UUIDs), so an id never names a path.
func validID(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Latest returns the id of the most recently written session in cwd's
// project folder, for --continue.
func Latest(configDir, cwd string) (string, error) {
	dir := ProjectDir(configDir, cwd)
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var best string
	var bestTime int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.ModTime().UnixNano() > bestTime {
			best, bestTime = f, st.ModTime().UnixNano()
		}
	}
	if best == "" {
		return "", fmt.Errorf("no session to continue in %s", dir)
	}
	return strings.TrimSuffix(filepath.Base(best), ".jsonl"), nil
}

// CreateTranscript writes a new transcript for session id in cwd's project
// folder (a pi session imported: transform.ImportPi's lines), for the CLI
// to resume. The file is the user's alone (0600; folders 0700) and is
// created, never overwritten: a session id that has a transcript already
// is an error (fs.ErrExist). A failed write removes what it began.
func CreateTranscript(configDir, cwd, id string, lines [][]byte) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("%q is no session id", id)
	}
	if len(lines) == 0 {
		return "", errors.New("a transcript needs a line")
	}
	if p, ok := Locate(configDir, cwd, id); ok {
		return "", fmt.Errorf("session %s has a transcript already (%s): %w", id, p, fs.ErrExist)
	}
	path := TranscriptPath(configDir, cwd, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	for _, l := range lines {
		w.Write(l)
		w.WriteByte('\n')
	}
	err = w.Flush() // the first write error, if any
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}
