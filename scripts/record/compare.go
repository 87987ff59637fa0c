//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// compare translates the recordings of each scenario in dir and in ref
// (the pinned CLI's, testdata/cli) into pi events, as the transform
// package's golden test does, and writes to w the events that differ. What
// differs between any two recordings of one CLI is not compared: token
// counts and costs (the CLI's system prompt changes with its version), the
// fake API's message and tool-call ids (numbered by request) and port,
// session ids, scratch folders, retry delays (jittered), and the order in
// which tools run in parallel end (and the fake API's reply naming them). It returns the number of scenarios that
// differ.
func compare(w io.Writer, dir, ref string, only *regexp.Regexp) (int, error) {
	differ := 0
	for _, sc := range scenarios {
		if !only.MatchString(sc.name) {
			continue
		}
		got, err := translateRecording(dir, sc.name)
		if err != nil {
			return 0, err
		}
		want, err := translateRecording(ref, sc.name)
		if err != nil {
			return 0, err
		}
		diffs := diffEvents(want, got)
		if len(diffs) == 0 {
			fmt.Fprintf(w, "same  %s (%d events)\n", sc.name, len(got))
			continue
		}
		differ++
		fmt.Fprintf(w, "DIFF  %s: %d events here, %d in %s\n", sc.name, len(got), len(want), ref)
		for i, d := range diffs {
			if i == 10 {
				fmt.Fprintf(w, "      … and %d more\n", len(diffs)-i)
				break
			}
			fmt.Fprintf(w, "      %s\n", d)
		}
	}
	return differ, nil
}

// translateRecording reads <name>.input.jsonl and <name>.jsonl in dir and
// returns the run's events, normalized (see compare), one JSON line each.
func translateRecording(dir, name string) ([]string, error) {
	input, err := os.ReadFile(filepath.Join(dir, name+".input.jsonl"))
	if err != nil {
		return nil, err
	}
	stdout, err := os.ReadFile(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		return nil, err
	}
	in := bytes.Split(bytes.TrimSuffix(input, []byte("\n")), []byte("\n"))
	var clock int64 = 1_700_000_000_000
	now := func() int64 { clock++; return clock }
	tr := transform.NewTranslator(now)
	var steer, uuid, followUp string
	held := len(in) > 1
	if held && gjson.GetBytes(in[0], "type").String() == "user" && !gjson.GetBytes(in[1], "uuid").Exists() {
		held = false
		// A follow-up, sent at the prompt's result: the run's next turn.
		followUp = gjson.GetBytes(in[1], "message.content").String()
	}
	if followUp != "" {
		tr.HoldResults()
	}
	if held {
		// As the bridge does: the run goes on while the CLI holds the
		// steering message, shown when the CLI starts it.
		steer, uuid = gjson.GetBytes(in[1], "message.content").String(), gjson.GetBytes(in[1], "uuid").String()
		tr.HoldResults()
	}
	prompt := gjson.GetBytes(in[0], "message.content").String()
	evs := tr.Start(transform.UserMessage([]transform.Content{transform.TextContent(prompt)}, now()))
	progressed := map[string]bool{} // hooks whose first progress line was read
	for _, l := range bytes.Split(bytes.TrimSuffix(stdout, []byte("\n")), []byte("\n")) {
		if laterHookProgress(l, progressed) {
			continue
		}
		evs = append(evs, tr.Line(l)...)
		if id, state, ok := claudecli.Lifecycle(l); ok && held && id == uuid && state == "started" {
			held = false
			evs = append(evs, tr.Steered(transform.UserMessage([]transform.Content{transform.TextContent(steer)}, now()))...)
		}
		if at, _ := tr.AtResult(); at {
			switch {
			case followUp != "":
				evs = append(evs, tr.NextTurn()...)
				evs = append(evs, tr.Inject(transform.UserMessage([]transform.Content{transform.TextContent(followUp)}, now()))...)
				followUp = ""
			case held:
				evs = append(evs, tr.NextTurn()...)
			default:
				evs = append(evs, tr.End()...)
			}
		}
	}
	evs = append(evs, tr.Finish("exit status 0")...)
	evs = subagentsApart(toolResultsInOrder(evs))
	n := newNormalizer()
	out := make([]string, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(abbreviate(e))
		if err != nil {
			return nil, err
		}
		out[i] = n.normalize(b)
	}
	return out, nil
}

// laterHookProgress reports whether l is a hook's progress line after its
// first. The CLI reports what a running hook printed each time it polls
// it, so how many progress lines come depends on where its polls fall:
// the hooks scenario's hook ("echo checking; sleep 2; echo checked") gave
// one on a quiet machine and, once, a second with both lines just before
// its response (ci33, under load).
func laterHookProgress(l []byte, progressed map[string]bool) bool {
	if !bytes.Contains(l, []byte(`"hook_progress"`)) {
		return false
	}
	v := gjson.ParseBytes(l)
	if v.Get("type").String() != "system" || v.Get("subtype").String() != "hook_progress" {
		return false
	}
	id := v.Get("hook_id").String() + "\x00" + v.Get("hook_name").String()
	if progressed[id] {
		return true
	}
	progressed[id] = true
	return false
}

