//go:build unix

// Command cli-capabilities measures, by running it against the fake
// Anthropic API (claudecli/fakeapi), which parts of the CLI's interface
// claude-rpc relies on a Claude CLI version has. It prints one table row per
// version: what claudecli/version.go's capability table is made of.
//
//	go run ./scripts/cli-capabilities 2.1.200 2.1.328   # each installed by scripts/install-cli
//	go run ./scripts/cli-capabilities -cli /path/to/claude
//	go run ./scripts/cli-capabilities -probes lifecycle 2.1.210 2.1.220
//
// A cell is "ok" or "no", with the reason on stderr (-v: every probe's
// reason). Each probe starts its own CLI process in a scratch home.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/claude-rpc/claude-rpc/claudecli/fakeapi"
)

// probe is one capability: run returns nil when the CLI has it.
type probe struct {
	name string
	run  func(c *cli) error
}

var probes = []probe{
	{"native", probeNative},
	{"stream-json", probeStreamJSON},
	{"partial", probePartial},
	{"initialize", probeInitialize},
	{"interrupt", probeInterrupt},
	{"set_model", probeSetModel},
	{"effort", probeEffort},
	{"can_use_tool", probeCanUseTool},
	{"mcp_message", probeMCP},
	{"lifecycle", probeLifecycle},
	{"session-id", probeSessionID},
	{"resume-at", probeResumeAt},
	{"name", probeName},
	{"transcript-first", probeTranscriptFirst},
}

// cli is the CLI under test and the fake API it talks to.
type cli struct {
	path string
	srv  *claudetest.Server
}

func main() {
	path := flag.String("cli", "", "the CLI to probe (instead of versions installed by scripts/install-cli)")
	verbose := flag.Bool("v", false, "print every probe's reason, not only failures'")
	only := flag.String("probes", "", "run only the probes whose name matches this regexp")
	flag.Parse()
	log.SetFlags(0)
	re, err := regexp.Compile(*only)
	if err != nil {
		log.Fatalf("-probes: %v", err)
	}
	probes := slices.DeleteFunc(slices.Clone(probes), func(p probe) bool { return !re.MatchString(p.name) })
	srv, err := fakeapi.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	targets := flag.Args()
	if *path != "" {
		targets = []string{*path}
	}
	if len(targets) == 0 {
		log.Fatal("name versions to probe, or -cli PATH")
	}
	head := []string{"version"}
	for _, p := range probes {
		head = append(head, p.name)
	}
	fmt.Println("| " + strings.Join(head, " | ") + " |")
	fmt.Println(strings.Repeat("| --- ", len(head)) + "|")
	for _, target := range targets {
		p := target
		if *path == "" {
			cmd := exec.Command("bash", "scripts/install-cli")
			cmd.Env = append(os.Environ(), "CLAUDE_CODE_VERSION="+target)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				log.Printf("%s: scripts/install-cli: %v", target, err)
				continue
			}
			p = strings.TrimSpace(string(out))
		}
		c := &cli{path: p, srv: srv}
		version, err := exec.Command(p, "--version").Output()
		if err != nil {
			log.Printf("%s: --version: %v", p, err)
			continue
		}
		row := []string{strings.Fields(string(version))[0]}
		for _, pr := range probes {
			srv.Forget()
			err := pr.run(c)
			cell := "ok"
			if err != nil {
				cell = "no"
			}
			if err != nil || *verbose {
				log.Printf("%s %s: %s: %v", row[0], pr.name, cell, err)
			}
			row = append(row, cell)
		}
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
}

// proc is one CLI process with stdin open, its stdout read line by line.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan gjson.Result
	home  string
	dir   string
	seen  []string // every line, for reasons
}

