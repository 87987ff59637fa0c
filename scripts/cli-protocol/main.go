// Command cli-protocol writes the inventory of the Claude CLI's
// stream-json protocol (testdata/protocol/cli-protocol.json): every line
// type, system subtype, control request and API stream event named by the
// Agent SDK's types, the CLI binary and the recordings, with the versions
// that name it (claudecli/cliproto). The CLI versions are the supported
// range's ends and the pinned one (claudecli/version.go), each with its
// Agent SDK release (2.1.N: 0.3.N), from the cache scripts/install-cli and
// scripts/install-sdk install into. Run it from the module's root.
//
//	go run ./scripts/cli-protocol            # rewrite the inventory
//	go run ./scripts/cli-protocol -check     # fail when it is not what the sources say
//	go run ./scripts/cli-protocol -install   # install the sources that are missing first
//
// What claude-rpc makes of each name is the protocol reference's table
// (bridge/reference/cliprotocol.go), and testdata/protocol/cli-protocol.md
// shows both (go test ./bridge/reference -run TestCLIProtocol -update).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli/cliproto"
)

func main() {
	check := flag.Bool("check", false, "compare the inventory with what the sources say, and fail when they differ (writes nothing)")
	install := flag.Bool("install", false, "install the CLI versions and Agent SDK releases that are missing (npm)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("cli-protocol: ")
	if _, err := os.Stat("go.mod"); err != nil {
		log.Fatal("run it from the module's root (go run ./scripts/cli-protocol)")
	}
	start := time.Now()
	versions := cliproto.CLIVersions()
	if *install {
		for _, v := range versions {
			run("scripts/install-cli", "CLAUDE_CODE_VERSION="+v)
			run("scripts/install-sdk", "CLAUDE_AGENT_SDK_VERSION="+cliproto.SDKVersion(v))
		}
	}
	src, missing := cliproto.Locate(".", cliproto.Cache(), versions)
	if len(missing) > 0 {
		log.Fatalf("missing sources (or run with -install):\n  %s", strings.Join(missing, "\n  "))
	}
	inv, err := cliproto.Build(src)
	if err != nil {
		log.Fatal(err)
	}
	got := inv.Encode()
	if *check {
		old, err := os.ReadFile(cliproto.InventoryFile)
		if err != nil {
			log.Fatal(err)
		}
		if !bytes.Equal(old, got) {
			log.Fatalf("%s is not what the sources say:\n%s\nrun go run ./scripts/cli-protocol, give each new name its row in bridge/reference/cliprotocol.go, and go test ./bridge/reference -run TestCLIProtocol -update",
				cliproto.InventoryFile, cliproto.Diff(old, got))
		}
		log.Printf("%s is up to date (%d names; %.1f s)", cliproto.InventoryFile, len(inv.Entries), time.Since(start).Seconds())
		return
	}
	if err := os.WriteFile(cliproto.InventoryFile, got, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s (%d names; %.1f s)", cliproto.InventoryFile, len(inv.Entries), time.Since(start).Seconds())
}

// run runs an install script with env added, its output on stderr.
func run(script string, env string) {
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), env)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatal(fmt.Errorf("%s %s: %w", env, script, err))
	}
}