// subagentsApart puts the sub-agents' events after the run's own, each
// side in its order: a background sub-agent runs beside the parent's turn,
// and the two interleave as they happen to run.
func subagentsApart(evs []transform.Event) []transform.Event {
	own := make([]transform.Event, 0, len(evs))
	var subs []transform.Event
	for _, e := range evs {
		if e.Subagent != nil {
			subs = append(subs, e)
		} else {
			own = append(own, e)
		}
	}
	return append(own, subs...)
}

// toolResultsInOrder puts the results of tools the CLI ran in parallel in
// the order of their calls: they end in any order. In the events, a run of
// tool_execution_end and toolResult message_start/message_end events is
// sorted by tool call, each call's events kept together; in turn_end's
// toolResults and in agent_end's messages, runs of toolResult messages.
func toolResultsInOrder(evs []transform.Event) []transform.Event {
	callOf := func(e transform.Event) (string, bool) {
		switch {
		case e.Type == transform.EventToolExecutionEnd:
			return e.ToolCallID, true
		case (e.Type == transform.EventMessageStart || e.Type == transform.EventMessageEnd) && e.Message.Role == transform.RoleToolResult:
			return e.Message.ToolCallID, true
		}
		return "", false
	}
	out := make([]transform.Event, 0, len(evs))
	for i := 0; i < len(evs); {
		if _, ok := callOf(evs[i]); !ok {
			out = append(out, evs[i])
			i++
			continue
		}
		j := i
		for j < len(evs) {
			if _, ok := callOf(evs[j]); !ok {
				break
			}
			j++
		}
		run := slices.Clone(evs[i:j])
		slices.SortStableFunc(run, func(a, b transform.Event) int {
			ia, _ := callOf(a)
			ib, _ := callOf(b)
			return strings.Compare(ia, ib)
		})
		out = append(out, run...)
		i = j
	}
	for k := range out {
		out[k].ToolResults = messagesInOrder(out[k].ToolResults)
		out[k].Messages = messagesInOrder(out[k].Messages)
	}
	return out
}

// abbreviate returns e with its long strings shortened to their length and
// ends, as the golden files show them: every update of the 2 MB reply
// carries the whole message so far.
func abbreviate(e transform.Event) transform.Event {
	short := func(s string) string {
		s = usageTextOut(s) // before its length is told
		if len(s) <= 300 {
			return s
		}
		return fmt.Sprintf("«%d bytes: %q … %q»", len(s), s[:40], s[len(s)-40:])
	}
	msg := func(m transform.Message) transform.Message {
		c := m.Clone()
		for i := range c.Content {
			// A long text is kept in parts: the block is made anew from
			// its text whole, shortened.
			switch b := &c.Content[i]; b.Type {
			case "text":
				*b = transform.TextContent(short(b.Whole()))
			case "thinking":
				*b = transform.Content{Type: "thinking", Thinking: short(b.Whole())}
			}
		}
		return c
	}
	e.Message = msg(e.Message) // message_update's partial too
	u := e.Update
	e.Update = transform.AssistantEvent{Type: u.Type, ContentIndex: u.ContentIndex, Delta: short(u.Delta),
		Content: short(u.WholeContent()), ToolCall: u.ToolCall}
	if e.Messages != nil {
		msgs := make([]transform.Message, len(e.Messages))
		for i := range e.Messages {
			msgs[i] = msg(e.Messages[i])
		}
		e.Messages = msgs
	}
	return e
}

// messagesInOrder sorts the runs of toolResult messages of msgs by call.
func messagesInOrder(msgs []transform.Message) []transform.Message {
	if msgs == nil {
		return nil
	}
	msgs = slices.Clone(msgs)
	for i := 0; i < len(msgs); {
		j := i
		for j < len(msgs) && msgs[j].Role == transform.RoleToolResult {
			j++
		}
		if j == i {
			i++
			continue
		}
		slices.SortStableFunc(msgs[i:j], func(a, b transform.Message) int { return strings.Compare(a.ToolCallID, b.ToolCallID) })
		i = j
	}
	return msgs
}

var (
	// volatile are fields whose values differ between any two recordings:
	// token counts and costs, the jittered retry delay, the clock (tools
	// that end in another order take the times in another order).
	volatile = regexp.MustCompile(`"(input|output|cacheRead|cacheWrite|totalTokens|total|tokensBefore|tokensAfter|delayMs|timestamp|durationMs|totalDurationMs|totalTokens|tokens|contextTokens|endMs|currentToolStartMs|input_tokens|output_tokens|cache_creation_input_tokens|cache_read_input_tokens)":[0-9.e+-]+`)
	// usageText is the CLI's account of a sub-agent in its Agent tool's
	// result text (its token count is the fake API's count of the
	// sub-agent's requests, which the CLI's prompts change from version to
	// version: 8751 on 2.1.328, 8748 on 2.1.332).
	usageText = regexp.MustCompile(`(total_tokens|subagent_tokens|tool_uses|duration_ms): [0-9]+`)
	// usageWords are usageText's words: a text without any of them has
	// nothing to replace.
	usageWords = []string{"total_tokens: ", "subagent_tokens: ", "tool_uses: ", "duration_ms: "}
	// toolSaid is the fake API's reply after tool results: it names them
	// in the order the CLI sent them, the order they ended.
	toolSaid = regexp.MustCompile(`tool said: [^"\\]*`)
	// ports are the fake API's, which error messages name.
	ports = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	// numbered are ids numbered by the fake API or chosen at random.
	// (The CLI's sub-agent ids are "a" and 16 hex digits.)
	numbered = regexp.MustCompile(`toolu_fake[0-9]+|msg_fake[0-9]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\ba[0-9a-f]{16}\b`)
	// scratch are the recordings' scratch folders, and the CLI's project
	// folder named after them.
	scratch = regexp.MustCompile(`/tmp/record-home-[0-9]+|-tmp-record-home-[0-9]+`)
)

