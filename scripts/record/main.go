//go:build unix

// Command record runs the real, pinned Claude CLI against the fake Anthropic
// API (claudecli/fakeapi) for each scenario and saves what it printed, so
// tests can replay real CLI output. Recorded files are never edited by hand:
// change a scenario here and record again.
//
//	go run ./scripts/record                 # every scenario, into testdata/cli
//	go run ./scripts/record -run 'error'    # the scenarios whose name matches
//	go run ./scripts/record -version 2.1.332 -out /tmp/rec -compare
//	go run ./scripts/record -j 1            # one scenario at a time
//
// For each scenario it writes testdata/cli/<name>.input.jsonl (what was sent
// on the CLI's stdin) and testdata/cli/<name>.jsonl (the CLI's stdout).
//
// -version records another CLI version (installed by scripts/install-cli);
// the goldens stay those of the pinned one. -compare then translates the
// new recordings and testdata/cli's into pi events and lists the events
// that differ (exit status 1 when any do); scripts/test-cli-versions runs
// it for the newest version tested.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// scenario is one recorded CLI run: one process, one user message.
type scenario struct {
	name   string
	prompt string
	// noPartial leaves out --include-partial-messages.
	noPartial bool
	// args are added to the command line.
	args []string
	// setup, when set, is a first prompt run in its own process; the
	// recorded one then resumes its session.
	setup string
	// env is added to the CLI's environment.
	env []string
	// killAt, when set, interrupts the process (SIGTERM to its group, as
	// the pipe transport's abort does) once it printed a line containing
	// this; the recording ends there.
	killAt string
	// transcript saves the session's transcript as <name>.transcript.jsonl.
	transcript bool
	// steer, when set, is a user message sent mid-turn (the stream
	// transport's steering) once the CLI printed a line containing
	// steerAt; stdin is closed at the first result after the CLI started it.
	steer, steerAt string
	// results, when set, keeps stdin open as the stream transport does
	// and closes it at the results-th result line: the CLI's turns of its
	// own after the prompt's (a background sub-agent's notification) are
	// recorded as it prints them while idle.
	results int
	// before are lines sent on stdin before the prompt (control requests).
	before []string
	// files are written into the working folder first, by name.
	files map[string]string
	// then, when set, is a user message sent once the CLI printed the
	// prompt's result, as the stream transport sends a follow-up that
	// runs in the same run; stdin is closed at the next result.
	then string
	// oauth runs the CLI as a claude.ai subscriber (an OAuth token instead
	// of the API key): it then reads the API's usage-limit headers and
	// reports them (rate_limit_event).
	oauth bool
}

// hookSettings configure hooks (the project's .claude/settings.json): one
// that prints while it runs (hook_progress), one that fails.
const hookSettings = `{"hooks":{
 "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo checking; sleep 2; echo checked"}]}],
 "PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo post-hook broke >&2; exit 1"}]}]
}}`

// readNotes is the file the Read scenarios read: tabs, lines that look
// numbered as the CLI numbers its Read results, a blank line, no newline
// at the end.
const readNotes = "1\tone\n     2\ttwo, numbered as cat -n does\n\tan indented line\twith a tab inside\n\n  5→ an arrow\nlast line, no newline"

// steerUUID is the uuid the recorded steering messages carry.
const steerUUID = "57ee5000-0000-4000-8000-000000000001"