// start runs the CLI with stream-json in and out (and args) in a fresh
// home; extra is added to the environment.
func (c *cli) start(args []string, extra ...string) (*proc, error) {
	home, err := os.MkdirTemp("", "cli-capabilities-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(home, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	all := append([]string{"-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json"}, args...)
	cmd := exec.Command(c.path, all...)
	cmd.Dir = dir
	cmd.Env = append(c.srv.CLIEnv(home), extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan gjson.Result, 4096), home: home, dir: dir}
	go func() {
		defer close(p.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(l)) > 0 {
				if gjson.ValidBytes(l) {
					p.lines <- gjson.ParseBytes(l)
				} else {
					p.lines <- gjson.Parse(fmt.Sprintf(`{"type":"not-json","text":%q}`, l))
				}
			}
			if err != nil {
				if s := strings.TrimSpace(stderr.String()); s != "" {
					p.lines <- gjson.Parse(fmt.Sprintf(`{"type":"stderr","text":%q}`, s))
				}
				return
			}
		}
	}()
	return p, nil
}

// stop ends the process and its group and removes its home.
func (p *proc) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	_ = os.RemoveAll(p.home)
}

func (p *proc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

func userLine(text string) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text},
		"session_id": "default", "parent_tool_use_id": nil}
}

func controlRequest(id string, req map[string]any) map[string]any {
	return map[string]any{"type": "control_request", "request_id": id, "request": req}
}

// until reads lines until match, answering the CLI's control requests
// with answer (nil: refused), for at most d.
func (p *proc) until(d time.Duration, answer func(req gjson.Result) any, match func(l gjson.Result) bool) (gjson.Result, error) {
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return gjson.Result{}, fmt.Errorf("the CLI exited (%s)", p.tail())
			}
			p.seen = append(p.seen, l.Raw)
			if l.Get("type").String() == "control_request" {
				resp := map[string]any{"subtype": "error", "request_id": l.Get("request_id").String(), "error": "not handled"}
				if answer != nil {
					if a := answer(l.Get("request")); a != nil {
						resp = map[string]any{"subtype": "success", "request_id": l.Get("request_id").String(), "response": a}
					}
				}
				if err := p.send(map[string]any{"type": "control_response", "response": resp}); err != nil {
					return gjson.Result{}, err
				}
			}
			if match(l) {
				return l, nil
			}
		case <-deadline:
			return gjson.Result{}, fmt.Errorf("nothing within %v (%s)", d, p.tail())
		}
	}
}

// tail is the last lines read, shortened, for a reason.
func (p *proc) tail() string {
	var out []string
	for _, l := range p.seen[max(0, len(p.seen)-3):] {
		if len(l) > 200 {
			l = l[:200] + "…"
		}
		out = append(out, l)
	}
	return "last lines: " + strings.Join(out, " | ")
}

func isType(typ string) func(gjson.Result) bool {
	return func(l gjson.Result) bool { return l.Get("type").String() == typ }
}

func isResponse(id string) func(gjson.Result) bool {
	return func(l gjson.Result) bool {
		return l.Get("type").String() == "control_response" && l.Get("response.request_id").String() == id
	}
}

// response checks a control response's success.
func response(l gjson.Result) error {
	if l.Get("response.subtype").String() != "success" {
		return fmt.Errorf("refused: %s", l.Get("response.error").String())
	}
	return nil
}

// turn sends text and waits for the result line.
func (p *proc) turn(text string, answer func(gjson.Result) any) (gjson.Result, error) {
	if err := p.send(userLine(text)); err != nil {
		return gjson.Result{}, err
	}
	return p.until(30*time.Second, answer, isType("result"))
}

// oneTurn starts the CLI with args, runs one turn of text and stops it.
func (c *cli) oneTurn(args []string, text string) (*proc, gjson.Result, error) {
	p, err := c.start(args)
	if err != nil {
		return nil, gjson.Result{}, err
	}
	r, err := p.turn(text, nil)
	p.stop()
	return p, r, err
}

func probeNative(c *cli) error {
	f, err := os.Open(c.path)
	if err != nil {
		return err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return err
	}
	if string(magic[:]) == "\x7fELF" || string(magic[:2]) == "MZ" || magic[0] == 0xcf || magic[0] == 0xfe {
		return nil
	}
	return fmt.Errorf("a script run by %q", strings.SplitN(string(magic[:]), "\n", 2)[0])
}

