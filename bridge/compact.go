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
	text := strings.TrimSpace("/compact " + c.str("customInstructions"))
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.cur != nil {
		return nil, errors.New("Agent is busy: wait for agent_end, or abort, before compacting")
	}
	r := s.newRun(true)
	s.wg.Add(1)
	go s.runCompact(r, c, text)
	return nil, errAnswered
}

func (s *server) runCompact(r *run, c *call, text string) {
	defer s.wg.Done()
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
		s.out.send(okResponse(c.id, c.typ, res))
	}
	s.ended(r, nil)
}

// compactTurn runs /compact and reads the compaction off the CLI's lines.
func (s *server) compactTurn(r *run, text string) (*transform.Compaction, error) {
	session, _ := s.cliSession()
	turn, err := s.transport.Turn(session, claudecli.UserLine(text, nil))
	if err != nil {
		return nil, fmt.Errorf("starting claude: %w", err)
	}
	s.attach(r, turn) // a compaction takes no steering (handOver)
	tr := transform.NewTranslator(nowMillis)
	tr.Start(transform.UserMessage([]transform.Content{transform.TextContent(text)}, nowMillis()))
	var failure, reply string
	for {
		line, err := turn.Next()
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
	s.st.learn(r.gen, tr, false)
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