var scenarios = []scenario{
	{name: "text", prompt: "Say hello [[say:Hello there, <friend> & co!]][[chunk:4]]"},
	{name: "text-unicode", prompt: "[[say:emoji 😀 quotes \" backslash \\ line\u2028sep\nnewline]][[chunk:5]]"},
	{name: "text-no-partial", prompt: "[[say:Whole message at once.]]", noPartial: true},
	{name: "thinking", prompt: "[[think:Let me think: 2+2 is 4.]][[say:The answer is 4.]][[chunk:6]]"},
	{name: "tool-bash", prompt: "[[say:Running it.]][[bash:echo hello-from-tool]][[chunk:8]]"},
	{name: "tool-bash-no-partial", prompt: "[[bash:echo hello-from-tool]]", noPartial: true},
	{name: "tools-two", prompt: "[[bash:echo one]][[bash:echo two]][[chunk:10]]"},
	{name: "tools-many", prompt: "[[say:Checking ten things, one by one, and reporting each result as it comes in.]]" +
		"[[bash:echo 1]][[bash:echo 2]][[bash:echo 3]][[bash:echo 4]][[bash:echo 5]]" +
		"[[bash:echo 6]][[bash:echo 7]][[bash:echo 8]][[bash:echo 9]][[bash:echo 10]][[chunk:6]]"},
	// Read of a file whose text looks like the CLI's own numbered lines
	// (tabs, leading numbers): hosts get it as it is, as pi's read gives it.
	{name: "tool-read", prompt: "[[read:notes.txt]]", files: map[string]string{"notes.txt": readNotes}},
	{name: "tool-read-range", prompt: `[[tool:Read:{"file_path":"notes.txt","offset":2,"limit":3}]]`, files: map[string]string{"notes.txt": readNotes}},
	{name: "tool-read-empty", prompt: "[[read:empty.txt]]", files: map[string]string{"empty.txt": ""}},
	{name: "tool-read-past-end", prompt: `[[tool:Read:{"file_path":"notes.txt","offset":50}]]`, files: map[string]string{"notes.txt": readNotes}},
	{name: "tool-error", prompt: "[[bash:ls ./no-such-file]]"},
	{name: "tool-denied-outside-cwd", prompt: "[[bash:ls /nonexistent-dir-for-claude-rpc]]"},
	{name: "permission-denied", prompt: `[[tool:Write:{"file_path":"/tmp/claude-rpc-denied.txt","content":"x"}]]`},
	{name: "max-turns", prompt: "[[bash:echo once]]", args: []string{"--max-turns", "1"}},
	{name: "max-tokens", prompt: "[[say:This reply is cut]][[stop:max_tokens]]"},
	{name: "interrupt-mid-text", prompt: "[[slow:100]]", killAt: `"text":"word "`},
	{name: "interrupt-mid-tool", prompt: "[[bash:sleep 20; echo finished]]", killAt: `"subtype":"task_started"`},
	{name: "api-error-500", prompt: "fail [[error:500]]"},
	{name: "api-error-529", prompt: "overloaded [[error:529]]"},
	{name: "api-retry-then-success", prompt: "flaky [[flaky:529:2]][[say:made it]]"},
	{name: "api-retry-exhausted", prompt: "flaky [[flaky:529:5]][[say:never]]", env: []string{"CLAUDE_CODE_MAX_RETRIES=2"}},
	{name: "compact", setup: "Remember the word pelican. [[say:Noted: pelican.]]", prompt: "/compact"},
	{name: "huge-reply", prompt: "[[huge:2000000]]"},
	{name: "transcript", setup: "first [[think:Let me see.]][[say:one]]", prompt: "[[say:Running it.]][[bash:echo tool-out]]", transcript: true},
	// A model changed on the running process (the control protocol's
	// set_model, as claude-rpc sent it before it restarted the process
	// instead): the CLI records it as a local /model command in the
	// transcript, which a session loaded again must not show.
	{name: "transcript-model-command", setup: "first [[say:one]]", prompt: "second [[say:two]]", transcript: true,
		before: []string{`{"type":"control_request","request_id":"model","request":{"subtype":"set_model","model":"fable"}}`}},
	{name: "api-reset-mid-stream", prompt: "cut me [[reset:1]][[chunk:3]][[say:the whole reply]]"},
	{name: "auto-compact", setup: "[[bash:echo one]]", prompt: "next [[say:after compaction]]", env: []string{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=1"}},
	{name: "steer-at-tool-boundary", prompt: "[[bash:sleep 1; echo slept]]", steerAt: `"type":"assistant"`, steer: "change course [[say:steered]]"},
	{name: "steer-after-reply", prompt: "[[slow:20]]", steerAt: `"text":"word "`, steer: "and then [[say:steered]]"},
	// A sub-agent (the CLI's Agent tool) that runs a tool and reports, in
	// the foreground and in the background (the CLI holds the turn's
	// result until it ends, then answers its notification in a turn of
	// its own).
	{name: "subagent", prompt: "[[say:Delegating.]][[agent:look around {{bash:echo from-sub}}]][[chunk:8]]"},
	{name: "subagent-background", prompt: "[[agentbg:look around {{bash:sleep 1; echo from-sub}}]]"},
	// The same with stdin open (the stream transport): the CLI answers the
	// prompt at once; the sub-agent's lines, its end and the turn the CLI
	// runs by itself about it come after that result, while idle.
	{name: "subagent-background-idle", prompt: "[[agentbg:look around {{bash:sleep 1; echo from-sub}}]]", results: 2},
	// The CLI's todo tools (on with CLAUDE_CODE_ENABLE_TODO_TOOLS=1, which
	// the bridge sets): tasks created, updated, renamed and deleted, an
	// update of a task that does not exist and one the CLI refuses, then a
	// list and a get.
	{name: "todos-tasks", env: []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=1"}, prompt: "Plan it " +
		`[[tool:TaskCreate:{"subject":"Write the parser","description":"Parse the input","activeForm":"Writing the parser"}]]` +
		`[[tool:TaskCreate:{"subject":"Test it","description":"Add tests"}]]` +
		`[[tool:TaskUpdate:{"taskId":"1","status":"in_progress"}]]` +
		`[[tool:TaskUpdate:{"taskId":"2","subject":"Test the parser","status":"completed"}]]` +
		`[[tool:TaskCreate:{"subject":"Drop me","description":"Not needed"}]]` +
		`[[tool:TaskUpdate:{"taskId":"3","status":"deleted"}]]` +
		`[[tool:TaskUpdate:{"taskId":"9","status":"completed"}]]` +
		`[[tool:TaskUpdate:{"taskId":"1","status":"done"}]]` +
		`[[tool:TaskCreate:{"subject":"Ship it","description":"Release"}]]` +
		`[[tool:TaskList:{}]][[tool:TaskGet:{"taskId":"4"}]]`},
	// The CLI's older TodoWrite tool, which it offers instead of the task
	// tools with CLAUDE_CODE_ENABLE_TASKS=0: two writes of the whole list.
	// The CLI's notices (transform/notices.go): hooks that run, print and
	// fail; a usage limit near and reached (as a subscriber); a permission
	// mode set; /clear.
	{name: "hooks", prompt: "[[bash:echo hooked]]", files: map[string]string{".claude/settings.json": hookSettings}},
	{name: "rate-limit-warning", prompt: "[[say:close to the limit]][[ratelimit:allowed_warning]]", oauth: true},
	{name: "rate-limit-rejected", prompt: "[[say:never]][[ratelimit:rejected]]", oauth: true},
	{name: "permission-mode", prompt: "[[say:planned]]",
		before: []string{`{"type":"control_request","request_id":"mode","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`}},
	{name: "clear", setup: "Remember the word pelican. [[say:Noted: pelican.]]", prompt: "/clear"},
	// /clear, then a follow-up in the same process (a run that goes on
	// after the clear).
	{name: "clear-then-text", setup: "Remember the word pelican. [[say:Noted: pelican.]]", prompt: "/clear", then: "after [[say:two]]"},
	{name: "todos-todowrite", env: []string{"CLAUDE_CODE_ENABLE_TASKS=0", "CLAUDE_CODE_ENABLE_TODO_TOOLS=1"}, prompt: "Plan it " +
		`[[tool:TodoWrite:{"todos":[{"content":"Write the parser","status":"in_progress","activeForm":"Writing the parser"},{"content":"Test it","status":"pending","activeForm":"Testing it"}]}]]` +
		`[[tool:TodoWrite:{"todos":[{"content":"Write the parser","status":"completed","activeForm":"Writing the parser"},{"content":"Ship it","status":"in_progress","activeForm":"Shipping it"}]}]]`},
}

func main() {
	out := flag.String("out", "testdata/cli", "folder for the recordings")
	run := flag.String("run", "", "record only the scenarios whose name matches this regexp")
	cli := flag.String("cli", os.Getenv(claudetest.CLIEnvVar), "the Claude CLI (default: scripts/install-cli)")
	version := flag.String("version", "", "record this CLI version, installed by scripts/install-cli (instead of -cli)")
	cmp := flag.Bool("compare", false, "then list the pi events that differ from testdata/cli's recordings")
	rec := flag.Bool("record", true, "record (-record=false -compare compares the recordings already in -out)")
	jobs := flag.Int("j", 3, "record up to this many scenarios at once (those that interrupt or steer on a printed line run alone)")
	flag.Parse()
	log.SetFlags(0)
	re, err := regexp.Compile(*run)
	if err != nil {
		log.Fatalf("-run: %v", err)
	}
	if *rec && (*version != "" || *cli == "") {
		install := exec.Command("bash", "scripts/install-cli")
		if *version != "" {
			install.Env = append(os.Environ(), "CLAUDE_CODE_VERSION="+*version)
		}
		install.Stderr = os.Stderr
		b, err := install.Output()
		if err != nil {
			log.Fatalf("scripts/install-cli: %v", err)
		}
		*cli = strings.TrimSpace(string(b))
	}
	const ref = "testdata/cli"
	if *cmp && filepath.Clean(*out) == ref {
		log.Fatalf("-compare: record elsewhere (-out), to compare with %s", ref)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if *rec {
		var todo []scenario
		for _, sc := range scenarios {
			if re.MatchString(sc.name) {
				todo = append(todo, sc)
			}
		}
		if failed := recordAll(*cli, *out, todo, *jobs); failed > 0 {
			log.Fatalf("%d scenario(s) could not be recorded", failed)
		}
	}
	if *cmp {
		n, err := compare(os.Stdout, *out, ref, re)
		if err != nil {
			log.Fatalf("-compare: %v", err)
		}
		if n > 0 {
			log.Fatalf("%d scenario(s) translate to other pi events than %s's", n, ref)
		}
		log.Printf("every scenario translates to the same pi events as %s's", ref)
	}
}

// recordAll records todo into out, up to jobs scenarios at once, and returns
// how many failed (each one logged). Each scenario runs against a fake API
// of its own (its [[flaky]] counts and requests are its own). A scenario
// that acts when the CLI prints a line (killAt, steerAt, results) runs
// alone, after the others: what it records depends on how far the CLI got
// in the meantime, which a loaded machine would shift. Most of a
// recording's time is the CLI starting and waiting on the fake API, so a
// few at once use the cores the CLI leaves idle (2.1.332's 34 scenarios
// on 2 shared cores: 40.5 s one at a time, 37 s two, 33-34 s three).
func recordAll(cli, out string, todo []scenario, jobs int) (failed int) {
	var mu sync.Mutex
	one := func(sc scenario) {
		start := time.Now()
		err := recordAlone(cli, out, sc)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			log.Printf("%s: %v", sc.name, err)
			failed++
			return
		}
		log.Printf("recorded %s (%.1f s)", sc.name, time.Since(start).Seconds())
	}
	var alone []scenario
	sem := make(chan struct{}, max(jobs, 1))
	var wg sync.WaitGroup
	for _, sc := range todo {
		if sc.killAt != "" || sc.steerAt != "" || sc.results > 0 || sc.then != "" {
			alone = append(alone, sc)
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			one(sc)
		}()
	}
	wg.Wait()
	for _, sc := range alone {
		one(sc)
	}
	return failed
}

// recordAlone records sc against a fake API of its own.
func recordAlone(cli, out string, sc scenario) error {
	srv, err := fakeapi.New()
	if err != nil {
		return err
	}
	defer srv.Close()
	return record(srv, cli, out, sc)
}

// scratchDir makes a recording's scratch folder (its HOME and working
// folder), its name always as long: the CLI's texts name it (a background
// Agent's output file), the fake API streams a tool result's text back in
// 1,000-byte deltas, and with os.MkdirTemp's suffix (1 to 10 digits) a
// name one digit shorter moved those deltas' boundaries, which -compare
// reported as a difference (subagent-background, on 2.1.330).
func scratchDir() (string, error) {
	for {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("record-home-%010d", rand.Uint32()))
		if err := os.Mkdir(dir, 0o700); !errors.Is(err, fs.ErrExist) {
			return dir, err
		}
	}
}

func record(srv *claudetest.Server, cli, out string, sc scenario) error {
	home, err := scratchDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	for name, text := range sc.files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	env := srv.CLIEnv(home)
	if sc.oauth {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") })
		env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-fake")
	}
	// As the bridge runs it: every hook reported (--include-hook-events).
	cfg := claudecli.Config{Path: cli, Dir: home, Env: append(env, sc.env...), PermissionMode: "default", ExtraArgs: sc.args, HookEvents: true}
	var session claudecli.Session
	if sc.setup != "" {
		stdout, err := runCLI(cfg, session, false, claudecli.UserLine(sc.setup, nil), "", "", nil, 0)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		for _, l := range bytes.Split(stdout, []byte("\n")) {
			if sid := gjson.GetBytes(l, "session_id").String(); sid != "" {
				session = claudecli.Session{ID: sid, Exists: true}
			}
		}
	}
	var input []byte
	for _, l := range sc.before {
		input = append(input, l+"\n"...)
	}
	input = append(input, claudecli.UserLine(sc.prompt, nil)...)
	var steer []byte
	if sc.steer != "" {
		steer = claudecli.UserLineID(sc.steer, nil, steerUUID)
	}
	results := sc.results
	if sc.then != "" {
		steer, results = claudecli.UserLine(sc.then, nil), 2
	}
	stdout, err := runCLI(cfg, session, sc.noPartial, input, sc.killAt, sc.steerAt, steer, results)
	if err != nil {
		return err
	}
	input = append(input, steer...)
	if err := os.WriteFile(filepath.Join(out, sc.name+".input.jsonl"), input, 0o644); err != nil {
		return err
	}
	if sc.transcript {
		files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
		if len(files) != 1 {
			return fmt.Errorf("want one transcript, found %v", files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, sc.name+".transcript.jsonl"), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, sc.name+".jsonl"), stdout, 0o644)
}

// runCLI runs one CLI process the way the pipe transport does and returns
// its stdout. With steer, stdin stays open as in the stream transport: steer
// is sent once a line contains steerAt; without steerAt, it is sent at the
// first result (a follow-up). With results > 0, stdin stays open until the
// CLI printed that many result lines.
func runCLI(cfg claudecli.Config, session claudecli.Session, noPartial bool, input []byte, killAt, steerAt string, steer []byte, results int) ([]byte, error) {
	args := cfg.TurnArgs(session)
	if noPartial {
		args = slicesDelete(args, "--include-partial-messages")
	}
	cmd := exec.Command(cfg.Path, args...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdin io.WriteCloser
	if steer == nil && results == 0 {
		cmd.Stdin = bytes.NewReader(input)
	} else {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if stdin != nil {
		if _, err := stdin.Write(input); err != nil {
			return nil, err
		}
	}
	steerStarted := false
	// A steer without steerAt is a follow-up: sent at the first result,
	// stdin closed at the results-th.
	followUp := steer != nil && steerAt == ""
	var stdout bytes.Buffer
	r := bufio.NewReaderSize(pipe, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		stdout.Write(line)
		if killAt != "" && bytes.Contains(line, []byte(killAt)) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			killAt = ""
		}
		isResult := gjson.GetBytes(line, "type").String() == "result"
		if isResult {
			results--
		}
		switch {
		case stdin == nil:
		case followUp && isResult && results == 0:
			stdin.Close()
			stdin = nil
		case followUp && isResult:
			if _, err := stdin.Write(steer); err != nil {
				return nil, err
			}
			steer = nil
		case followUp:
		case steer == nil:
			if isResult && results == 0 {
				stdin.Close()
				stdin = nil
			}
		case steerAt != "" && bytes.Contains(line, []byte(steerAt)):
			if _, err := stdin.Write(steer); err != nil {
				return nil, err
			}
			steerAt = ""
		case bytes.Contains(line, []byte(`"command_uuid":"`+steerUUID+`","state":"started"`)):
			steerStarted = true
		case steerStarted && isResult:
			stdin.Close()
			stdin = nil
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil && stdout.Len() == 0 {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.Bytes(), nil
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
