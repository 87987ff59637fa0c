package bridge

import (
	"errors"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

func nowMillis() int64 { return time.Now().UnixMilli() }

// runPrompt runs one prompt through a per-turn CLI process and relays its
// output as events. It owns the run until [server.finish].
func (s *server) runPrompt(r *run, text string, resume string, prev *claudecli.Process) {
	defer s.wg.Done()
	tr := transform.NewTranslator(nowMillis)
	s.emit(tr.Start(transform.UserMessage([]transform.Content{transform.TextContent(text)}, nowMillis())))

	// The previous turn's process writes its transcript after its result;
	// resuming before it exits could miss the end of that turn.
	if prev != nil {
		select {
		case <-prev.Done():
		case <-time.After(s.opts.FlushWait):
			s.log.Warn("previous claude process still running; stopping it", "pid", prev.Pid())
			prev.Stop()
		}
	}

	s.mu.Lock()
	aborted := r.aborted
	s.mu.Unlock()
	if aborted {
		s.finish(r, tr, tr.Abort())
		return
	}
	proc, err := claudecli.StartTurn(s.opts.CLI, resume, claudecli.UserLine(text, nil))
	if err != nil {
		s.log.Error("starting claude", "err", err)
		s.finish(r, tr, tr.Fail("starting claude: "+err.Error()))
		return
	}
	s.log.Debug("claude started", "pid", proc.Pid(), "resume", resume)
	s.mu.Lock()
	r.proc = proc
	s.lastProc = proc
	if r.aborted {
		go proc.Stop()
	}
	s.mu.Unlock()

	lr := NewLineReader(proc.Stdout(), s.opts.MaxLine)
	sawSession := false
	for {
		line, err := lr.Next()
		if errors.Is(err, ErrLineTooLong) {
			s.log.Error("claude printed a line over the limit; it is skipped", "err", err)
			continue
		}
		if err != nil {
			break // EOF: the process and its group are gone
		}
		if tr.Ended() {
			continue // drain what follows the result
		}
		if len(line) == 0 || line[0] != '{' {
			s.log.Debug("claude printed a non-JSON line", "line", string(line))
			continue
		}
		evs := tr.Line(line)
		if !sawSession && tr.SessionID() != "" {
			sawSession = true
			s.mu.Lock()
			s.sessionID = tr.SessionID()
			s.mu.Unlock()
		}
		if tr.Ended() {
			s.finish(r, tr, evs)
			continue
		}
		s.emit(evs)
	}
	<-proc.Done()
	if tr.Ended() {
		return
	}
	s.mu.Lock()
	aborted = r.aborted
	s.mu.Unlock()
	if aborted {
		s.finish(r, tr, tr.Abort())
		return
	}
	desc := proc.ExitDescription()
	s.log.Warn("claude exited without a result", "pid", proc.Pid(), "exit", desc)
	s.finish(r, tr, tr.Finish(desc))
}

// emit queues events for the host.
func (s *server) emit(evs []transform.Event) {
	for i := range evs {
		s.w.send(evs[i])
	}
}

// finish records the run's outcome and queues its last events (ending in
// agent_end) and the answers to abort commands, all under s.mu: a command
// that sees the bridge idle is handled after agent_end was queued, so a host
// that prompts on agent_end is never refused as busy.
func (s *server) finish(r *run, tr *transform.Translator, evs []transform.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, tr.Messages()...)
	if sid := tr.SessionID(); sid != "" {
		s.sessionID = sid
	}
	if m := tr.Model(); m != "" {
		s.model = m
	}
	s.run = nil
	s.emit(evs)
	for _, id := range r.abortIDs {
		s.w.send(okResponse(id, "abort", nil))
	}
}

// state is get_state's data.
func (s *server) state() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var model any
	if s.model != "" {
		model = modelInfo(s.model, s.opts.CLI.Environ())
	}
	sessionFile := ""
	if s.sessionID != "" {
		sessionFile = sessions.TranscriptPath(s.configDir, s.cwd, s.sessionID)
	}
	return map[string]any{
		"model":                 model,
		"thinkingLevel":         "off",
		"isStreaming":           s.run != nil,
		"isCompacting":          false,
		"steeringMode":          "one-at-a-time",
		"followUpMode":          "one-at-a-time",
		"interruptMode":         "immediate",
		"sessionFile":           sessionFile,
		"sessionId":             s.sessionID,
		"autoCompactionEnabled": true,
		"messageCount":          len(s.messages),
		"pendingMessageCount":   0,
		"queuedMessageCount":    0,
	}
}

// modelInfo is pi's Model for a Claude model id, with what the bridge knows.
func modelInfo(id string, env []string) map[string]any {
	baseURL := "https://api.anthropic.com"
	for _, kv := range env {
		if len(kv) > len("ANTHROPIC_BASE_URL=") && kv[:len("ANTHROPIC_BASE_URL=")] == "ANTHROPIC_BASE_URL=" {
			baseURL = kv[len("ANTHROPIC_BASE_URL="):]
		}
	}
	return map[string]any{
		"id":        id,
		"name":      id,
		"api":       transform.API,
		"provider":  transform.Provider,
		"baseUrl":   baseURL,
		"reasoning": true,
		"input":     []string{"text", "image"},
	}
}