// usageTextOut replaces usageText's counts in s by N. It looks for the
// words first: the regexp machine scans ~10 MB/s, and the huge-reply
// scenario's 2,000 updates each carry the whole reply so far (2 GB in all:
// -compare took over 5 minutes on it alone; a substring search, seconds).
func usageTextOut(s string) string {
	for _, w := range usageWords {
		if strings.Contains(s, w) {
			return usageText.ReplaceAllString(s, "$1: N")
		}
	}
	return s
}

// normalizer replaces what differs between recordings by stable names:
// ids by their order of appearance in the run.
type normalizer struct{ ids map[string]string }

func newNormalizer() *normalizer { return &normalizer{ids: map[string]string{}} }

func (n *normalizer) normalize(b []byte) string {
	s := volatile.ReplaceAllString(string(b), `"$1":N`)
	s = usageTextOut(s) // in the texts abbreviate leaves whole
	s = scratch.ReplaceAllString(s, "SCRATCH")
	s = ports.ReplaceAllString(s, "127.0.0.1:PORT")
	s = toolSaid.ReplaceAllStringFunc(s, func(said string) string {
		parts := strings.Split(strings.TrimPrefix(said, "tool said: "), " | ")
		slices.Sort(parts)
		return "tool said: " + strings.Join(parts, " | ")
	})
	return numbered.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := n.ids[id]; !ok {
			n.ids[id] = "id" + strconv.Itoa(len(n.ids)+1)
		}
		return n.ids[id]
	})
}

// diffEvents lists how the events differ: each differing field once,
// with the events it differs in ("message_start.message.model: pinned
// "a", here "b" (events 5-7, 3 times)"), and events only one side has.
func diffEvents(want, got []string) []string {
	type change struct {
		first, last, n int
	}
	var order []string
	changes := map[string]*change{}
	note := func(key string, event int) {
		c, ok := changes[key]
		if !ok {
			c = &change{first: event}
			changes[key] = c
			order = append(order, key)
		}
		c.last = event
		c.n++
	}
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(want):
			note("an event more here: "+short(got[i]), i+1)
		case i >= len(got):
			note("an event more in the pinned: "+short(want[i]), i+1)
		case want[i] != got[i]:
			w, g := gjson.Parse(want[i]), gjson.Parse(got[i])
			for _, d := range diffJSON(w.Get("type").String(), w, g) {
				note(d, i+1)
			}
		}
	}
	out := make([]string, len(order))
	for i, key := range order {
		c := changes[key]
		where := fmt.Sprintf("event %d", c.first)
		if c.n > 1 {
			where = fmt.Sprintf("events %d-%d, %d times", c.first, c.last, c.n)
		}
		out[i] = fmt.Sprintf("%s (%s)", key, where)
	}
	return out
}

// diffJSON lists the leaves where a and b differ, by path.
func diffJSON(path string, a, b gjson.Result) []string {
	if a.IsObject() && b.IsObject() {
		var out []string
		keys := map[string]bool{}
		var names []string
		for _, r := range []gjson.Result{a, b} {
			r.ForEach(func(k, _ gjson.Result) bool {
				if !keys[k.String()] {
					keys[k.String()] = true
					names = append(names, k.String())
				}
				return true
			})
		}
		for _, k := range names {
			ek := gjson.Escape(k)
			out = append(out, diffJSON(path+"."+k, a.Get(ek), b.Get(ek))...)
		}
		return out
	}
	if a.IsArray() && b.IsArray() {
		as, bs := a.Array(), b.Array()
		var out []string
		for i := range max(len(as), len(bs)) {
			var x, y gjson.Result
			if i < len(as) {
				x = as[i]
			}
			if i < len(bs) {
				y = bs[i]
			}
			out = append(out, diffJSON(fmt.Sprintf("%s.%d", path, i), x, y)...)
		}
		return out
	}
	if a.Raw == b.Raw {
		return nil
	}
	return []string{fmt.Sprintf("%s: pinned %s, here %s", path, shortRaw(a), shortRaw(b))}
}

func shortRaw(r gjson.Result) string {
	if !r.Exists() {
		return "(none)"
	}
	return short(r.Raw)
}

// short cuts s to 200 bytes.
func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return strings.TrimSpace(s)
}
