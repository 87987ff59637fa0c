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
	instructions := c.str("customInstructions")
	start := func() (any, error) {
		return s.startCompact(c, instructions, "Agent is busy: wait for agent_end, or abort, before compacting",
			func(res *transform.Compaction) any { return res })
	}
	if !s.extHandlesNow("session_before_compact") {
		return start()
	}
	// The extensions may cancel it (pi's session_before_compact): asked on
	// a goroutine of its own, as pi asks them before compacting.
	if !s.goes.start(func() {
		if s.extCompactCancelled(c, instructions) {
			s.out.Events([]transform.Event{{Type: transform.EventCompactionStart, Reason: "manual"},
				{Type: transform.EventCompactionEnd, Reason: "manual", Aborted: true}})
			s.reply(c, nil, errors.New("Compaction cancelled")) // pi's words
			return
		}
		data, err := start()
		s.reply(c, data, err)
	}) {
		return nil, errClosed
	}
	return nil, errAnswered
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
	empty := s.st.messageCount() < 2
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
	o := s.runs
	var err error
	if !o.do(func() {
		if o.cur != nil {
			err = errors.New(busy)
			return
		}
		r := o.newRun()
		r.compaction = &compaction{call: c, answer: answer}
		c.begin() // an abort sent after it stops this run
		o.afterQuiet(func(carry []byte) {
			r.carry = carry
			o.runCompact(r, text)
		})
	}) {
		return nil, errClosed
	}
	if err != nil {
		return nil, err
	}
	return nil, errAnswered
}

// compaction is what a compact run reads off the CLI's lines, and whom it
// answers. Owned by the runner's loop, as its run.
type compaction struct {
	call    *call
	answer  func(*transform.Compaction) any
	failure string // the CLI said the compaction failed
	reply   string // the result's text
	err     error  // the CLI could not be started
}

// runCompact begins r, a compaction: compaction_start, then its CLI turn.
// On the runner's loop.
func (o *runner) runCompact(r *run, text string) {
	o.onLoop()
	o.s.out.Events([]transform.Event{{Type: transform.EventCompactionStart, Reason: "manual"}})
	r.tr = transform.NewTranslator(nowMillis)
	r.tr.SetToolNames(o.s.opts.ToolNames)
	r.tr.Start(transform.UserMessage([]transform.Content{transform.TextContent(text)}, nowMillis()))
	s := o.s
	o.offLoop(func() func() {
		session, _ := s.cliSession()
		turn, err := s.transport().Turn(session, claudecli.UserLine(text, nil))
		return func() {
			if err != nil {
				r.compaction.err = fmt.Errorf("starting claude: %w", err)
				o.compactDone(r)
				return
			}
			o.attach(r, turn) // a compaction takes no steering (handOver)
			o.read(turn).run = r
			if first := r.carry; first != nil { // a line the CLI printed by itself before: the turn's first
				r.carry = nil
				o.compactLine(r, first, nil)
			}
		}
	})
}

// compactLine reads the compaction off a line of r's CLI turn (err: the
// turn's end, which ends r). It reports whether the turn's reader reads
// on. On the runner's loop.
func (o *runner) compactLine(r *run, line []byte, err error) bool {
	o.onLoop()
	if errors.Is(err, jsonl.ErrLineTooLong) {
		o.tooLong(err)
		return true
	}
	if err != nil {
		o.compactDone(r)
		return false
	}
	comp := r.compaction
	r.tr.Line(line)
	if claudecli.IsResult(line) {
		o.resultSeen(r)
	}
	v := gjson.ParseBytes(line)
	switch {
	case v.Get("type").String() == "system" && v.Get("compact_result").String() == "failed":
		comp.failure = "compaction failed: " + v.Get("compact_error").String()
	case v.Get("type").String() == "result":
		comp.reply = v.Get("result").String()
		if v.Get("is_error").Bool() && comp.failure == "" {
			comp.failure = "compaction failed: " + comp.reply
		}
	}
	return true
}

// compactDone ends r, a compaction whose CLI turn is over: compaction_end,
// the command's answer, and the run's end. On the runner's loop.
func (o *runner) compactDone(r *run) {
	o.onLoop()
	s, comp := o.s, r.compaction
	res, err := o.compacted(r)
	end := transform.Event{Type: transform.EventCompactionEnd, Reason: "manual", Compaction: res}
	if err != nil {
		end.ErrorMessage, end.Aborted = err.Error(), r.aborted
	}
	s.out.Events([]transform.Event{end})
	c := comp.call
	if err != nil {
		s.respond(c, errResponse(c.id, c.typ, err.Error()))
	} else {
		e := s.st.noteCompaction(entryJSON{Type: "compaction", Summary: res.Summary, FirstKeptEntryID: res.FirstKeptEntryID, TokensBefore: res.TokensBefore})
		s.goes.start(func() { // extEvent asks the loop for the state: not on it
			s.extEvent("session_compact", map[string]any{"compactionEntry": e, "fromExtension": false, "reason": "manual", "willRetry": false})
		})
		s.respond(c, okResponse(c.id, c.typ, comp.answer(res)))
	}
	o.ended(r, nil)
}

// compacted is the outcome of r, a compaction whose CLI turn is over.
func (o *runner) compacted(r *run) (*transform.Compaction, error) {
	comp := r.compaction
	if comp.err != nil {
		return nil, comp.err
	}
	if o.s.st.learn(r.gen, r.tr, false) {
		o.s.saveLimitsLater()
	}
	res := r.tr.Compaction()
	switch {
	case r.aborted:
		return nil, errors.New("Compaction aborted")
	case comp.failure != "":
		return nil, errors.New(comp.failure)
	case res == nil || res.Summary == "":
		if err := r.turn.Err(); err != nil {
			return nil, fmt.Errorf("claude exited without compacting: %w", err)
		}
		return nil, errors.New("nothing was compacted: " + strings.TrimSpace(comp.reply))
	}
	return res, nil
}
