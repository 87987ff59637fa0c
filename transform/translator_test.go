package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// recording is one CLI run recorded by scripts/record.
type recording struct {
	name   string
	prompt string
	lines  [][]byte
	// steer and steerUUID are a message sent mid-turn, if any (the
	// input's second line).
	steer, steerUUID string
	// followUp is a message sent at the prompt's result (the input's
	// second line, without a uuid): the run's next turn.
	followUp string
}

func recordings(t testing.TB) []recording {
	t.Helper()
	inputs, err := filepath.Glob("../testdata/cli/*.input.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, inputs, "no recordings: run go run ./scripts/record")
	var out []recording
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".input.jsonl")
		input, err := os.ReadFile(in)
		require.NoError(t, err)
		stdout, err := os.ReadFile(filepath.Join(filepath.Dir(in), name+".jsonl"))
		require.NoError(t, err)
		in := bytes.Split(bytes.TrimSuffix(input, []byte("\n")), []byte("\n"))
		rec := recording{
			name:   name,
			prompt: gjson.GetBytes(in[0], "message.content").String(),
			lines:  bytes.Split(bytes.TrimSuffix(stdout, []byte("\n")), []byte("\n")),
		}
		switch {
		case len(in) > 1 && gjson.GetBytes(in[0], "type").String() == "user" && !gjson.GetBytes(in[1], "uuid").Exists():
			rec.followUp = gjson.GetBytes(in[1], "message.content").String()
		case len(in) > 1:
			rec.steer = gjson.GetBytes(in[1], "message.content").String()
			rec.steerUUID = gjson.GetBytes(in[1], "uuid").String()
		}
		out = append(out, rec)
	}
	return out
}

// clock returns a deterministic clock for golden output.
func clock() func() int64 {
	var t int64 = 1_700_000_000_000
	return func() int64 { t++; return t }
}

// translate runs a recording's lines through a translator showing the
// CLI's tool names, ending the run with end (Finish, Abort, ...) when the
// lines did not.
func translate(rec recording, lines [][]byte, end func(*Translator) []Event) []Event {
	return translateAs(rec, lines, end, toolNamesClaude)
}

// translateAs is translate with tool calls shown with names.
func translateAs(rec recording, lines [][]byte, end func(*Translator) []Event, names ToolNames) []Event {
	return translateFed(rec, lines, end, names, (*Translator).Line)
}

// translateFed is translateAs with each line given to the translator by
// feed, which returns the line it made of it (for lifecycle).
func translateFed(rec recording, lines [][]byte, end func(*Translator) []Event, names ToolNames, feed func(*Translator, []byte) []Event) []Event {
	now := clock()
	tr := NewTranslator(now)
	tr.SetToolNames(names)
	held := rec.steer != ""
	if held || rec.followUp != "" {
		// As the bridge does: the run goes on while the CLI holds the
		// steering message, which is shown when the CLI starts it, and
		// after a result when a follow-up is queued.
		tr.HoldResults()
	}
	followUp := rec.followUp
	evs := tr.Start(UserMessage([]Content{TextContent(rec.prompt)}, now()))
	for _, l := range lines {
		evs = append(evs, feed(tr, l)...)
		if uuid, state, ok := lifecycle(l); ok && held && uuid == rec.steerUUID && state == "started" {
			held = false
			evs = append(evs, tr.Steered(UserMessage([]Content{TextContent(rec.steer)}, now()))...)
		}
		if at, _ := tr.AtResult(); at {
			switch {
			case followUp != "":
				// As the bridge runs a queued follow-up: the run's next
				// turn.
				evs = append(evs, tr.NextTurn()...)
				evs = append(evs, tr.Inject(UserMessage([]Content{TextContent(followUp)}, now()))...)
				followUp = ""
			case held:
				evs = append(evs, tr.NextTurn()...)
			default:
				evs = append(evs, tr.End()...)
			}
		}
	}
	return append(evs, end(tr)...)
}

