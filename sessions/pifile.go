package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// pi's session files, as pi 1.6.0 keeps them (its docs/session-format.md,
// version 3): a JSONL file whose first line is a header
// {type:"session",version,id,timestamp,cwd,parentSession?} and whose other
// lines are entries {type,id,parentId,timestamp,…} forming a tree; the
// last entry in the file is the leaf, the session's current position.
//
// claude-rpc writes one beside each CLI transcript, so that hosts and pi's
// own tools that read pi's files (session lists, names, `pi --session`)
// see claude-rpc's sessions. What it adds to pi's format, which pi keeps
// (it reads entries as JSON objects and writes them back whole):
//   - the header's claudeSessionId: the CLI session the file was begun on;
//   - each entry claude-rpc writes carries claudeSessionId, the CLI
//     session that holds it. A message entry without one was written by
//     another program (pi itself), whose messages no CLI transcript holds.

// PiVersion is the session format version claude-rpc writes.
const PiVersion = 3

// PiAgentDirEnv and PiSessionDirEnv are the environment variables pi takes
// its agent folder and its session folder from.
const (
	PiAgentDirEnv   = "PI_CODING_AGENT_DIR"
	PiSessionDirEnv = "PI_CODING_AGENT_SESSION_DIR"
)

// PiPlace is where the pi session files of a working folder are: Dir,
// and whether Dir is shared by every working folder (a folder given by
// --session-dir, pi's environment variable or its settings: pi writes
// each folder's files there and tells them apart by their header's cwd)
// rather than cwd's own (pi's default, sessions/--<cwd>-- under its agent
// folder).
type PiPlace struct {
	Dir    string
	Shared bool
	// Cwd is the working folder the sessions belong to.
	Cwd string
}

// PiSessionPlace returns where pi keeps cwd's sessions, as pi 1.6.0
// decides it: the folder given (--session-dir), else PI_CODING_AGENT_SESSION_DIR,
// else the sessionDir setting (the project's .pi/settings.json over the
// agent folder's settings.json), else sessions/--<cwd>-- in the agent
// folder (PI_CODING_AGENT_DIR, default ~/.pi/agent). env is as os.Environ.
func PiSessionPlace(env []string, cwd, given string) PiPlace {
	home := piHome(env)
	expand := func(p string) string { return expandHome(home, p) }
	agent := PiAgentDir(env)
	dir := given
	if dir == "" {
		dir = lookupEnv(env, PiSessionDirEnv)
	}
	if dir == "" {
		dir = settingsSessionDir(filepath.Join(cwd, ".pi", "settings.json"))
	}
	if dir == "" {
		dir = settingsSessionDir(filepath.Join(agent, "settings.json"))
	}
	if dir != "" {
		dir = expand(dir)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		return PiPlace{Dir: filepath.Clean(dir), Shared: true, Cwd: cwd}
	}
	return PiPlace{Dir: filepath.Join(agent, "sessions", piFolderName(cwd)), Cwd: cwd}
}

// PiAgentDir is pi's agent folder: PI_CODING_AGENT_DIR (a leading ~ is
// the home folder), else ~/.pi/agent. env is as os.Environ.
func PiAgentDir(env []string) string {
	home := piHome(env)
	if agent := expandHome(home, lookupEnv(env, PiAgentDirEnv)); agent != "" {
		return agent
	}
	return filepath.Join(home, ".pi", "agent")
}

// piHome is the home folder pi uses: HomeVar in env, else the process's.
func piHome(env []string) string {
	if home := lookupEnv(env, HomeVar()); home != "" {
		return home
	}
	home, _ := os.UserHomeDir()
	return home
}

// expandHome expands a leading ~ in p to home, as pi does in its paths.
func expandHome(home, p string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		return filepath.Join(home, p[2:])
	}
	return p
}

// piFolderName is pi's folder name for a working folder's sessions: the
// path without its leading separator, every separator and colon a dash,
// between "--" and "--".
func piFolderName(cwd string) string {
	p := cwd
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		p = p[1:] // one separator only, as pi
	}
	return "--" + strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(p) + "--"
}

func settingsSessionDir(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return gjson.GetBytes(b, "sessionDir").String()
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && (k == key || HomeVar() == "USERPROFILE" && strings.EqualFold(k, key)) {
			v = val
		}
	}
	return v
}

