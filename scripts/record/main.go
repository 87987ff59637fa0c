// Command record runs the real, pinned Claude CLI against the fake Anthropic
// API (claudecli/claudetest) for each scenario and saves what it printed, so
// tests can replay real CLI output. Recorded files are never edited by hand:
// change a scenario here and record again.
//
//	go run ./scripts/record                 # every scenario, into testdata/cli
//	go run ./scripts/record -run 'error'    # the scenarios whose name matches
//
// For each scenario it writes testdata/cli/<name>.input.jsonl (what was sent
// on the CLI's stdin) and testdata/cli/<name>.jsonl (the CLI's stdout).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// scenario is one recorded CLI run: one process, one user message.
type scenario struct {
	name   string
	prompt string
	// noPartial leaves out --include-partial-messages.
	noPartial bool
}

var scenarios = []scenario{
	{name: "text", prompt: "Say hello [[say:Hello there, <friend> & co!]][[chunk:4]]"},
	{name: "text-unicode", prompt: "[[say:emoji 😀 quotes \" backslash \\ line\u2028sep\nnewline]][[chunk:5]]"},
	{name: "text-no-partial", prompt: "[[say:Whole message at once.]]", noPartial: true},
	{name: "api-error-500", prompt: "fail [[error:500]]"},
	{name: "api-error-529", prompt: "overloaded [[error:529]]"},
}

func main() {
	out := flag.String("out", "testdata/cli", "folder for the recordings")
	run := flag.String("run", "", "record only the scenarios whose name matches this regexp")
	cli := flag.String("cli", os.Getenv(claudetest.CLIEnvVar), "the Claude CLI (default: scripts/install-cli)")
	flag.Parse()
	log.SetFlags(0)
	re, err := regexp.Compile(*run)
	if err != nil {
		log.Fatalf("-run: %v", err)
	}
	if *cli == "" {
		b, err := exec.Command("bash", "scripts/install-cli").Output()
		if err != nil {
			log.Fatalf("scripts/install-cli: %v", err)
		}
		*cli = strings.TrimSpace(string(b))
	}
	srv, err := claudetest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, sc := range scenarios {
		if !re.MatchString(sc.name) {
			continue
		}
		if err := record(srv, *cli, *out, sc); err != nil {
			log.Fatalf("%s: %v", sc.name, err)
		}
		log.Printf("recorded %s", sc.name)
	}
}

func record(srv *claudetest.Server, cli, out string, sc scenario) error {
	home, err := os.MkdirTemp("", "record-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cfg := claudecli.Config{Path: cli, Dir: home, Env: srv.CLIEnv(home), PermissionMode: "default"}
	args := cfg.TurnArgs("")
	if sc.noPartial {
		args = slicesDelete(args, "--include-partial-messages")
	}
	input := claudecli.UserLine(sc.prompt, nil)
	cmd := exec.Command(cli, args...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Environ()
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && stdout.Len() == 0 {
		return fmt.Errorf("%v: %s", err, stderr.String())
	}
	if err := os.WriteFile(filepath.Join(out, sc.name+".input.jsonl"), input, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, sc.name+".jsonl"), stdout.Bytes(), 0o644)
}

func slicesDelete(xs []string, x string) []string {
	var out []string
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}