func probeStreamJSON(c *cli) error {
	_, r, err := c.oneTurn(nil, "[[say:probe answered]]")
	if err != nil {
		return err
	}
	if got := r.Get("result").String(); got != "probe answered" {
		return fmt.Errorf("result %q", got)
	}
	return nil
}

func probePartial(c *cli) error {
	p, _, err := c.oneTurn([]string{"--include-partial-messages"}, "[[say:in parts]][[chunk:3]]")
	if err != nil {
		return err
	}
	for _, l := range p.seen {
		if gjson.Get(l, "event.delta.type").String() == "text_delta" {
			return nil
		}
	}
	return errors.New("no stream_event with a text_delta")
}

func probeInitialize(c *cli) error {
	p, err := c.start(nil)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.send(controlRequest("init", map[string]any{"subtype": "initialize", "hooks": nil})); err != nil {
		return err
	}
	l, err := p.until(20*time.Second, nil, isResponse("init"))
	if err != nil {
		return err
	}
	if err := response(l); err != nil {
		return err
	}
	r := l.Get("response.response")
	if len(r.Get("models").Array()) == 0 || len(r.Get("commands").Array()) == 0 {
		return fmt.Errorf("no models or commands in %.200s", r.Raw)
	}
	return nil
}

func probeInterrupt(c *cli) error {
	p, err := c.start([]string{"--include-partial-messages"})
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.send(userLine("[[slow:300]]")); err != nil {
		return err
	}
	if _, err := p.until(20*time.Second, nil, func(l gjson.Result) bool {
		return l.Get("event.delta.type").String() == "text_delta" || l.Get("type").String() == "assistant"
	}); err != nil {
		return err
	}
	if err := p.send(controlRequest("stop", map[string]any{"subtype": "interrupt"})); err != nil {
		return err
	}
	l, err := p.until(10*time.Second, nil, isResponse("stop"))
	if err != nil {
		return err
	}
	if err := response(l); err != nil {
		return err
	}
	if _, err := p.until(10*time.Second, nil, isType("result")); err != nil {
		return fmt.Errorf("no result after the interrupt: %w", err)
	}
	r, err := p.turn("[[say:still here]]", nil)
	if err != nil {
		return fmt.Errorf("the next turn: %w", err)
	}
	if r.Get("result").String() != "still here" {
		return fmt.Errorf("the next turn answered %q", r.Get("result").String())
	}
	return nil
}

// request is the body of the fake API's last Messages request for the
// user's text (not one of the requests some versions make on the side,
// such as a title with another model).
func (c *cli) request(text string) gjson.Result {
	reqs := c.srv.MessagesRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUserText() == text {
			return gjson.ParseBytes(reqs[i].Body)
		}
	}
	return gjson.Result{}
}

func probeSetModel(c *cli) error {
	p, err := c.start([]string{"--model", "opus"})
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := p.turn("[[say:one]]", nil); err != nil {
		return err
	}
	before := c.request("[[say:one]]").Get("model").String()
	if err := p.send(controlRequest("model", map[string]any{"subtype": "set_model", "model": "haiku"})); err != nil {
		return err
	}
	l, err := p.until(10*time.Second, nil, isResponse("model"))
	if err != nil {
		return err
	}
	if err := response(l); err != nil {
		return err
	}
	if _, err := p.turn("[[say:two]]", nil); err != nil {
		return err
	}
	if after := c.request("[[say:two]]").Get("model").String(); after == before || !strings.Contains(after, "haiku") {
		return fmt.Errorf("the model went from %q to %q", before, after)
	}
	return nil
}

