// Package bridge speaks the pi coding agent's RPC protocol to a host over a
// reader and a writer (the bridge's stdin and stdout) and runs each prompt
// through the Claude CLI: framing, dispatch, and turn orchestration.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// Serve reads commands from in and writes responses and events to out until
// in ends or ctx is cancelled. Then it ends the running prompt (as an abort),
// waits for every CLI process it started to exit, and returns nil. Serve is
// the only writer of out.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.FlushWait <= 0 {
		opts.FlushWait = 10 * time.Second
	}
	if opts.Transport == "" {
		opts.Transport = claudecli.TransportStream
	}
	transport, err := claudecli.New(opts.Transport, opts.CLI, opts.MaxLine)
	if err != nil {
		return err
	}
	s := &server{opts: opts, log: opts.Log, w: newFrameWriter(out, opts), transport: transport, waiting: map[string]*waiter{}}
	transport.SetConfig(s.cliConfig()) // with the host's side of the control protocol
	s.cwd = opts.CLI.Dir
	if s.cwd == "" {
		s.cwd, _ = os.Getwd() // "" only leaves sessionFile empty
	}
	if abs, err := filepath.Abs(s.cwd); err == nil {
		s.cwd = abs
	}
	// What the CLI's environment says is fixed for the bridge's life.
	env := opts.CLI.Environ()
	s.configDir = sessions.ConfigDir(env)
	s.baseURL = "https://api.anthropic.com"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok && v != "" {
			s.baseURL = v
		}
	}
	s.model = opts.CLI.Model
	s.sessionID = sessions.NewID()
	if opts.Session != "" || opts.Continue {
		if err := s.startOn(opts.Session, opts.Continue); err != nil {
			return err
		}
	}
	s.steeringMode, s.followUpMode, s.interruptMode = modeOneAtATime, modeOneAtATime, "immediate"

	lines := make(chan inLine, 1)
	go readLines(in, opts.MaxLine, lines)
	defer s.shutdown()
	for {
		select {
		case <-ctx.Done():
			s.log.Debug("context done; shutting down")
			return nil
		case l, ok := <-lines:
			if !ok {
				s.log.Debug("stdin closed; shutting down")
				return nil
			}
			s.handleLine(l)
		}
	}
}

// inLine is one line read from the host, or why none could be.
type inLine struct {
	b   []byte
	err error
}

// readLines owns the host's stdin: it never blocks the dispatcher, and a
// line too long to keep is reported, not fatal.
func readLines(in io.Reader, max int, out chan<- inLine) {
	defer close(out)
	lr := jsonl.NewReader(in, max)
	for {
		b, err := lr.Next()
		switch {
		case err == nil:
			out <- inLine{b: append([]byte(nil), b...)}
		case errors.Is(err, jsonl.ErrLineTooLong):
			out <- inLine{err: err}
		default:
			return // EOF, or a read error that ends the stream the same way
		}
	}
}

// server is the state of one Serve call.
type server struct {
	opts      Options
	log       *slog.Logger
	w         *frameWriter
	transport claudecli.Transport
	cwd       string
	configDir string
	baseURL   string // the API the CLI talks to, for get_state's model

	wg sync.WaitGroup // run goroutines

	mu sync.Mutex // guards the fields below; held while a run's final frames are queued
	// sessionID is the CLI session the next prompt works on. The bridge
	// chooses it (as pi has a session id from the start) and passes it
	// with --session-id until the session exists, then --resume.
	sessionID   string
	sessionName string
	model       string
	limits      transform.Limits
	messages    []transform.Message
	run         *run // the running prompt, nil when idle
	// Messages the host sent while a prompt ran, delivered as further turns
	// of that run (or, after an abort, of the next one), as pi keeps them.
	steerQ, followQ []message
	steeringMode    string
	followUpMode    string
	interruptMode   string
	settings        cliSettings
	info            *claudecli.Info // what the CLI said about itself, once asked
	bash            *bashRun        // the running bash command
	sessionFile     string          // the transcript, when the session came from a path
	fork            *fork           // the session is a copy the CLI makes at the next turn
	todos           todoState       // the todo list (todoPhases)
	// waiting are the requests to the host waiting for its answer, by id
	// (ui_N: extension_ui_request, host_N: host_tool_call).
	waiting        map[string]*waiter
	uiSeq, hostSeq int
	bashContext    []string // bash executions for the next prompt's context
}