// lifecycle reads a command_lifecycle line, as the bridge does.
func lifecycle(line []byte) (uuid, state string, ok bool) {
	v := gjson.ParseBytes(line)
	if v.Get("type").String() != "command_lifecycle" {
		return "", "", false
	}
	return v.Get("command_uuid").String(), v.Get("state").String(), true
}

func finish(tr *Translator) []Event { return tr.Finish("exit status 0") }

// goldenLimit is the longest string a golden file shows whole; longer ones
// (the 2 MB reply, repeated in every partial message) are abbreviated.
const goldenLimit = 300

// abbreviate returns a copy of e whose long strings are shortened to their
// length and ends, so golden files stay readable and small.
func abbreviate(e Event) Event {
	short := func(s string) string {
		if len(s) <= goldenLimit {
			return s
		}
		return fmt.Sprintf("«%d bytes: %q … %q»", len(s), s[:40], s[len(s)-40:])
	}
	msg := func(m *Message) Message {
		c := m.Clone()
		for i := range c.Content {
			b := &c.Content[i]
			// A long block's text in parts is read in place, not joined
			// (for each of the reply's thousands of events).
			if r := b.textOf(); len(r.parts) > 0 {
				text := shortRope(r)
				if b.Type == "thinking" {
					b.Thinking = text
				} else {
					b.Text = text
				}
				b.parts = nil
			}
			b.Text = short(b.Text)
			b.Thinking = short(b.Thinking)
		}
		return c
	}
	e.Message = msg(&e.Message)
	if e.Update.parts != nil {
		e.Update.Content, e.Update.parts = shortRope(rope{parts: e.Update.parts, last: e.Update.Content}), nil
	}
	e.Update.Delta, e.Update.Content = short(e.Update.Delta), short(e.Update.Content)
	msgs := make([]Message, len(e.Messages))
	for i := range e.Messages {
		msgs[i] = msg(&e.Messages[i])
	}
	if e.Messages != nil {
		e.Messages = msgs
	}
	return e
}

// ropeIs reports whether r holds s, read in place.
func ropeIs(r rope, s string) bool { return r.Len() == len(s) && r.prefixOf(s) }

// shortRope is abbreviate's form of a long text kept in parts, from its
// parts in place.
func shortRope(r rope) string {
	var head, tail []byte
	n := r.Len()
	r.each(0, 40, func(s string) bool { head = append(head, s...); return true })
	r.each(n-40, 40, func(s string) bool { tail = append(tail, s...); return true })
	return fmt.Sprintf("«%d bytes: %q … %q»", n, head, tail)
}

func encode(t testing.TB, evs []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // as the bridge writes frames
	enc.SetEscapeHTML(false)
	for _, e := range evs {
		require.NoError(t, enc.Encode(e))
	}
	return buf.Bytes()
}

// TestGolden translates every recording and compares with its golden file
// (go test ./transform -update rewrites them): NAME.golden.jsonl with the
// CLI's tool names, NAME.pi.golden.jsonl with pi's where that differs (a
// recording without one shows no tool pi has: the same events).
func TestGolden(t *testing.T) {
	for _, rec := range recordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			claude := goldenEvents(t, rec, toolNamesClaude)
			compareGolden(t, filepath.Join("testdata", rec.name+".golden.jsonl"), claude)
			pi := goldenEvents(t, rec, toolNamesPi)
			golden := filepath.Join("testdata", rec.name+".pi.golden.jsonl")
			if bytes.Equal(pi, claude) {
				if *update {
					if err := os.Remove(golden); !errors.Is(err, os.ErrNotExist) {
						require.NoError(t, err)
					}
					return
				}
				require.NoFileExists(t, golden, "the same events in both modes: go test ./transform -update")
				return
			}
			compareGolden(t, golden, pi)
		})
	}
}

