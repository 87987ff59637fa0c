package bridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// Turns the CLI runs by itself while idle (stream transport): a run of
// their own, shown as they happen; commands during it as during a
// prompt's run. The recording is the CLI's stdout with stdin left open: the
// prompt's turn up to its result, then, while idle, the background
// sub-agent's end and the turn the CLI runs about it.

// idleRecording splits subagent-background-idle into the prompt's turn
// (up to its result) and what the CLI printed by itself after it.
func idleRecording(t *testing.T) (prompt, own [][]byte) {
	rec := recording(t, "subagent-background-idle")
	for i, l := range rec.Lines {
		if gjson.GetBytes(l, "type").String() == "result" {
			return rec.Lines[:i+1], rec.Lines[i+1:]
		}
	}
	t.Fatal("no result in the recording")
	return nil, nil
}

// promptThenIdle is a bridge that ran the recording's prompt and is idle.
func promptThenIdle(t *testing.T, more ...claudetest.Scenario) (*rig, [][]byte) {
	prompt, own := idleRecording(t)
	r := newRig(t, &claudetest.Transport{Scenarios: append([]claudetest.Scenario{
		func(t *claudetest.Turn) { t.Emit(prompt...); <-t.Released() }}, more...)}, Options{})
	r.call(map[string]any{"type": "set_subagent_subscription", "level": "progress"})
	r.sendf(`{"type":"prompt","message":"start it"}`)
	r.event("session_settled")
	return r, own
}

func TestOwnRunShownWhileIdle(t *testing.T) {
	r, own := promptThenIdle(t, replay(recording(t, "text")))
	from := len(r.seen)
	r.fake.Own(func(t *claudetest.Turn) { t.Emit(own...); <-t.Released() })
	r.event("session_settled")
	var kinds []string
	for _, k := range r.kinds()[from:] {
		if k != "message_update" && k != "subagent_progress" {
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"subagent_lifecycle", "extension_ui_request", "agent_start", "turn_start", "message_start", "message_end", "turn_end",
		"agent_end", "agent_settled", "session_settled"}, kinds,
		"the sub-agent's end as it comes (and the background tasks' status cleared), then the CLI's turn as a run of its own (no prompt_result)")
	var end, life gjson.Result
	for _, f := range r.seen[from:] {
		switch f.Get("type").String() {
		case "agent_end":
			end = f
		case "subagent_lifecycle":
			life = f
		}
	}
	assert.Equal(t, []string{"assistant:echo: "}, texts(end.Get("messages")), "only the CLI's turn")
	assert.Equal(t, "completed", life.Get("payload.status").String(), "the background sub-agent ends in it")
	assert.False(t, r.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool())

	// The next prompt's run holds only its own turn; the session's messages
	// are in the order things happened.
	r.sendf(`{"type":"prompt","message":"next"}`)
	end = r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 2)
	assert.Equal(t, "user:next", got[0])
	msgs := texts(r.call(map[string]any{"type": "get_messages"}).Get("data.messages"))
	require.Len(t, msgs, 7, "%v", msgs)
	assert.Equal(t, []string{"user:start it", "assistant:"}, msgs[:2])
	assert.True(t, strings.HasPrefix(msgs[3], "assistant:tool said"), msgs[3])
	assert.Equal(t, []string{"assistant:echo: ", "user:next"}, msgs[4:6], "the CLI's turn where it happened")
}

// ownStalled plays own up to its first assistant line, then waits for
// gate (or an interrupt: then it ends the turn with result, as the CLI
// ends an interrupted one).
func ownStalled(own [][]byte, gate <-chan struct{}, result []byte) claudetest.Scenario {
	n := 0
	for i, l := range own {
		if gjson.GetBytes(l, "type").String() == "system" && gjson.GetBytes(l, "subtype").String() == "init" {
			n = i + 1
		}
	}
	return func(t *claudetest.Turn) {
		t.Emit(own[:n]...)
		select {
		case <-gate:
			t.Emit(own[n:]...)
		case <-t.Interrupted():
			t.Emit(result)
		}
		<-t.Released()
	}
}

// TestOwnRunCommands: during a run the CLI began by itself, pi's rules for
// a run in progress: a prompt is refused unless it says streamingBehavior;
// a follow-up (or a prompt with followUp) runs as the next turn of that
// run; a steer is handed to the CLI's turn.
func TestOwnRunCommands(t *testing.T) {
	text := recording(t, "text")
	r, own := promptThenIdle(t, replay(text))
	gate := make(chan struct{})
	r.fake.Own(ownStalled(own, gate, resultLine(t)))
	r.event("agent_start")
	st := r.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("data.isStreaming").Bool(), "a run is under way")

	refused := r.call(map[string]any{"type": "prompt", "message": "now"})
	assert.False(t, refused.Get("success").Bool())
	assert.Contains(t, refused.Get("error").String(), "Agent is already processing")
	queued := r.call(map[string]any{"type": "prompt", "message": "after it", "streamingBehavior": "followUp"})
	assert.Equal(t, "queued", queued.Get("data.disposition").String())
	close(gate)
	end := r.event("agent_end")
	assert.Equal(t, []string{"assistant:echo: ", "user:after it", "assistant:" + gjson.ParseBytes(text.Lines[len(text.Lines)-1]).Get("result").String()},
		texts(end.Get("messages")), "the follow-up is the next turn of the CLI's run")
	res := r.event("prompt_result")
	assert.Equal(t, queued.Get("id").String(), res.Get("id").String())
	r.event("session_settled")
	require.Len(t, r.fake.Inputs(), 2, "the prompt's line, then the follow-up's")
	assert.Contains(t, string(r.fake.Inputs()[1]), `"after it"`)
}

