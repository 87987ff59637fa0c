package bridge

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// How get_state knows the model before the CLI has said it (no info cache
// entry for this CLI and its settings, and the CLI not started or not
// answered yet):
//
//   - The CLI's start-up names a model id: get_state reports it at once.
//     The name is the one the CLI takes from --model, ANTHROPIC_MODEL (in
//     a settings file's "env" or its environment) or the settings files'
//     "model" (the project's, then the user's): see [namedModel].
//   - Otherwise (no name: the CLI's default, which depends on the account;
//     or an alias such as "opus", which only the CLI resolves), the first
//     get_state sent within firstModelWait of the bridge's start waits for
//     the CLI's answer until then, off the dispatcher (it holds no command
//     back: its answer is the state as it was when it came, with the
//     model filled in once the CLI said it); past that, or when the CLI
//     cannot answer, it leaves the model out, as pi does when it has none.
//
// Once the CLI has said (now or, from the info cache, in an earlier
// start), its word is what get_state reports.

// firstModelWait bounds how long after the bridge's start get_state waits
// for the CLI to say its model: longer than the CLI takes to say it on a
// busy machine, and about what pi itself takes to answer its first
// get_state (docs/performance.md, 'Figures behind the code').
const firstModelWait = 2 * time.Second

// namedModel is the model id the CLI is started with, as far as its flags,
// environment and settings files tell (flag is --model); "" when they name
// none, name an alias (modelID), or may say otherwise in a way not read
// here: a settings file that is not valid JSON (the CLI ignores it), or
// the machine's managed settings folder exists. It reads at most three
// small files.
//
// The CLI's order (2.1.328, each checked against the fake API: the model
// of the next request): --model; ANTHROPIC_MODEL in a settings file's
// "env" (the project's settings.local.json, its settings.json, the user's
// settings.json, in the CLI's config folder: CLAUDE_CONFIG_DIR, else
// ~/.claude), which the CLI sets over its environment's; ANTHROPIC_MODEL
// in its environment; the settings files' "model", in the same order.
func namedModel(flag string, env []string, cwd, configDir string) string {
	if flag != "" {
		return modelID(flag)
	}
	if managedSettings() {
		return ""
	}
	type settings struct {
		Model string         `json:"model"`
		Env   map[string]any `json:"env"`
	}
	var files []settings // highest first
	for _, p := range []string{
		filepath.Join(cwd, ".claude", "settings.local.json"),
		filepath.Join(cwd, ".claude", "settings.json"),
		filepath.Join(configDir, "settings.json"),
	} {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var s settings
		if err != nil || json.Unmarshal(b, &s) != nil {
			return ""
		}
		files = append(files, s)
	}
	for _, s := range files {
		switch m := s.Env["ANTHROPIC_MODEL"].(type) {
		case nil:
		case string:
			if m != "" {
				return modelID(m)
			}
		default:
			return "" // not a name: what the CLI makes of it is its own
		}
	}
	for _, kv := range env {
		if m, ok := strings.CutPrefix(kv, "ANTHROPIC_MODEL="); ok && m != "" {
			return modelID(m)
		}
	}
	for _, s := range files {
		if s.Model != "" {
			return modelID(s.Model)
		}
	}
	return ""
}

// modelID is name when it is a model id, "" when it is an alias: one word
// of letters, maybe with a [1m] suffix ("opus", "sonnet[1m]", "default").
// The CLI resolves an alias by its own table (and ANTHROPIC_DEFAULT_*
// variables); a model id it runs as given (a full id, a Bedrock or Vertex
// id, a proxy's name with a dash or a digit), and lists it among its
// models under that id.
func modelID(name string) string {
	word := strings.TrimSuffix(strings.ToLower(name), "[1m]")
	if strings.Trim(word, "abcdefghijklmnopqrstuvwxyz") == "" {
		return ""
	}
	return name
}

// managedDir is the folder of the CLI's managed (organization) settings
// files on this system, whose settings come before all others. Managed
// settings the CLI reads from elsewhere (Windows' registry, macOS
// profiles, the organization's server) are not looked for: the CLI's
// answer, once it comes, is get_state's model. A variable for the tests.
var managedDir = func() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode"
	case "windows":
		return `C:\Program Files\ClaudeCode`
	}
	return "/etc/claude-code"
}()

// managedSettings reports whether the machine has managedDir.
func managedSettings() bool {
	_, err := os.Stat(managedDir)
	return err == nil
}