// goldenEvents translates rec showing tools with names, checks the events'
// grammar and that each tool call's deltas make its arguments, and
// encodes them abbreviated.
func goldenEvents(t *testing.T, rec recording, names ToolNames) []byte {
	t.Helper()
	evs := translateAs(rec, rec.lines, finish, names)
	checkGrammar(t, evs)
	checkToolDeltas(t, evs)
	for i := range evs {
		evs[i] = abbreviate(evs[i])
	}
	return encode(t, evs)
}

// compareGolden compares got with the golden file, or rewrites it.
func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, got, 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./transform -update")
	wantLines := strings.Split(string(want), "\n")
	gotLines := strings.Split(string(got), "\n")
	for i := range max(len(wantLines), len(gotLines)) {
		var w, g string
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if w != g {
			t.Fatalf("event %d differs from %s:\nwant %s\ngot  %s", i+1, golden, w, g)
		}
	}
}

// checkToolDeltas checks that each tool call's toolcall_delta texts,
// concatenated, are its final arguments (as JSON values: the CLI's spacing
// may differ).
func checkToolDeltas(t testing.TB, evs []Event) {
	t.Helper()
	deltas := map[string]string{}
	for _, e := range evs {
		if e.Type != EventMessageUpdate {
			continue
		}
		switch e.Update.Type {
		case ToolcallDelta:
			id := e.Message.Content[e.Update.ContentIndex].ID
			deltas[id] += e.Update.Delta
		case ToolcallEnd:
			call := e.Update.ToolCall
			if d, ok := deltas[call.ID]; ok && gjson.Valid(d) {
				assert.JSONEq(t, string(call.Arguments), d, "the deltas of %s (%s) make its arguments", call.ID, call.Name)
			}
		}
	}
}

// TestEveryPrefixEndsWellFormed cuts every recording after each line and
// ends the run as a crash (Finish) and as an abort: the events must always
// form a well-formed run.
func TestEveryPrefixEndsWellFormed(t *testing.T) {
	for _, rec := range recordings(t) {
		step := 1
		if len(rec.lines) > 100 { // long recordings: a few cut points
			step = len(rec.lines) / 5
		}
		for n := 0; n <= len(rec.lines); n += step {
			for _, end := range []struct {
				name string
				f    func(*Translator) []Event
			}{
				{"finish", func(tr *Translator) []Event { return tr.Finish("signal: killed") }},
				{"abort", func(tr *Translator) []Event { return tr.Abort() }},
				{"fail", func(tr *Translator) []Event { return tr.Fail("line too long") }},
			} {
				t.Run(fmt.Sprintf("%s/%d/%s", rec.name, n, end.name), func(t *testing.T) {
					var ended bool
					evs := translate(rec, rec.lines[:n], func(tr *Translator) []Event {
						ended = tr.Ended()
						return end.f(tr)
					})
					checkGrammar(t, evs)
					if !ended { // no final result line: the ending shows
						m := lastAssistant(evs)
						require.NotNil(t, m)
						want := map[string]string{"finish": StopError, "abort": StopAborted, "fail": StopError}[end.name]
						if end.name == "abort" && m.StopReason != StopAborted {
							// Nothing was streaming: the last message was
							// complete (and any running tool ends aborted).
							assert.Contains(t, []string{StopStop, StopLength, StopToolUse}, m.StopReason)
							if m.StopReason == StopToolUse {
								assert.True(t, abortedTool(evs), "running tools end aborted")
							}
							return
						}
						assert.Equal(t, want, m.StopReason)
					}
				})
			}
		}
	}
}

// abortedTool reports whether the run ended a running tool as aborted.
func abortedTool(evs []Event) bool {
	for _, e := range evs {
		if e.Type == EventToolExecutionEnd && e.Result.Content[0].Text == toolAbortedMessage {
			return true
		}
	}
	return false
}

// recordingNamed is the recording called name.
func recordingNamed(t testing.TB, name string) recording {
	t.Helper()
	for _, r := range recordings(t) {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no recording %s", name)
	return recording{}
}

func lastAssistant(evs []Event) *Message {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == EventMessageEnd && evs[i].Message.Role == RoleAssistant {
			return &evs[i].Message
		}
	}
	return nil
}

