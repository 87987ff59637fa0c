//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// benchPrompt is the prompt every benchmark turn sends.
const benchPrompt = "benchmark turn [[say:ok]]"

// benchSetup serves a fake API and returns the CLI, a working folder and
// the environment for turns against it.
func benchSetup(b *testing.B) (cli, dir string, env []string) {
	srv := claudetest.Start(b)
	return claudetest.CLI(b), b.TempDir(), srv.CLIEnv(b.TempDir())
}

// timeRawTurn times one raw CLI turn, run the way the pipe transport runs it.
func timeRawTurn(b *testing.B, cli, dir string, env []string) (first, exit time.Duration) {
	cfg := claudecli.Config{PermissionMode: "default"}
	return timeProcess(b, exec.Command(cli, cfg.TurnArgs(claudecli.Session{})...), env, dir,
		string(claudecli.UserLine(benchPrompt, nil)), `"type":"result"`)
}

// timeBridgeTurn times one prompt in a new bridge (with args), stdin
// closed after it.
func timeBridgeTurn(b *testing.B, cli, dir string, env []string, transport string, args ...string) (first, exit time.Duration) {
	return timeProcess(b, exec.Command(binary(b), append([]string{"--mode", "rpc", "--claude-path", cli, "--cwd", dir, "--transport", transport}, args...)...),
		env, dir, fmt.Sprintf("{\"type\":\"prompt\",\"message\":%q}\n", benchPrompt), `"type":"agent_end"`)
}

// pipes connects cmd's stdin and stdout.
func pipes(b *testing.B, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser) {
	b.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	return stdin, stdout
}

// timeProcess starts cmd, writes input, waits for a stdout line containing
// marker, closes stdin, and waits for exit.
func timeProcess(b *testing.B, cmd *exec.Cmd, env []string, dir, input, marker string) (first, exit time.Duration) {
	b.Helper()
	cmd.Env, cmd.Dir = env, dir
	stdin, stdout := pipes(b, cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := io.WriteString(stdin, input); err != nil {
		b.Fatal(err)
	}
	if strings.HasPrefix(input, `{"type":"user"`) {
		_ = stdin.Close() // the pipe transport's way: the CLI answers after EOF
	}
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, marker) {
			break
		}
		if err != nil {
			b.Fatalf("%s: no %s line; stderr: %s", cmd.Path, marker, stderr.String())
		}
	}
	first = time.Since(start)
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v; stderr: %s", cmd.Path, err, stderr.String())
	}
	return first, time.Since(start)
}
