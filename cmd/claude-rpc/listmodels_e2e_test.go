//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// runListModels runs claude-rpc with args in home and dir, the CLI talking
// to srv, and returns its stdout, its stderr and its exit status.
func runListModels(t *testing.T, srv *claudetest.Server, home, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir, cmd.Env = dir, srv.CLIEnv(home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestListModels: `claude-rpc --list-models [search]`, as a web host runs
// `pi --list-models` for its model picker: pi's table of the models
// get_available_models lists (the first run asks the CLI; the next one
// answers from the info cache without running it), the search as pi's,
// exit status 0; a CLI that cannot be found is an error on stderr, exit
// status 1, and nothing on stdout.
func TestListModels(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	home, dir := t.TempDir(), t.TempDir()
	// The CLI, counting its starts.
	starts := filepath.Join(t.TempDir(), "starts")
	cli := fakeCLI(t, "echo \"$*\" >> '"+starts+"'\nexec '"+claudetest.CLI(t)+"' \"$@\"\n")
	count := func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "\n")
	}

	out, errOut, status := runListModels(t, srv, home, dir, "--list-models", "--claude-path", cli)
	require.Equal(t, 0, status, errOut)
	assert.Positive(t, count(), "the CLI was asked")
	// From the info cache now: the CLI does not run.
	before := count()
	sonnet, errOut, status := runListModels(t, srv, home, dir, "--list-models", "sonnet", "--claude-path", cli)
	require.Equal(t, 0, status, errOut)
	if !assert.Equal(t, before, count(), "answered from the info cache") {
		b, _ := os.ReadFile(starts)
		t.Logf("the CLI's starts:\n%s", b)
	}

	// The table is pi's table of what get_available_models answers.
	b := startBridgeWith(t, bridgeOpts{srv: srv, cli: cli, home: home, dir: dir})
	resp := b.call(map[string]any{"type": "get_available_models"})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	var data struct{ Models []listedModel }
	require.NoError(t, json.Unmarshal([]byte(resp.Get("data").Raw), &data))
	require.NotEmpty(t, data.Models)
	assert.Equal(t, modelTable(data.Models, ""), out)

	// As pi's: a header, one row per model, sorted, every line padded to
	// one width, each column starting where its header does.
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, len(data.Models)+1, out)
	header := lines[0]
	assert.Regexp(t, `^provider +model +context +max-out +thinking +images$`, header)
	var ids []string
	for _, l := range lines[1:] {
		assert.Len(t, l, len(header), "%q", l)
		f := strings.Fields(l)
		require.Len(t, f, 6, l)
		assert.Equal(t, "anthropic", f[0])
		for _, col := range []string{"model", "context", "max-out", "thinking", "images"} {
			at := strings.Index(header, col)
			assert.NotEqual(t, byte(' '), l[at], "%q: column %s", l, col)
			assert.Equal(t, byte(' '), l[at-1], "%q: column %s", l, col)
		}
		ids = append(ids, f[1])
	}
	assert.True(t, slices.IsSorted(ids), "%v", ids)
	assert.Contains(t, ids, "claude-opus-5-5")
	assert.Contains(t, ids, "claude-sonnet-5-5")

	assert.Equal(t, modelTable(data.Models, "sonnet"), sonnet)
	out = sonnet
	assert.Contains(t, out, "claude-sonnet-5-5")
	assert.NotContains(t, out, "claude-opus-5-5")

	out, errOut, status = runListModels(t, srv, home, dir, "--list-models", "zzzq", "--claude-path", cli)
	require.Equal(t, 0, status, errOut)
	assert.Equal(t, "No models matching \"zzzq\"\n", out)

	// pi lists its models whatever --mode says.
	out, errOut, status = runListModels(t, srv, home, dir, "--mode", "rpc", "--list-models=opus", "--claude-path", cli)
	require.Equal(t, 0, status, errOut)
	assert.Equal(t, modelTable(data.Models, "opus"), out)

	out, errOut, status = runListModels(t, srv, home, dir, "--list-models", "--claude-path", filepath.Join(dir, "no-such-claude"))
	assert.Equal(t, 1, status)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "claude-rpc: --list-models: ")
	assert.Contains(t, errOut, "no-such-claude")
	assert.Empty(t, srv.MessagesRequests(), "listing the models costs no API call")
}