func TestAbortKeepsStreamedText(t *testing.T) {
	rec := recordingNamed(t, "text")
	// Cut after the second text delta.
	n, deltas := 0, 0
	for i, l := range rec.lines {
		if gjson.GetBytes(l, "event.delta.type").String() == "text_delta" {
			deltas++
			if deltas == 2 {
				n = i + 1
				break
			}
		}
	}
	evs := translate(rec, rec.lines[:n], func(tr *Translator) []Event { return tr.Abort() })
	m := lastAssistant(evs)
	assert.Equal(t, StopAborted, m.StopReason)
	assert.Equal(t, abortedMessage, m.ErrorMessage)
	assert.Equal(t, "Hello th", m.Text())
	// After the run ended, nothing more comes out.
	tr := NewTranslator(clock())
	tr.Start(UserMessage(nil, 1))
	tr.Abort()
	assert.Empty(t, tr.Line(rec.lines[len(rec.lines)-1]))
	assert.Empty(t, tr.Abort())
	assert.Empty(t, tr.Finish("x"))
}

func TestAPIErrorMessage(t *testing.T) {
	for _, rec := range recordings(t) {
		if !strings.HasPrefix(rec.name, "api-error") {
			continue
		}
		evs := translate(rec, rec.lines, finish)
		m := lastAssistant(evs)
		assert.Equal(t, StopError, m.StopReason, rec.name)
		assert.Contains(t, m.ErrorMessage, "API Error", rec.name)
		assert.Empty(t, m.Content, rec.name)
		for _, e := range evs {
			assert.NotEqual(t, EventMessageUpdate, e.Type, "%s: an API error before streaming has no updates", rec.name)
		}
	}
}

