// Package infocache keeps what a Claude CLI said about itself (its
// version, models, commands, and the limits of the models it ran) between
// claude-rpc's runs, so a bridge that starts can answer get_state,
// get_available_models and get_commands at once, before the CLI has
// started. An entry belongs to one CLI binary (its path, size and
// modification time) and the settings that shape the CLI's answer (the
// working folder, the CLI's config folder and the settings, commands,
// skills, agents and plugins in it and in the project, the CLI's
// ANTHROPIC_* and CLAUDE_CODE_* environment): a change to any of them
// makes a new key, so a changed CLI or changed settings never see an old
// answer.
//
// The files are a cache: one that cannot be read or parsed is a miss,
// never an error; writes go to a temporary file renamed into place, so a
// reader sees a whole entry or none, and concurrent bridges may write the
// same entry (the last one wins).
package infocache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// formatVersion is written into every entry; an entry of another format is
// a miss.
const formatVersion = 1

// Limits are a model's context window and output cap, as the CLI reported
// them for a turn it ran.
type Limits struct {
	ContextWindow int64 `json:"contextWindow"`
	MaxTokens     int64 `json:"maxTokens"`
}

// Entry is what the CLI said last time.
type Entry struct {
	// Info is the CLI's initialize answer (its version, models, commands).
	Info claudecli.Info `json:"info"`
	// Limits are the limits the CLI reported, by API model id.
	Limits map[string]Limits `json:"limits,omitempty"`
	// Saved is when the entry was written.
	Saved time.Time `json:"saved"`
}

type file struct {
	Format int    `json:"format"`
	Key    string `json:"key"`
	Entry  Entry  `json:"entry"`
}

// Store is a folder of entries. Its methods may be called from any
// goroutine; Save calls of one Store are serialized by its lock.
type Store struct {
	dir string
	mu  sync.Mutex // serializes Save
}

// DefaultDir is the cache's folder: claude-rpc/cli-info in the user's
// cache folder (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows); "" when there is
// none.
func DefaultDir() string {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, "claude-rpc", "cli-info")
}

// Open returns the store in dir. A Store with dir "" keeps nothing: every
// Load misses, every Save does nothing.
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Load returns the entry for key; ok is false when there is none, or it
// cannot be read.
func (s *Store) Load(key string) (e Entry, ok bool) {
	if s == nil || s.dir == "" || key == "" {
		return Entry{}, false
	}
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		return Entry{}, false
	}
	var f file
	if json.Unmarshal(b, &f) != nil || f.Format != formatVersion || f.Key != key {
		return Entry{}, false
	}
	return f.Entry, true
}

// Save writes the entry for key.
func (s *Store) Save(key string, e Entry) error {
	if s == nil || s.dir == "" || key == "" {
		return nil
	}
	b, err := json.Marshal(file{Format: formatVersion, Key: key, Entry: e})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".entry-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", tmp.Name(), errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), s.path(key)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

func (s *Store) path(key string) string { return filepath.Join(s.dir, key+".json") }

// Key names the entry for the CLI cli run in folder cwd with config folder
// configDir and environment env. ok is false when the CLI's binary cannot
// be found: then there is nothing to key on.
func Key(cli claudecli.Command, cwd, configDir string, env []string) (key string, ok bool) {
	h := sha256.New()
	add := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s\n", len(p), p)
		}
	}
	add("cli", cli.Path)
	add(cli.Args...)
	// The binary that runs: the script node runs, else the command.
	bin := cli.Path
	if len(cli.Args) > 0 {
		bin = cli.Args[0]
	}
	if !stamp(add, bin) {
		return "", false
	}
	add("cwd", cwd, "config", configDir)
	// What the CLI reads that shapes its models and commands: settings
	// files by their stamp, folders of commands, skills and agents by
	// their entries' (a folder's own time changes with files the CLI
	// writes there itself).
	for _, p := range []string{
		filepath.Join(configDir, "settings.json"),
		filepath.Join(configDir, "plugins", "installed_plugins.json"),
		filepath.Join(cwd, ".claude", "settings.json"),
		filepath.Join(cwd, ".claude", "settings.local.json"),
		filepath.Join(cwd, ".mcp.json"),
	} {
		if !stamp(add, p) {
			add("absent", p)
		}
	}
	for _, d := range []string{
		filepath.Join(configDir, "commands"),
		filepath.Join(configDir, "skills"),
		filepath.Join(configDir, "agents"),
		filepath.Join(cwd, ".claude", "commands"),
		filepath.Join(cwd, ".claude", "skills"),
		filepath.Join(cwd, ".claude", "agents"),
	} {
		add("folder", d)
		stampTree(add, d, 3)
	}
	var vars []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_") || k == "CLAUDE_CONFIG_DIR" {
			vars = append(vars, kv) // hashed: no secret reaches the file
		}
	}
	slices.Sort(vars)
	add(vars...)
	return hex.EncodeToString(h.Sum(nil)[:16]), true
}

// stamp adds path's identity (resolved path, size, modification time) and
// reports whether it exists.
func stamp(add func(...string), path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	st, err := os.Stat(real)
	if err != nil {
		return false
	}
	add("file", real, fmt.Sprint(st.Size()), st.ModTime().UTC().Format(time.RFC3339Nano))
	return true
}

// stampTree adds the stamps of the files below dir, depth folders deep
// (commands and skills sit in subfolders: skills/NAME/SKILL.md).
func stampTree(add func(...string), dir string, depth int) {
	if depth == 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries { // sorted by name
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			add("dir", p)
			stampTree(add, p, depth-1)
			continue
		}
		stamp(add, p)
	}
}
