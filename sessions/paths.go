// Package sessions knows where the Claude CLI keeps its sessions and how to
// read them. It writes none of the CLI's files but the transcript of a
// session imported from pi (CreateTranscript), and pi's session files.
package sessions

import (
	"crypto/rand"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// ConfigDir returns the CLI's configuration folder for an environment:
// CLAUDE_CONFIG_DIR when set, else .claude in the user's home as the CLI
// finds it: USERPROFILE on windows (HOME there is Git Bash's or MSYS's, not
// the CLI's), HOME elsewhere. env is a list of KEY=value pairs as in
// os.Environ; a key set twice counts at its last (on windows in any case).
func ConfigDir(env []string) string {
	return configDir(runtime.GOOS, env)
}

// HomeVar is the environment variable the CLI takes the user's home from
// here: USERPROFILE on Windows, HOME elsewhere.
func HomeVar() string {
	if runtime.GOOS == "windows" {
		return "USERPROFILE"
	}
	return "HOME"
}

func configDir(goos string, env []string) string {
	homeVar, same := "HOME", func(a, b string) bool { return a == b }
	if goos == "windows" {
		homeVar, same = "USERPROFILE", strings.EqualFold
	}
	var home, cfg string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case same(k, "CLAUDE_CONFIG_DIR"):
			cfg = v
		case same(k, homeVar):
			home = v
		}
	}
	if cfg != "" {
		return cfg
	}
	if home == "" {
		home, _ = os.UserHomeDir() // "" is the best we can say
	}
	return filepath.Join(home, ".claude")
}

// ProjectDir returns the folder of a working directory's transcripts: the
// path with every character that is not an ASCII letter or digit replaced by
// "-", under projects/ of the config folder. The CLI does this on UTF-16
// code units, so a character outside the BMP becomes two dashes.
func ProjectDir(configDir, cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	return filepath.Join(configDir, "projects", b.String())
}

// TranscriptPath returns the JSONL transcript of session id started in cwd.
func TranscriptPath(configDir, cwd, id string) string {
	return filepath.Join(ProjectDir(configDir, cwd), id+".jsonl")
}

// SubagentPath returns the JSONL transcript the CLI keeps of sub-agent
// agentID of session id (its Agent tool's task id), beside the session's.
func SubagentPath(configDir, cwd, id, agentID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), id, "subagents", "agent-"+agentID+".jsonl")
}

// NewID returns a new random session id (a version 4 UUID, as the CLI's
// --session-id requires).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Exists reports whether the CLI has written a transcript for session id:
// at the path for cwd, or, should the CLI have mapped the folder otherwise,
// in any project folder. A session the CLI announced but stopped before
// writing (killed in its first moments) does not exist: resuming it fails
// with "No conversation found", creating it with --session-id works.
func Exists(configDir, cwd, id string) bool {
	_, ok := Locate(configDir, cwd, id)
	return ok
}

// Locate returns the transcript of session id: in cwd's project folder,
// else in any project folder. An id that could name a path (see validID)
// has none.
func Locate(configDir, cwd, id string) (string, bool) {
	if !validID(id) {
		return "", false
	}
	if p := TranscriptPath(configDir, cwd, id); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	matches, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", id+".jsonl"))
	if len(matches) > 0 {
		return matches[0], true
	}
	return "", false
}

// uuidRe is a UUID as the CLI takes one for --session-id.
var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsID reports whether s is a UUID, which the CLI takes as a session id.
func IsID(s string) bool { return uuidRe.MatchString(s) }

// IDFor is the session id (a name-based UUID, version 5) for a host's
// own name of a session that is not a UUID: the same name, the same id.
func IDFor(name string) string {
	h := sha1.Sum(append([]byte("claude-rpc session:"), name...))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