func TestOwnRunSteer(t *testing.T) {
	text := recording(t, "text")
	prompt, own := idleRecording(t)
	steered := make(chan string, 1)
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{
		func(t *claudetest.Turn) { t.Emit(prompt...); <-t.Released() }}}, Options{})
	r.sendf(`{"type":"prompt","message":"start it"}`)
	r.event("session_settled")
	r.fake.Own(func(t *claudetest.Turn) {
		t.Emit(own[:len(own)-1]...)
		s, ok := t.WaitSteer()
		if !ok {
			return
		}
		steered <- gjson.ParseBytes(s.Line).Get("message.content").String()
		// The CLI runs it right after its turn, as one command: its
		// result, then the steer's turn (recorded: text's).
		t.Emit(own[len(own)-1])
		t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + s.UUID + `","state":"started"}`)
		t.Emit(text.Lines...)
		t.EmitString(`{"type":"command_lifecycle","command_uuid":"` + s.UUID + `","state":"completed"}`)
		<-t.Released()
	})
	r.event("agent_start")
	r.call(map[string]any{"type": "steer", "message": "look here"})
	assert.Equal(t, "look here", <-steered, "handed to the CLI's turn")
	end := r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 3, "%v", got)
	assert.Equal(t, []string{"assistant:echo: ", "user:look here"}, got[:2])
	assert.Len(t, r.fake.Turns(), 2, "the prompt's and the CLI's own: the steer went into the latter")
	assert.Zero(t, r.call(map[string]any{"type": "get_state"}).Get("data.pendingMessageCount").Int())
}

func TestOwnRunAbort(t *testing.T) {
	r, own := promptThenIdle(t, replay(recording(t, "text")))
	r.fake.Own(ownStalled(own, make(chan struct{}), resultLine(t)))
	r.event("agent_start")
	abort := r.sendf(`{"type":"abort"}`)
	end := r.event("agent_end")
	settled := r.event("agent_settled")
	r.answer(abort)
	assert.True(t, settled.Get("aborted").Bool())
	assert.Equal(t, "response:"+abort, r.kinds()[len(r.seen)-1], "abort answers after agent_end")
	assert.Equal(t, "aborted", end.Get("messages.0.stopReason").String(), end.Raw)
	assert.False(t, r.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool())
	// The next prompt runs as usual.
	r.sendf(`{"type":"prompt","message":"again"}`)
	assert.Equal(t, "stop", r.event("agent_end").Get("messages.1.stopReason").String())
}

// TestOwnLinesBeforeATurnAreNoRun: what the CLI prints while idle that
// begins no turn of its own (a background sub-agent's lines, its task
// reports) shows as sub-agent frames only: the bridge stays idle, and a
// prompt then runs as usual, its run adopting the sub-agent.
func TestOwnLinesBeforeATurnAreNoRun(t *testing.T) {
	r, own := promptThenIdle(t, replay(recording(t, "text")))
	opens := 0
	for i, l := range own {
		if gjson.GetBytes(l, "subtype").String() == "task_progress" || gjson.GetBytes(l, "parent_tool_use_id").String() != "" {
			opens = i + 1
		}
	}
	require.Positive(t, opens)
	r.fake.Own(func(t *claudetest.Turn) { t.Emit(own[:opens]...); <-t.Released() })
	progress := r.event("subagent_progress")
	assert.Equal(t, "running", progress.Get("payload.progress.status").String())
	st := r.call(map[string]any{"type": "get_state"})
	assert.False(t, st.Get("data.isStreaming").Bool(), "no run")
	assert.NotContains(t, r.kinds()[len(r.kinds())-3:], "agent_start")
	p := r.call(map[string]any{"type": "prompt", "message": "now"})
	assert.Equal(t, "started", p.Get("data.disposition").String())
	end := r.event("agent_end")
	assert.Equal(t, "user:now", texts(end.Get("messages"))[0])
	list := r.call(map[string]any{"type": "get_subagents"}).Get("data.subagents")
	assert.Len(t, list.Array(), 1, "still running, the prompt's run has it: %s", list.Raw)
}

// TestOwnRunLeavesTheIdleQueue: messages queued while idle wait for the
// next prompt (as pi), through a run of the CLI's own: it neither hands
// nor runs them, and they stay listed and counted.
func TestOwnRunLeavesTheIdleQueue(t *testing.T) {
	text := recording(t, "text")
	r, own := promptThenIdle(t, replay(text))
	r.call(map[string]any{"type": "steer", "message": "for the prompt"})
	r.call(map[string]any{"type": "follow_up", "message": "after the prompt"})
	r.fake.Own(func(t *claudetest.Turn) { t.Emit(own...); <-t.Released() })
	end := r.event("agent_end")
	assert.Equal(t, []string{"assistant:echo: "}, texts(end.Get("messages")), "not run by the CLI's run")
	assert.True(t, end.Get("isTerminal").Bool())
	r.event("session_settled")
	st := r.call(map[string]any{"type": "get_state"})
	assert.EqualValues(t, 2, st.Get("data.pendingMessageCount").Int())
	assert.Len(t, r.fake.Inputs(), 1, "nothing handed to the CLI")
	r.sendf(`{"type":"prompt","message":"the prompt"}`)
	end = r.event("agent_end")
	got := texts(end.Get("messages"))
	require.Len(t, got, 5, "%v", got)
	assert.Equal(t, []string{"user:the prompt", "user:for the prompt"}, got[:2])
	assert.Equal(t, "user:after the prompt", got[3])
}