// checkGrammar asserts the events form one well-formed pi run.
func checkGrammar(t testing.TB, evs []Event) {
	t.Helper()
	require.NotEmpty(t, evs)
	require.Equal(t, EventAgentStart, evs[0].Type)
	require.Equal(t, EventAgentEnd, evs[len(evs)-1].Type)
	inTurn := false
	var open *Message            // the message between its start and end
	calls := map[string]string{} // tool calls of the run's assistant messages: id → name
	started := map[string]bool{} // tool_execution_start seen, no end yet
	retrying := false            // auto_retry_start seen, no end yet
	compacting := false          // compaction_start seen, no end yet
	var runMsgs []Message
	text := map[int]*strings.Builder{} // streamed text per content index of the open message
	subEvents := map[string][]Event{}  // each sub-agent's own events
	subRunning := map[string]bool{}    // sub-agents started and not ended
	var subOrder []string
	defer func() {
		require.Empty(t, subRunning, "sub-agents still running at agent_end")
		for _, id := range subOrder {
			checkGrammar(t, subEvents[id]) // a sub-agent's conversation is a run of its own
		}
	}()
	for i, e := range evs {
		where := fmt.Sprintf("event %d (%s)", i, e.Type)
		switch e.Type {
		case EventSubagentLifecycle:
			l := e.Subagent.Lifecycle
			require.NotEmpty(t, l.ID, where)
			if l.Status == "started" {
				require.False(t, subRunning[l.ID], "%s: started twice", where)
				subRunning[l.ID] = true
				subOrder = append(subOrder, l.ID)
			} else {
				require.True(t, subRunning[l.ID], "%s: ended before it started", where)
				require.Contains(t, []string{"completed", "failed", "aborted"}, l.Status, where)
				delete(subRunning, l.ID)
				sub := subEvents[l.ID]
				require.True(t, len(sub) > 0 && sub[len(sub)-1].Type == EventAgentEnd, "%s: its conversation ended first", where)
			}
			continue
		case EventSubagentProgress:
			require.True(t, subRunning[e.Subagent.Progress.Progress.ID], "%s: progress of a sub-agent not running", where)
			continue
		case EventSubagentEvent:
			require.True(t, subRunning[e.Subagent.ID], "%s: event of a sub-agent not running", where)
			subEvents[e.Subagent.ID] = append(subEvents[e.Subagent.ID], *e.Subagent.Event)
			continue
		}
		switch e.Type {
		case EventAgentStart:
			require.Equal(t, 0, i, where)
		case EventAgentEnd:
			require.Equal(t, len(evs)-1, i, where)
			require.False(t, inTurn, "%s: turn still open", where)
			require.False(t, retrying, "%s: retry still open", where)
			require.Equal(t, len(runMsgs), len(e.Messages), "%s: agent_end carries the run's messages", where)
		case EventTurnStart:
			require.False(t, inTurn, where)
			inTurn = true
		case EventTurnEnd:
			require.True(t, inTurn, where)
			require.Nil(t, open, where)
			require.Empty(t, started, "%s: tools still running at turn_end", where)
			require.Equal(t, RoleAssistant, e.Message.Role, "%s: turn_end carries the turn's message", where)
			inTurn = false
		case EventMessageStart:
			require.True(t, inTurn, where)
			require.Nil(t, open, "%s: a message is still open", where)
			open = &e.Message
			text = map[int]*strings.Builder{}
		case EventMessageUpdate:
			require.NotNil(t, open, where)
			require.Equal(t, RoleAssistant, e.Message.Role, where)
			u := e.Update
			require.Less(t, u.ContentIndex, len(e.Message.Content), where)
			switch u.Type {
			case TextDelta:
				if text[u.ContentIndex] == nil {
					text[u.ContentIndex] = &strings.Builder{}
				}
				text[u.ContentIndex].WriteString(u.Delta)
				require.True(t, ropeIs(e.Message.Content[u.ContentIndex].textOf(), text[u.ContentIndex].String()), "%s: partial = deltas so far", where)
			case TextEnd:
				if b := text[u.ContentIndex]; b != nil {
					require.True(t, ropeIs(rope{parts: u.parts, last: u.Content}, b.String()), "%s: text_end = deltas", where)
				}
			}
		case EventMessageEnd:
			require.NotNil(t, open, where)
			require.Equal(t, open.Role, e.Message.Role, where)
			for ci, b := range text {
				require.True(t, ropeIs(e.Message.Content[ci].textOf(), b.String()), "%s: final text = deltas", where)
			}
			switch e.Message.Role {
			case RoleAssistant:
				require.Contains(t, []string{StopStop, StopLength, StopToolUse, StopError, StopAborted}, e.Message.StopReason, where)
				for _, c := range e.Message.Content {
					if c.Type == "toolCall" {
						calls[c.ID] = c.Name
						require.True(t, json.Valid(c.Arguments), "%s: arguments %q", where, c.Arguments)
					}
				}
			case RoleToolResult:
				require.Contains(t, calls, e.Message.ToolCallID, "%s: result of an unknown call", where)
				require.NotNil(t, e.Message.IsError, where)
			}
			runMsgs = append(runMsgs, e.Message)
			open = nil
		case EventAutoRetryStart:
			require.Nil(t, open, where)
			require.Positive(t, e.Retry.Attempt, where)
			retrying = true
		case EventAutoRetryEnd:
			require.True(t, retrying, "%s: end without start", where)
			retrying = false
		case EventCompactionStart:
			require.Nil(t, open, where)
			require.False(t, compacting, "%s: compaction started twice", where)
			compacting = true
		case EventCompactionEnd:
			require.True(t, compacting, "%s: end without start", where)
			require.True(t, e.Compaction != nil || e.ErrorMessage != "", "%s: an end has a result or says why not", where)
			compacting = false
		case EventToolExecutionStart:
			require.True(t, inTurn, where)
			require.Nil(t, open, where)
			require.Equal(t, calls[e.ToolCallID], e.ToolName, "%s: start of a call of the turn", where)
			started[e.ToolCallID] = true
		case EventToolExecutionEnd:
			require.True(t, inTurn, where)
			require.Nil(t, open, where)
			require.True(t, started[e.ToolCallID], "%s: end without start", where)
			delete(started, e.ToolCallID)
			require.NotNil(t, e.Result, where)
		case eventUIRequest:
			require.NotNil(t, e.Notice, where)
			switch n := e.Notice; n.Method {
			case NoticeNotify:
				require.Contains(t, []string{NotifyInfo, NotifyWarning, NotifyError}, n.NotifyType, where)
				require.NotEmpty(t, n.Message, where)
			case NoticeSetStatus:
				require.NotEmpty(t, n.StatusKey, where)
			default:
				t.Fatalf("%s: a notice of method %q", where, n.Method)
			}
		default:
			t.Fatalf("%s: unexpected event type", where)
		}
	}
}