// run is one prompt from agent_start to agent_end.
type run struct {
	turn     claudecli.Turn // nil until started
	retrying atomic.Bool    // the CLI waits to retry an API call (auto_retry_start shown)
	idle     atomic.Bool    // the watchdog stopped the turn: the CLI printed nothing for IdleTimeout
	then     *message       // abort_and_prompt's prompt, run after this run
	handed   []handedMsg    // steering messages the CLI holds and has not started
	compact  bool           // a compact command's turn, not a prompt
	aborted  bool
	abortIDs []json.RawMessage // ids of abort commands to answer after agent_end
}

func (s *server) handleLine(l inLine) {
	if l.err != nil {
		s.w.send(errResponse(nil, "parse", "Failed to parse command: "+l.err.Error()))
		return
	}
	c, err := parseCommand(l.b)
	if err != nil {
		s.w.send(errResponse(nil, "parse", "Failed to parse command: "+err.Error()))
		return
	}
	switch c.typ {
	case "prompt":
		s.prompt(c)
	case "steer":
		s.enqueue(c, true)
	case "follow_up":
		s.enqueue(c, false)
	case "abort":
		s.abort(c)
	case "abort_and_prompt":
		s.abortAndPrompt(c)
	case "set_steering_mode":
		s.setMode(c, &s.steeringMode)
	case "set_follow_up_mode":
		s.setMode(c, &s.followUpMode)
	case "set_interrupt_mode":
		s.setInterruptMode(c)
	case "bash":
		s.runBash(c)
	case "abort_bash":
		s.abortBash(c)
	case "set_session_name":
		s.setSessionName(c)
	case "get_session_stats":
		s.w.send(okResponse(c.id, c.typ, s.stats()))
	case "set_auto_retry":
		s.setFlag(c, func(st *cliSettings, on bool) { st.noRetry = !on })
	case "set_auto_compaction":
		s.setFlag(c, func(st *cliSettings, on bool) { st.noAutoCompact = !on })
	case "get_available_models":
		s.getAvailableModels(c)
	case "set_model":
		s.setModel(c)
	case "cycle_model":
		s.cycleModel(c)
	case "set_thinking_level":
		s.setThinkingLevel(c)
	case "cycle_thinking_level":
		s.cycleThinkingLevel(c)
	case "get_commands":
		s.getCommands(c)
	case "compact":
		s.compact(c)
	case "abort_retry":
		s.mu.Lock()
		if r := s.run; r != nil && r.retrying.Load() {
			r.interrupt()
		}
		s.mu.Unlock()
		s.w.send(okResponse(c.id, c.typ, nil))
	case "get_state":
		s.w.send(okResponse(c.id, c.typ, s.state()))
	case "get_messages":
		s.mu.Lock()
		msgs := append([]transform.Message{}, s.messages...)
		s.mu.Unlock()
		s.w.send(okResponse(c.id, c.typ, map[string]any{"messages": msgs}))
	case "get_last_assistant_text":
		s.w.send(okResponse(c.id, c.typ, s.lastAssistantText()))
	case "new_session":
		s.newSession(c)
	case "switch_session":
		s.switchSession(c)
	case "branch", "fork":
		s.branch(c)
	case "get_branch_messages", "get_fork_messages":
		s.getForkMessages(c)
	case "clone":
		s.clone(c)
	case "export_html":
		s.exportHTML(c)
	case "set_todos":
		s.setTodos(c)
	case "extension_ui_response":
		s.uiResponse(c)
	case "host_tool_result", "host_tool_update":
		s.hostToolAnswer(c)
	case "set_host_tools":
		s.setHostTools(c)
	default:
		if piCommands[c.typ] {
			s.w.send(errResponse(c.id, c.typ, "claude-rpc does not support "+c.typ+" yet"))
			return
		}
		// pi answers an unknown command without its id.
		s.w.send(errResponse(nil, c.typ, "Unknown command: "+c.typ))
	}
}

