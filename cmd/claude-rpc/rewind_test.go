//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreFilesFlag: file checkpointing is on unless --restore-files
// (or its variable) turns it off.
func TestRestoreFilesFlag(t *testing.T) {
	isolateConfig(t)
	for _, c := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", true},
		{[]string{"--restore-files=false"}, "", false},
		{[]string{"--restore-files"}, "false", true},
		{nil, "false", false},
	} {
		t.Setenv("CLAUDE_RPC_RESTORE_FILES", c.env)
		opts, _, err, _ := piOptions(t, c.args...)
		require.NoError(t, err)
		assert.Equal(t, c.want, opts.CLI.FileCheckpoints, "%v %q", c.args, c.env)
	}
}