// probeEffort: --effort on the command line and apply_flag_settings
// {effortLevel} on a running process.
func probeEffort(c *cli) error {
	p, err := c.start([]string{"--effort", "low"})
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := p.turn("[[say:one]]", nil); err != nil {
		return err
	}
	if got := c.request("[[say:one]]").Get("output_config.effort").String(); got != "low" {
		return fmt.Errorf("--effort low sent effort %q", got)
	}
	if err := p.send(controlRequest("effort", map[string]any{"subtype": "apply_flag_settings", "settings": map[string]any{"effortLevel": "high"}})); err != nil {
		return err
	}
	l, err := p.until(10*time.Second, nil, isResponse("effort"))
	if err != nil {
		return err
	}
	if err := response(l); err != nil {
		return err
	}
	if _, err := p.turn("[[say:two]]", nil); err != nil {
		return err
	}
	if got := c.request("[[say:two]]").Get("output_config.effort").String(); got != "high" {
		return fmt.Errorf("apply_flag_settings high sent effort %q", got)
	}
	return nil
}

func probeCanUseTool(c *cli) error {
	p, err := c.start([]string{"--permission-prompt-tool", "stdio", "--permission-mode", "default"})
	if err != nil {
		return err
	}
	defer p.stop()
	asked := ""
	target := filepath.Join(p.dir, "allowed.txt")
	answer := func(req gjson.Result) any {
		if req.Get("subtype").String() != "can_use_tool" {
			return nil
		}
		asked = req.Get("tool_name").String()
		return map[string]any{"behavior": "allow", "updatedInput": json.RawMessage(req.Get("input").Raw)}
	}
	in, _ := json.Marshal(map[string]string{"file_path": target, "content": "allowed"})
	if err := p.send(userLine("[[tool:Write:" + string(in) + "]]")); err != nil {
		return err
	}
	if _, err := p.until(30*time.Second, answer, isType("result")); err != nil {
		return err
	}
	if asked != "Write" {
		return fmt.Errorf("no can_use_tool request for Write")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "allowed" {
		return fmt.Errorf("the allowed Write did not run: %v", err)
	}
	return nil
}

func probeMCP(c *cli) error {
	cfg := `{"mcpServers":{"host":{"type":"sdk","name":"host"}}}`
	p, err := c.start([]string{"--mcp-config", cfg, "--allowedTools", "mcp__host"})
	if err != nil {
		return err
	}
	defer p.stop()
	called := false
	answer := func(req gjson.Result) any {
		if req.Get("subtype").String() != "mcp_message" {
			return nil
		}
		m := req.Get("message")
		result := func(r any) any {
			return map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "result": r}}
		}
		switch m.Get("method").String() {
		case "initialize":
			return result(map[string]any{"protocolVersion": m.Get("params.protocolVersion").String(),
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]string{"name": "probe", "version": "1"}})
		case "tools/list":
			return result(map[string]any{"tools": []any{map[string]any{"name": "echo", "description": "echoes",
				"inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			called = true
			return result(map[string]any{"content": []any{map[string]string{"type": "text", "text": "echoed"}}})
		}
		return map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "result": map[string]any{}}}
	}
	if err := p.send(controlRequest("init", map[string]any{"subtype": "initialize", "hooks": nil})); err != nil {
		return err
	}
	if err := p.send(userLine("[[tool:mcp__host__echo:{}]]")); err != nil {
		return err
	}
	if _, err := p.until(30*time.Second, answer, isType("result")); err != nil {
		return err
	}
	if !called {
		return errors.New("no tools/call came as mcp_message")
	}
	return nil
}

// probeLifecycle: a user line sent during a tool run is reported with
// command_lifecycle lines carrying its uuid (started), and the turn ends.
func probeLifecycle(c *cli) error {
	p, err := c.start(nil)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.send(userLine("[[bash:sleep 1; echo slept]]")); err != nil {
		return err
	}
	if _, err := p.until(20*time.Second, nil, isType("assistant")); err != nil {
		return err
	}
	const uuid = "57ee5000-0000-4000-8000-0000000000ff"
	steer := userLine("change course [[say:steered]]")
	steer["uuid"] = uuid
	if err := p.send(steer); err != nil {
		return err
	}
	started := false
	_, err = p.until(30*time.Second, nil, func(l gjson.Result) bool {
		if l.Get("type").String() == "command_lifecycle" && l.Get("command_uuid").String() == uuid && l.Get("state").String() == "started" {
			started = true
		}
		return started && l.Get("type").String() == "result" && l.Get("result").String() == "steered"
	})
	if err != nil {
		return fmt.Errorf("started %v: %w", started, err)
	}
	return nil
}

