package hostlink

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// sent is a Config.Send that hands each frame, as JSON, to a channel.
func sent(t *testing.T) (func(any), <-chan gjson.Result) {
	ch := make(chan gjson.Result, 16)
	return func(v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		ch <- gjson.ParseBytes(b)
	}, ch
}

func next(t *testing.T, ch <-chan gjson.Result) gjson.Result {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame sent")
	}
	return gjson.Result{}
}

// TestAsk: a dialog is sent with its id and timeout, and answered by the
// host's extension_ui_response; a second answer, one to nothing waiting
// and one of the wrong kind are refused.
func TestAsk(t *testing.T) {
	t.Parallel()
	send, frames := sent(t)
	h := New(Config{Send: send, AskTimeout: time.Minute})
	got := make(chan gjson.Result, 1)
	go func() {
		a, ok := h.Ask(context.Background(), Select("T", "M", []string{"a", "b"}))
		assert.True(t, ok)
		got <- a
	}()
	req := next(t, frames)
	assert.JSONEq(t, `{"type":"extension_ui_request","id":"ui_1","method":"select","title":"T","message":"M","options":["a","b"],"timeout":60000}`, req.Raw)
	require.EqualError(t, h.Answer("extension_ui_response", gjson.Parse(`{"id":"ui_1"}`)), `extension_ui_response: give "value", "confirmed" or "cancelled"`)
	require.EqualError(t, h.Answer("host_tool_result", gjson.Parse(`{"id":"ui_1","result":{"content":[]}}`)), `host_tool_result: no request "ui_1" is waiting for an answer`)
	require.NoError(t, h.Answer("extension_ui_response", gjson.Parse(`{"id":"ui_1","value":"b"}`)))
	assert.Equal(t, "b", (<-got).Get("value").String())
	require.EqualError(t, h.Answer("extension_ui_response", gjson.Parse(`{"id":"ui_1","value":"b"}`)), `extension_ui_response: no request "ui_1" is waiting for an answer`)
	assert.Equal(t, "ui_2", h.Next("ui_"), "the ids are numbered with the bridge's others")
}

// TestAskWithdrawn: a dialog whose context ends, or that waits past
// --ask-timeout, is withdrawn (method cancel) and reported unanswered;
// so is every dialog at the server context's end.
func TestAskWithdrawn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    outcome
	}{{"the request withdrawn", 0, uiWithdrawn}, {"the timeout", 50 * time.Millisecond, uiTimedOut}, {"the shutdown", 0, uiWithdrawn}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			send, frames := sent(t)
			server, shutdown := context.WithCancel(context.Background())
			defer shutdown()
			h := New(Config{Send: send, Ctx: server, AskTimeout: tc.timeout})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			how := make(chan outcome, 1)
			go func() {
				_, o := h.ask(ctx, Confirm("T", "M"))
				how <- o
			}()
			req := next(t, frames)
			switch tc.name {
			case "the request withdrawn":
				cancel()
			case "the shutdown":
				shutdown()
			}
			withdrawn := next(t, frames)
			assert.Equal(t, "cancel", withdrawn.Get("method").String())
			assert.Equal(t, req.Get("id").String(), withdrawn.Get("targetId").String())
			assert.Equal(t, tc.want, <-how)
			assert.Error(t, h.Answer("extension_ui_response", gjson.Parse(`{"id":"`+req.Get("id").String()+`","confirmed":true}`)))
		})
	}
}

// TestFormFields: which schemas pi's dialogs can show, and why not.
func TestFormFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema, order string
		kinds         []formKind
		names         []string
		err           string
	}{
		{schema: `{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"number"}}}`,
			kinds: []formKind{booleanField, numberField}, names: []string{"b", "a"}},
		{schema: `{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"number"}}}`, order: `["a","zz"]`,
			kinds: []formKind{numberField, booleanField}, names: []string{"a", "b"}},
		{schema: `{"properties":{"s":{"type":"string","maxLength":201},"t":{"type":"string","maxLength":200},"e":{"enum":["x"]}}}`,
			kinds: []formKind{longTextField, textField, choiceField}, names: []string{"s", "t", "e"}},
		{schema: `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}}}`,
			kinds: []formKind{choicesField}, names: []string{"m"}},
		{schema: `{"type":"object"}`, kinds: []formKind{}, names: []string{}},
		{schema: `{"type":"array"}`, err: `the schema is of type "array", not an object`},
		{schema: `{"type":"object","properties":{"o":{"type":"object"}}}`, err: `field "o": a nested object`},
		{schema: `{"type":"object","properties":{"o":{"type":"array","items":{"type":"object"}}}}`, err: `field "o": an array whose items are not choices (no choices)`},
		{schema: `{"type":"object","properties":{"o":{"type":"string","oneOf":[{"const":1}]}}}`, err: `field "o": a oneOf entry without a string const`},
		{schema: `{"type":"object","properties":{"o":{"type":"null"}}}`, err: `field "o": type "null"`},
		{schema: `{"type":"object","properties":{"o":true}}`, err: `field "o": its schema is not an object`},
		{schema: `{"type":"object","properties":[]}`, err: `its properties are not an object`},
	} {
		fields, err := formFields(gjson.Parse(tc.schema), gjson.Parse(tc.order))
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.schema)
			continue
		}
		require.NoError(t, err, tc.schema)
		kinds, names := []formKind{}, []string{}
		for _, f := range fields {
			kinds, names = append(kinds, f.kind), append(names, f.name)
		}
		assert.Equal(t, tc.kinds, kinds, tc.schema)
		assert.Equal(t, tc.names, names, tc.schema)
	}
}
