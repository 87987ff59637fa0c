//go:build linux

package reference

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/cliproto"
)

// TestCLIProtocolSources: the inventory is what its sources say now (the
// Agent SDK's types and the CLI binaries of the supported range, cached by
// scripts/install-sdk and scripts/install-cli; scripts/test installs them
// first). A new CLI in the range that names something new fails here, and
// then TestCLIProtocolTable until it has its row. On Linux, where the
// CLI's binaries are installed for the tests.
func TestCLIProtocolSources(t *testing.T) {
	src, missing := cliproto.Locate(moduleRoot, cliproto.Cache(), cliproto.CLIVersions())
	claudetest.Need(t, len(missing) == 0, "the CLI protocol's sources are not all installed: "+strings.Join(missing, "; ")+" (or: go run ./scripts/cli-protocol -install -check)")
	inv, err := cliproto.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	oldBytes, err := os.ReadFile(filepath.Join(moduleRoot, cliproto.InventoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.Encode(); !bytes.Equal(oldBytes, got) {
		t.Errorf("%s is not what the sources say:\n%s\nrun go run ./scripts/cli-protocol, give each new name its row in %s, and %s",
			filepath.Join(moduleRoot, cliproto.InventoryFile), cliproto.Diff(oldBytes, got), cliTable, cliRegenerate)
	}
}
