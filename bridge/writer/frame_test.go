package writer

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/rpcframe"
	"github.com/claude-rpc/claude-rpc/transform"
)

// frameEvent is an event of type typ, with text for message events.
func frameEvent(typ string) item {
	ev := transform.Event{Type: typ}
	switch typ {
	case transform.EventMessageStart, transform.EventMessageUpdate, transform.EventMessageEnd:
		ev.Message = transform.Message{Role: transform.RoleAssistant, Content: []transform.Content{transform.TextContent("hi")}}
	}
	if typ == transform.EventMessageUpdate {
		ev.Update = transform.AssistantEvent{Type: transform.TextDelta, Delta: "hi"}
	}
	return item{ev: ev}
}

// TestFrameEncoder: what the encoding stage writes for a sequence of items:
// omp's message ids (also counted for the events the filter drops), the
// filter, frames the bridge made as they are, an event that cannot be
// encoded skipped, and each frame's size.
func TestFrameEncoder(t *testing.T) {
	start, upd, end := frameEvent(transform.EventMessageStart), frameEvent(transform.EventMessageUpdate), frameEvent(transform.EventMessageEnd)
	agentEnd := frameEvent(transform.EventAgentEnd)
	bad := item{ev: transform.Event{Type: transform.EventToolExecutionStart, ToolCallID: "t", ToolName: "Bash", Args: json.RawMessage(`{bad`)}}
	resp := item{frame: []byte(`{"type":"response","id":"r"}` + "\n"), response: true}
	only := func(types ...string) item {
		m := map[string]bool{}
		for _, t := range types {
			m[t] = true
		}
		return item{filter: m}
	}
	for _, tc := range []struct {
		name  string
		items []item
		want  []string // each line's type and messageId or id
	}{
		{"message ids", []item{start, upd, upd, end, start, end},
			[]string{"message_start msg-1", "message_update msg-1", "message_update msg-1", "message_end msg-1", "message_start msg-2", "message_end msg-2"}},
		{"nested messages", []item{start, start, upd, end, upd, end},
			[]string{"message_start msg-1", "message_start msg-2", "message_update msg-2", "message_end msg-2", "message_update msg-1", "message_end msg-1"}},
		{"an update with no message open", []item{upd, end, upd},
			[]string{"message_update msg-1", "message_end msg-1", "message_update msg-2"}},
		{"agent_end closes every message", []item{start, agentEnd, upd},
			[]string{"message_start msg-1", "agent_end ", "message_update msg-2"}},
		{"a response as it is", []item{start, resp, end},
			[]string{"message_start msg-1", "response r", "message_end msg-1"}},
		{"the filter drops events, not ids", []item{only(transform.EventMessageEnd), start, upd, end, resp, only(), start},
			[]string{"message_end msg-1", "response r", "message_start msg-2"}},
		{"an event that cannot be encoded", []item{start, bad, end},
			[]string{"message_start msg-1", "message_end msg-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := newFrameEncoder(newSink(&out, nil), false, slog.New(slog.DiscardHandler))
			var sizes []int64
			for i := range tc.items {
				it := tc.items[i]
				if it.filter != nil {
					f.setFilter(it.filter)
					continue
				}
				size, written, err := f.encode(&it)
				switch {
				case it.ev.Args != nil:
					assert.ErrorIs(t, err, transform.ErrInvalidJSON)
					assert.Zero(t, size, "nothing of it written")
				case err != nil:
					t.Fatal(err)
				case written:
					sizes = append(sizes, size)
				default:
					assert.Zero(t, size, "dropped")
				}
			}
			require.NoError(t, f.flush())
			var got []string
			lines := strings.SplitAfter(out.String(), "\n")
			lines = lines[:len(lines)-1]
			for _, l := range lines {
				v := gjson.Parse(l)
				got = append(got, v.Get("type").String()+" "+v.Get("messageId").String()+v.Get("id").String())
			}
			assert.Equal(t, tc.want, got)
			require.Len(t, sizes, len(lines))
			for i, l := range lines {
				assert.EqualValues(t, len(l), sizes[i], "the size of %s", got[i])
			}
		})
	}
}

// TestFrameEncoderChunks: once an item with chunk set is written, frames
// that do not fit in omp's line limit go out as rpc_chunk frames that
// reassemble into the frame; the frames that fit, and all before, are
// written whole.
func TestFrameEncoderChunks(t *testing.T) {
	big := func(id string) item {
		b, err := EncodeFrame(okResponse(json.RawMessage(`"`+id+`"`), "get_state", strings.Repeat("x", rpcframe.MaxFrameBytes)))
		require.NoError(t, err)
		return item{frame: b, response: true}
	}
	small := func(id string) item {
		return item{frame: []byte(`{"type":"response","id":"` + id + `"}`), response: true}
	}
	negotiated := small("negotiated")
	negotiated.chunk = true
	for _, tc := range []struct {
		name  string
		delta bool
		items []item
		want  []string // each frame's id, after reassembly; "+" marks one that was chunked
	}{
		{"before negotiation", false, []item{big("a"), small("b")}, []string{"a", "b"}}, // a: over the limit, whole
		{"after negotiation", false, []item{small("a"), negotiated, small("b"), big("c"), small("d")}, []string{"a", "negotiated", "b", "+c", "d"}},
		{"a large event", true, []item{negotiated, {ev: transform.Event{Type: transform.EventMessageUpdate,
			Message: transform.Message{Role: transform.RoleAssistant, Content: []transform.Content{transform.TextContent(strings.Repeat("y", rpcframe.MaxFrameBytes))}},
			Update:  transform.AssistantEvent{Type: transform.TextDelta, Delta: strings.Repeat("y", rpcframe.MaxFrameBytes)}}}},
			[]string{"negotiated", "+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := newFrameEncoder(newSink(&out, nil), tc.delta, slog.New(slog.DiscardHandler))
			for i := range tc.items {
				_, _, err := f.encode(&tc.items[i])
				require.NoError(t, err)
			}
			require.NoError(t, f.flush())
			var got []string
			var r rpcframe.Reassembler
			negotiatedSeen := false
			for _, l := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
				if len(l) == 0 {
					continue
				}
				if negotiatedSeen {
					assert.LessOrEqual(t, len(l), rpcframe.MaxFrameBytes, "no line over omp's limit once negotiated")
				}
				chunked := gjson.GetBytes(l, "type").String() == "rpc_chunk"
				frame, err := r.Push(l)
				require.NoError(t, err)
				if frame == nil {
					require.True(t, chunked)
					continue
				}
				id := gjson.GetBytes(frame, "id").String()
				if chunked {
					id = "+" + id
				}
				got = append(got, id)
				negotiatedSeen = negotiatedSeen || id == "negotiated"
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
