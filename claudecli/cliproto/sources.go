package cliproto

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// InventoryFile is where the inventory is kept, from the module's root.
const InventoryFile = "testdata/protocol/cli-protocol.json"

// RecordingsDir is where the recordings are, from the module's root.
const RecordingsDir = "testdata/cli"

// CLIVersions are the CLI versions the inventory reads: the ends of the
// supported range and the pinned one.
func CLIVersions() []string {
	return []string{claudecli.OldestSupported, claudecli.TestedVersion, claudecli.NewestTested}
}

// SDKVersion is the Agent SDK release of CLI version v: the SDK follows
// the CLI's 2.1.N as 0.3.N.
func SDKVersion(v string) string {
	return "0.3." + v[strings.LastIndexByte(v, '.')+1:]
}

// Cache is the folder scripts/install-cli and scripts/install-sdk install
// into: $CLAUDE_RPC_CACHE, else $XDG_CACHE_HOME/claude-rpc, else
// ~/.cache/claude-rpc.
func Cache() string {
	if c := os.Getenv("CLAUDE_RPC_CACHE"); c != "" {
		return c
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "claude-rpc")
}

// Locate finds the sources of the CLI versions cli and their SDK
// releases in cache, with the recordings in root's testdata/cli. missing
// says, for each source not there, how to install it.
func Locate(root, cache string, cli []string) (src Sources, missing []string) {
	src = Sources{SDK: map[string]string{}, CLI: map[string]string{}, Recordings: filepath.Join(root, RecordingsDir)}
	for _, v := range cli {
		if bin := cliBinary(filepath.Join(cache, "claude-code-"+v)); bin != "" {
			src.CLI[v] = bin
		} else {
			missing = append(missing, fmt.Sprintf("the Claude CLI %s (CLAUDE_CODE_VERSION=%s scripts/install-cli)", v, v))
		}
		sv := SDKVersion(v)
		dir := filepath.Join(cache, "claude-agent-sdk-"+sv)
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "sdk.d.ts")); err == nil {
			src.SDK[sv] = dir
		} else {
			missing = append(missing, fmt.Sprintf("the Agent SDK %s (CLAUDE_AGENT_SDK_VERSION=%s scripts/install-sdk)", sv, sv))
		}
	}
	return src, missing
}

// cliBinary is the CLI's native binary in a folder scripts/install-cli
// installed, "" when there is none.
func cliBinary(dir string) string {
	bins, _ := filepath.Glob(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-*", "claude"))
	bins = append(bins, filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe"))
	for _, b := range bins {
		if fi, err := os.Stat(b); err == nil && fi.Mode().IsRegular() && fi.Size() > 1<<20 {
			return b
		}
	}
	return ""
}
