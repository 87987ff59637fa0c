package bridge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
	"github.com/claude-rpc/claude-rpc/transform"
)

// compact handles compact: the CLI's /compact (with the host's
// instructions) runs as a turn of its own while isCompacting is true, and
// the answer is pi's CompactionResult. Like pi, it shows no agent events;
// a prompt meanwhile is refused as while streaming, and abort stops it.
func (s *server) compact(c *call) (any, error) {
	return s.startCompact(c, c.str("customInstructions"), "Agent is busy: wait for agent_end, or abort, before compacting",
		func(res *transform.Compaction) any { return res })
}

// handoffInstructions make the CLI's compaction summary omp's handoff
// document.
const handoffInstructions = "Write the summary as a handoff document for a fresh context that continues this work: " +
	"the goal, what was done and decided, the current state of the files, open questions, and the next steps."

// handoff handles omp's handoff: the conversation so far replaced by a
// handoff document the model writes, which the CLI's /compact does with
// instructions to that effect. Like omp's (host-initiated) handoff it
// saves no file: the answer is {} (no savedPath).
func (s *server) handoff(c *call) (any, error) {
	s.st.mu.Lock()
	empty := len(s.st.messages) < 2
	s.st.mu.Unlock()
	if empty {
		return nil, errors.New("Nothing to hand off (no messages yet)") // omp's words
	}
	return s.startCompact(c, strings.TrimSpace(handoffInstructions+" "+c.str("customInstructions")),
		"Cannot hand off while a response is in progress", func(*transform.Compaction) any { return handoffData{} })
}

// startCompact runs /compact with instructions as a run of its own and
// answers c with answer's data for the compaction; busy is the refusal
// while a run streams.
func (s *server) startCompact(c *call, instructions, busy string, answer func(*transform.Compaction) any) (any, error) {
	text := strings.TrimSpace("/compact " + instructions)
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.cur != nil {
		return nil, errors.New(busy)
	}
	r := s.newRun(true)
	s.wg.Add(1)
	go s.runCompact(r, c, text, answer)
	return nil, errAnswered
}

func (s *server) runCompact(r *run, c *call, text string, answer func(*transform.Compaction) any) {
	defer s.wg.Done()
	r.carry = s.quietStop()
	s.out.events([]transform.Event{{Type: transform.EventCompactionStart, Reason: "manual"}})
	res, err := s.compactTurn(r, text)
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	end := transform.Event{Type: transform.EventCompactionEnd, Reason: "manual", Compaction: res}
	if err != nil {
		end.ErrorMessage, end.Aborted = err.Error(), r.aborted
	}
	s.out.events([]transform.Event{end})
	if err != nil {
		s.out.send(errResponse(c.id, c.typ, err.Error()))
	} else {
		s.st.mu.Lock()
		s.st.compacted = true
		s.st.note(entryJSON{Type: "compaction", Summary: res.Summary, FirstKeptEntryID: res.FirstKeptEntryID, TokensBefore: res.TokensBefore})
		s.st.mu.Unlock()
		s.out.send(okResponse(c.id, c.typ, answer(res)))
	}
	s.ended(r, nil)
}

// compactTurn runs /compact and reads the compaction off the CLI's lines.
func (s *server) compactTurn(r *run, text string) (*transform.Compaction, error) {
	session, _ := s.cliSession()
	turn, err := s.tr().Turn(session, claudecli.UserLine(text, nil))
	if err != nil {
		return nil, fmt.Errorf("starting claude: %w", err)
	}
	s.attach(r, turn) // a compaction takes no steering (handOver)
	tr := transform.NewTranslator(nowMillis)
	tr.SetToolNames(s.opts.ToolNames)
	tr.Start(transform.UserMessage([]transform.Content{transform.TextContent(text)}, nowMillis()))
	var failure, reply string
	first := r.carry // a line the CLI printed by itself before: the turn's first
	r.carry = nil
	for {
		line, err := first, error(nil)
		if first != nil {
			first = nil
		} else {
			line, err = turn.Next()
		}
		if errors.Is(err, jsonl.ErrLineTooLong) {
			continue
		}
		if err != nil {
			break
		}
		tr.Line(line)
		if claudecli.IsResult(line) {
			s.resultSeen(r, turn)
		}
		v := gjson.ParseBytes(line)
		switch {
		case v.Get("type").String() == "system" && v.Get("compact_result").String() == "failed":
			failure = "compaction failed: " + v.Get("compact_error").String()
		case v.Get("type").String() == "result":
			reply = v.Get("result").String()
			if v.Get("is_error").Bool() && failure == "" {
				failure = "compaction failed: " + reply
			}
		}
	}
	s.runs.mu.Lock()
	aborted := r.aborted
	s.runs.mu.Unlock()
	if s.st.learn(r.gen, tr, false) {
		s.saveLimitsLater()
	}
	comp := tr.Compaction()
	switch {
	case aborted:
		return nil, errors.New("Compaction aborted")
	case failure != "":
		return nil, errors.New(failure)
	case comp == nil || comp.Summary == "":
		if err := turn.Err(); err != nil {
			return nil, fmt.Errorf("claude exited without compacting: %w", err)
		}
		return nil, errors.New("nothing was compacted: " + strings.TrimSpace(reply))
	}
	return comp, nil
}