func FuzzTranslator(f *testing.F) {
	for _, rec := range recordings(f) {
		for _, l := range rec.lines {
			f.Add(l, []byte(`{"type":"result","is_error":true}`))
		}
	}
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":-1}}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		now := clock()
		tr := NewTranslator(now)
		evs := tr.Start(UserMessage([]Content{TextContent("x")}, now()))
		for _, l := range [][]byte{a, b, a} {
			evs = append(evs, tr.Line(l)...)
		}
		evs = append(evs, tr.Finish("exit")...)
		checkGrammar(t, evs)
		encode(t, evs)
	})
}

// TestLinesAreOnlyReadDuringTheCall feeds every recording through one
// buffer that is overwritten after each line (as the pipe transport's
// reader reuses its buffer): the events must not change, so nothing kept
// views a line, also of the lines read in place.
func TestLinesAreOnlyReadDuringTheCall(t *testing.T) {
	for _, names := range []ToolNames{toolNamesClaude, toolNamesPi} {
		t.Run(names.String(), func(t *testing.T) { linesOnlyReadDuringTheCall(t, names) })
	}
}

func linesOnlyReadDuringTheCall(t *testing.T, names ToolNames) {
	for _, rec := range recordings(t) {
		short := func(evs []Event) []byte { // the 2 MB reply in full, 2000 times, is too much to compare
			for i := range evs {
				evs[i] = abbreviate(evs[i])
			}
			return encode(t, evs)
		}
		want := short(translateAs(rec, rec.lines, finish, names))
		now := clock()
		tr := NewTranslator(now)
		tr.SetToolNames(names)
		if rec.steer != "" || rec.followUp != "" {
			continue // steering and follow-ups need the bridge's callbacks (TestGolden covers them)
		}
		evs := tr.Start(UserMessage([]Content{TextContent(rec.prompt)}, now()))
		var buf []byte
		for _, l := range rec.lines {
			buf = append(buf[:0], l...)
			evs = append(evs, tr.Line(buf)...)
			for i := range buf {
				buf[i] = 'X'
			}
		}
		evs = append(evs, tr.Finish("exit status 0")...)
		require.True(t, bytes.Equal(want, short(evs)), "%s: events changed when the line buffer was reused", rec.name)
	}
}

// TestRoomFor: a long text's buffer grows by a quarter, its text copied;
// a short one, or one with room, is left to append.
func TestRoomFor(t *testing.T) {
	long := make([]byte, 300<<10) // no room: its cap is its length
	copy(long, strings.Repeat("x", len(long)))
	grown := roomFor(long, 10)
	assert.Equal(t, string(long), string(grown))
	assert.Equal(t, len(long)+len(long)/4, cap(grown))
	assert.Equal(t, 2*len(long), cap(roomFor(long, len(long))), "room for what comes, when more than a quarter")
	short := make([]byte, 10)
	assert.Equal(t, cap(short), cap(roomFor(short, 100)), "a short one: append's")
	assert.Same(t, &grown[0], &roomFor(grown, 10)[0], "room enough: the same array")
}