func (s *server) prompt(c command) {
	m, err := readMessage(c)
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	behavior, err := c.optStr("streamingBehavior")
	if err == nil && behavior != "" && behavior != "steer" && behavior != "followUp" {
		err = fmt.Errorf("prompt: streamingBehavior must be \"steer\" or \"followUp\", got %q", behavior)
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	if s.run != nil {
		if behavior == "" {
			s.mu.Unlock()
			s.w.send(errResponse(c.id, c.typ, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."))
			return
		}
		s.mu.Unlock()
		s.enqueue(c, behavior == "steer")
		return
	}
	s.startRun(c, m)
	s.mu.Unlock()
}

// startRun starts a run for m and acknowledges c. Called with s.mu held.
func (s *server) startRun(c command, m message) {
	// Acknowledge before agent_start: the run's first frames are queued by
	// its goroutine, after this response.
	s.w.send(okResponse(c.id, c.typ, nil))
	s.launch(m)
}

// launch starts the run goroutine for m. Called with s.mu held.
func (s *server) launch(m message) {
	r := &run{}
	s.run = r
	s.wg.Add(1)
	go s.runPrompt(r, m)
}

// session is the CLI session the next turn works on: resumed when the CLI
// has written its transcript, else created with its id (also after a first
// turn killed before it wrote anything). Called with s.mu held.
func (s *server) session() claudecli.Session {
	ses := claudecli.Session{ID: s.sessionID, Exists: sessions.Exists(s.configDir, s.cwd, s.sessionID), Name: s.sessionName}
	switch {
	case ses.Exists:
		s.fork = nil // made: from now on it is resumed
	case s.fork != nil:
		ses.ForkFrom, ses.ResumeAt = s.fork.from, s.fork.at
	}
	return ses
}

// abortAndPrompt aborts the running prompt, if any, and runs a new one
// after it. Like prompt, it is acknowledged at once.
func (s *server) abortAndPrompt(c command) {
	s.withMessage(c, func(m message) {
		s.run.then = &m
		s.run.interrupt()
		s.w.send(okResponse(c.id, c.typ, nil))
	})
}

// abort ends the running prompt. pi answers after agent_end; when idle, at
// once.
func (s *server) abort(c command) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run
	if r == nil {
		s.w.send(okResponse(c.id, c.typ, nil))
		return
	}
	r.abortIDs = append(r.abortIDs, c.id)
	r.interrupt()
}

// interrupt marks the run aborted and asks the CLI to stop its turn; the
// run's goroutine ends the run. Called with s.mu held.
func (r *run) interrupt() {
	if r.aborted {
		return
	}
	r.aborted = true
	if r.turn != nil {
		r.turn.Interrupt()
	}
}

func (s *server) newSession(c command) {
	// pi records parentSession for its session tree; the CLI keeps no such
	// link, so it is checked and otherwise unused.
	if _, err := c.optStr("parentSession"); err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.stopRun()
	s.mu.Lock()
	s.use(&loaded{id: sessions.NewID()})
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, map[string]any{"cancelled": false}))
}

// waitIdle waits until no prompt runs.
func (s *server) waitIdle() {
	for {
		s.mu.Lock()
		idle := s.run == nil
		s.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shutdown ends the running prompt as an abort and waits for every CLI
// process to exit, giving one that already finished its turn time to write
// its transcript.
func (s *server) shutdown() {
	s.mu.Lock()
	if r := s.run; r != nil {
		r.interrupt()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.transport.Close(s.opts.FlushWait)
	s.w.close()
}

// lastAssistantText is pi's: the text of the last assistant message, not
// counting aborted ones without content, trimmed; {} when there is none.
func (s *server) lastAssistantText() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.messages) - 1; i >= 0; i-- {
		m := &s.messages[i]
		if m.Role != transform.RoleAssistant || m.StopReason == transform.StopAborted && len(m.Content) == 0 {
			continue
		}
		if t := strings.TrimSpace(m.Text()); t != "" {
			return map[string]any{"text": t}
		}
		break
	}
	return map[string]any{}
}
