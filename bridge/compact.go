package bridge

import (
	"errors"
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
func (s *server) compact(c command) {
	instr, err := c.optStr("customInstructions")
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil {
		s.w.send(errResponse(c.id, c.typ, "Agent is busy: wait for agent_end, or abort, before compacting"))
		return
	}
	r := &run{compact: true}
	s.run = r
	s.wg.Add(1)
	go s.runCompact(r, c, strings.TrimSpace("/compact "+instr))
}

func (s *server) runCompact(r *run, c command, text string) {
	defer s.wg.Done()
	res, err := s.compactTurn(r, text)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
	} else {
		s.w.send(okResponse(c.id, c.typ, res))
	}
	s.ended(r)
}

// compactTurn runs /compact and reads the compaction off the CLI's lines.
func (s *server) compactTurn(r *run, text string) (*transform.Compaction, error) {
	s.mu.Lock()
	session := s.session()
	s.mu.Unlock()
	turn, err := s.transport.Turn(session, claudecli.UserLine(text, nil))
	if err != nil {
		return nil, errors.New("starting claude: " + err.Error())
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
	s.mu.Lock()
	aborted := r.aborted
	if sid := tr.SessionID(); sid != "" {
		s.sessionID = sid
	}
	s.mu.Unlock()
	comp := tr.Compaction()
	switch {
	case aborted:
		return nil, errors.New("Compaction aborted")
	case failure != "":
		return nil, errors.New(failure)
	case comp == nil || comp.Summary == "":
		if d := turn.ExitDescription(); d != "" {
			return nil, errors.New("claude exited without compacting: " + d)
		}
		return nil, errors.New("nothing was compacted: " + strings.TrimSpace(reply))
	}
	return comp, nil
}