// probeSessionID: --session-id names the session's transcript, and
// --resume continues it in a new process.
func probeSessionID(c *cli) error {
	const id = "5e551010-0000-4000-8000-000000000001"
	p, err := c.start([]string{"--session-id=" + id})
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := p.turn("[[say:first]]", nil); err != nil {
		return err
	}
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
	files, _ := filepath.Glob(filepath.Join(p.home, ".claude", "projects", "*", id+".jsonl"))
	if len(files) != 1 {
		return errors.New("no transcript named by the session id")
	}
	// A new process resuming it (the same home).
	cmd := exec.Command(c.path, "-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json", "--resume="+id)
	cmd.Dir = p.dir
	cmd.Env = c.srv.CLIEnv(p.home)
	line, _ := json.Marshal(userLine("second"))
	cmd.Stdin = bytes.NewReader(append(line, '\n'))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("--resume: %v: %.300s", err, out)
	}
	if !strings.Contains(c.request("second").Get("messages").Raw, "[[say:first]]") {
		return errors.New("the resumed turn's request lacks the first turn")
	}
	return nil
}

// probeResumeAt: --resume-session-at with --fork-session starts a new
// session holding the conversation up to a message.
func probeResumeAt(c *cli) error {
	const id, fork = "5e551010-0000-4000-8000-000000000002", "5e551010-0000-4000-8000-000000000003"
	p, err := c.start([]string{"--session-id=" + id})
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := p.turn("[[say:kept]]", nil); err != nil {
		return err
	}
	r, err := p.turn("[[say:dropped]]", nil)
	if err != nil {
		return err
	}
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
	// The uuid of the first assistant message, from the transcript.
	files, _ := filepath.Glob(filepath.Join(p.home, ".claude", "projects", "*", id+".jsonl"))
	if len(files) != 1 {
		return fmt.Errorf("no transcript (result %s)", r.Get("subtype").String())
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	at := ""
	for _, l := range bytes.Split(b, []byte("\n")) {
		if gjson.GetBytes(l, "type").String() == "assistant" {
			at = gjson.GetBytes(l, "uuid").String()
			break
		}
	}
	cmd := exec.Command(c.path, "-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json",
		"--resume="+id, "--resume-session-at="+at, "--fork-session", "--session-id="+fork)
	cmd.Dir = p.dir
	cmd.Env = c.srv.CLIEnv(p.home)
	line, _ := json.Marshal(userLine("third"))
	cmd.Stdin = bytes.NewReader(append(line, '\n'))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %.300s", err, out)
	}
	msgs := c.request("third").Get("messages").Raw
	if !strings.Contains(msgs, "[[say:kept]]") || strings.Contains(msgs, "[[say:dropped]]") {
		return fmt.Errorf("the forked request holds %.300s", msgs)
	}
	return nil
}

func probeName(c *cli) error {
	_, r, err := c.oneTurn([]string{"--name=probe session"}, "[[say:named]]")
	if err != nil {
		return err
	}
	if r.Get("result").String() != "named" {
		return fmt.Errorf("result %q", r.Get("result").String())
	}
	return nil
}

// probeTranscriptFirst: the session's transcript is on disk when the
// turn's result line comes (claude-rpc decides between --session-id and
// --resume for the next turn by it), three turns out of three.
func probeTranscriptFirst(c *cli) error {
	for i := range 3 {
		id := fmt.Sprintf("5e551010-0000-4000-8000-00000000010%d", i)
		p, err := c.start([]string{"--session-id=" + id})
		if err != nil {
			return err
		}
		_, err = p.turn("[[say:written?]]", nil)
		files, _ := filepath.Glob(filepath.Join(p.home, ".claude", "projects", "*", id+".jsonl"))
		p.stop()
		if err != nil {
			return err
		}
		if len(files) != 1 {
			return fmt.Errorf("turn %d: no transcript yet when the result came", i+1)
		}
	}
	return nil
}
