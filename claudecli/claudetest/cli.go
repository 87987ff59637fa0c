package claudetest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// CLIEnvVar names the environment variable that gives tests the path of the
// real Claude CLI. scripts/test sets it; without it [CLI] installs the pinned
// CLI with scripts/install-cli.
const CLIEnvVar = "CLAUDE_RPC_TEST_CLI"

var cli struct {
	once sync.Once
	path string
	err  error
}

// CLI returns the path of the real, pinned Claude CLI, installing it on first
// use. It fails the test when the CLI cannot be had: end-to-end tests never
// skip, so a machine that cannot run them is reported, not hidden.
func CLI(t TB) string {
	t.Helper()
	cli.once.Do(func() { cli.path, cli.err = findCLI() })
	if cli.err != nil {
		t.Fatalf("the real Claude CLI is needed for this test: %v", cli.err)
	}
	return cli.path
}

func findCLI() (string, error) {
	if p := os.Getenv(CLIEnvVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "install-cli"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New("scripts/install-cli: " + err.Error() + ": " + strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// moduleRoot finds the directory holding go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// CLIEnv returns an environment for running the real CLI against s with its
// own home directory (transcripts and settings land there): the current
// environment without CLAUDECODE and ANTHROPIC_*, plus [Server.Env].
func (s *Server) CLIEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "CLAUDECODE" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	return append(env, s.Env()...)
}