// PiFileName is the name pi gives a session's file begun at t: the time
// in ISO 8601 with ':' and '.' as '-', '_', the id, ".jsonl".
func PiFileName(t time.Time, id string) string {
	ts := strings.NewReplacer(":", "-", ".", "-").Replace(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	return ts + "_" + id + ".jsonl"
}

// piIDRe is what pi accepts as a session id (assertValidSessionId).
var piIDRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// CLIID is the CLI session id for pi session id: itself when it is a
// UUID (the CLI takes no other), else one made from it (IDFor).
func CLIID(id string) string {
	if IsID(id) {
		return id
	}
	return IDFor(id)
}

// IsPiID reports whether s can be a pi session id: letters, digits, '.',
// '_' and '-', beginning and ending with a letter or digit; so it never
// names a path ("..", separators).
func IsPiID(s string) bool {
	return len(s) <= 200 && piIDRe.MatchString(s) && !strings.Contains(s, "..")
}

// PiHeader is the first line of a pi session file.
type PiHeader struct {
	Type          string `json:"type"` // "session"
	Version       int    `json:"version"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ParentSession string `json:"parentSession,omitempty"`
	// ClaudeSessionID is the CLI session the file was begun on
	// (claude-rpc's; pi keeps it).
	ClaudeSessionID string `json:"claudeSessionId,omitempty"`
}

// PiEntry is one entry of a pi session file.
type PiEntry struct {
	Type, ID, ParentID string
	// ClaudeSessionID is the CLI session holding the entry, when
	// claude-rpc wrote it.
	ClaudeSessionID string
	// Raw is the whole line.
	Raw []byte
}

// PiFile is a pi session file as read.
type PiFile struct {
	Path    string
	Header  PiHeader
	Entries []PiEntry // in file order
	// Skipped counts lines that were not JSON objects (pi skips them too:
	// a line cut short by a writer killed mid-line).
	Skipped int
}

// ErrNotPiSession is returned for a file whose first entry is not a pi
// session header.
var ErrNotPiSession = errors.New("not a pi session file")

// ReadPi reads a pi session file as pi does: lines that are not JSON are
// skipped; the first JSON line must be the header (type "session", a
// string id), else the file is no pi session. It never writes the file.
func ReadPi(path string) (*PiFile, error) {
	pf := &PiFile{Path: path}
	header := false
	err := eachObject(path, func(line []byte, v gjson.Result) error {
		if header {
			pf.Entries = append(pf.Entries, PiEntry{Type: v.Get("type").String(), ID: v.Get("id").String(),
				ParentID: v.Get("parentId").String(), ClaudeSessionID: v.Get("claudeSessionId").String(), Raw: line})
			return nil
		}
		if v.Get("type").String() != "session" || v.Get("id").Type != gjson.String {
			return fmt.Errorf("%s: %w (its first entry is %.80s)", path, ErrNotPiSession, line)
		}
		if err := json.Unmarshal(line, &pf.Header); err != nil {
			return fmt.Errorf("%s: %w: %v", path, ErrNotPiSession, err)
		}
		header = true
		return nil
	}, func() { pf.Skipped++ })
	if err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("%s: %w (no header among %d lines)", path, ErrNotPiSession, pf.Skipped)
	}
	return pf, nil
}

// Branch returns the entries from the first to the leaf (the last entry
// in the file), following parentId, oldest first: the session's current
// branch, as pi builds its context from it.
func (pf *PiFile) Branch() []PiEntry {
	if len(pf.Entries) == 0 {
		return nil
	}
	byID := make(map[string]int, len(pf.Entries))
	for i, e := range pf.Entries {
		byID[e.ID] = i
	}
	var rev []PiEntry
	seen := map[string]bool{}
	for i, ok := len(pf.Entries)-1, true; ok && !seen[pf.Entries[i].ID]; i, ok = byID[pf.Entries[i].ParentID] {
		seen[pf.Entries[i].ID] = true
		rev = append(rev, pf.Entries[i])
		if pf.Entries[i].ParentID == "" {
			break
		}
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}

// Name is the session's name: the newest session_info entry's, trimmed
// ("" when none, or cleared).
func (pf *PiFile) Name() string {
	name := ""
	for _, e := range pf.Entries {
		if e.Type == "session_info" {
			name = strings.TrimSpace(gjson.GetBytes(e.Raw, "name").String())
		}
	}
	return name
}

// FindPi returns the file of session id in place: the file whose header
// has that id (in a shared folder, and for that working folder). An id
// that could name a path has none.
func FindPi(place PiPlace, id string) (string, bool) {
	return place.find(id, func(h PiHeader) bool { return h.ID == id })
}

// FindPiByClaude returns the pi file in place begun on CLI session id
// (its header's claudeSessionId), or named after it.
func FindPiByClaude(place PiPlace, id string) (string, bool) {
	return place.find(id, func(h PiHeader) bool { return h.ClaudeSessionID == id || h.ID == id })
}

// FindPiPrefix returns the file in place of the session whose id begins
// with prefix, as pi 1.6.0's --session does for an id that is no
// session's whole id (main.js resolveSessionPath): of the sessions that
// match, the one with the latest activity (SessionManager.list's order:
// piActivity).
func FindPiPrefix(place PiPlace, prefix string) (path string, ok bool) {
	if !IsPiID(prefix) {
		return "", false
	}
	var best time.Time
	place.each(func(p string, h PiHeader) bool {
		if strings.HasPrefix(h.ID, prefix) {
			if at := piActivity(p, h); !ok || at.After(best) {
				path, best, ok = p, at, true
			}
		}
		return false
	})
	return path, ok
}

// piActivity is when a session was last active, as pi 1.6.0 lists
// sessions (buildSessionInfo's modified): its newest user or assistant
// message's time (the message's timestamp, else its entry's), else the
// header's timestamp, else the file's modification time.
func piActivity(path string, h PiHeader) time.Time {
	var last int64
	_ = eachObject(path, func(_ []byte, v gjson.Result) error {
		m := v.Get("message")
		if v.Get("type").String() != "message" || !m.Get("content").Exists() {
			return nil
		}
		if r := m.Get("role").String(); r != "user" && r != "assistant" {
			return nil
		}
		if at := m.Get("timestamp"); at.Type == gjson.Number {
			last = max(last, at.Int())
		} else if t, err := time.Parse(time.RFC3339Nano, v.Get("timestamp").String()); err == nil {
			last = max(last, t.UnixMilli())
		}
		return nil
	}, func() {})
	if last > 0 {
		return time.UnixMilli(last)
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Timestamp); err == nil {
		return t
	}
	if st, err := os.Stat(path); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}

// find is the first of place's files whose header is match's, for an id
// that names no path.
func (place PiPlace) find(id string, match func(PiHeader) bool) (path string, ok bool) {
	if !IsPiID(id) {
		return "", false
	}
	place.each(func(p string, h PiHeader) bool {
		if ok = match(h); ok {
			path = p
		}
		return ok
	})
	return path, ok
}

// LatestPi returns the most recently written session file in place (of
// its working folder, in a shared folder), as pi's --continue finds it,
// and when it was written.
func LatestPi(place PiPlace) (path string, at time.Time, ok bool) {
	place.each(func(p string, _ PiHeader) bool {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.ModTime().After(at) {
			path, at, ok = p, st.ModTime(), true
		}
		return false
	})
	return path, at, ok
}

// each calls f with each session file of place and its header (in a
// shared folder, those of place's working folder only) until f returns
// true.
func (place PiPlace) each(f func(path string, h PiHeader) bool) {
	files, _ := filepath.Glob(filepath.Join(place.Dir, "*.jsonl"))
	for _, p := range files {
		if h, ok := piHeaderOf(p); ok && (!place.Shared || samePath(h.Cwd, place.Cwd)) && f(p, h) {
			return
		}
	}
}

func samePath(a, b string) bool {
	return a != "" && filepath.Clean(a) == filepath.Clean(b)
}

// piHeaderOf reads a file's first line as a pi header.
func piHeaderOf(path string) (PiHeader, bool) {
	f, err := os.Open(path)
	if err != nil {
		return PiHeader{}, false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 1<<20), 64<<10).ReadBytes('\n')
	if err != nil && err != io.EOF {
		return PiHeader{}, false
	}
	var h PiHeader
	if json.Unmarshal(bytes.TrimSpace(line), &h) != nil || h.Type != "session" || h.ID == "" {
		return PiHeader{}, false
	}
	return h, true
}
