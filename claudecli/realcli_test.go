package claudecli_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestDetectVersionOfTheRealCLI: the pinned CLI, as scripts/install-cli
// lays it out, is read from its install and agrees with its --version.
func TestDetectVersionOfTheRealCLI(t *testing.T) {
	c := claudecli.Command{Path: claudetest.CLI(t)}
	fromFiles, ok := claudecli.InstalledVersion(c)
	require.True(t, ok, "the version of %s is read from its install", c.Path)
	run, err := claudecli.RunVersion(c, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, run, fromFiles)
	v, err := claudecli.DetectVersion(c, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, run, v)
}
