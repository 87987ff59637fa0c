package bridge_test

import (
	"github.com/claude-rpc/claude-rpc/bridge"
	"github.com/claude-rpc/claude-rpc/bridge/reference"
)

// The tests' bridges check every frame they write against the protocol
// reference, which imports bridge: the check comes from here.
func init() { bridge.SetCheckFrame(reference.CheckFrame) }
