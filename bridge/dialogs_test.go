package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// hostAnswer is what a scripted CLI's control request got back.
type hostAnswer struct {
	resp any
	err  error
}

// askingRig is a bridge whose first prompt's turn sends the host the
// control request subtype with request (as the CLI does, amid its lines),
// with ctx as the CLI's (cancelled: the CLI withdrew it), and hands its
// answer to the returned channel. The prompt is sent.
func askingRig(t *testing.T, ctx context.Context, opts Options, subtype, request string) (*rig, <-chan hostAnswer) {
	t.Helper()
	rec := recording(t, "text")
	answered := make(chan hostAnswer, 1)
	ask := func(turn *claudetest.Turn) {
		turn.Emit(rec.Lines[:6]...)
		resp, err := turn.Ask(ctx, claudecli.ControlRequest{ID: "r1", Subtype: subtype, Request: gjson.Parse(request)})
		answered <- hostAnswer{resp, err}
		turn.Emit(resultLine(t))
		<-turn.Released()
	}
	r := newRig(t, &claudetest.Transport{Scenarios: []claudetest.Scenario{ask}}, opts)
	r.sendf(`{"type":"prompt","message":"hi"}`)
	return r, answered
}

// dialogStep is one dialog the host is shown and how it answers it.
type dialogStep struct {
	method string
	check  func(t *testing.T, req gjson.Result) // more to check of the request; may be nil
	// answer is the extension_ui_response's fields beside type and id;
	// nil: the host does not answer.
	answer map[string]any
}

// answerDialogs plays steps as the host.
func answerDialogs(t *testing.T, r *rig, steps []dialogStep) {
	t.Helper()
	for i, st := range steps {
		req := r.event("extension_ui_request")
		require.Equal(t, st.method, req.Get("method").String(), "dialog %d: %s", i, req.Raw)
		if st.check != nil {
			st.check(t, req)
		}
		if st.answer == nil {
			continue
		}
		a := map[string]any{"type": "extension_ui_response", "id": req.Get("id").String()}
		for k, v := range st.answer {
			a[k] = v
		}
		b, err := json.Marshal(a)
		require.NoError(t, err)
		r.send(string(b))
	}
}

// dialogCase is a control request the CLI sends, the dialogs the host
// is shown and answers, and the answer the CLI is to get.
type dialogCase struct {
	name    string
	request string
	opts    *Options // nil: Options{Ask: true}
	steps   []dialogStep
	want    string // the answer's JSON; empty: an error
}

// run plays tc with the CLI's request of subtype; it returns the rig and
// the CLI's answer.
func (tc dialogCase) run(t *testing.T, subtype string) (*rig, hostAnswer) {
	t.Helper()
	opts := Options{Ask: true}
	if tc.opts != nil {
		opts = *tc.opts
	}
	r, answered := askingRig(t, context.Background(), opts, subtype, tc.request)
	answerDialogs(t, r, tc.steps)
	return r, got(t, answered)
}

// got waits for the CLI's request to be answered.
func got(t *testing.T, answered <-chan hostAnswer) hostAnswer {
	t.Helper()
	select {
	case a := <-answered:
		return a
	case <-time.After(waitFor):
		t.Fatal("the CLI's request was not answered")
	}
	return hostAnswer{}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func value(v string) map[string]any { return map[string]any{"value": v} }

var (
	confirmed    = map[string]any{"confirmed": true}
	notConfirmed = map[string]any{"confirmed": false}
	cancelledUI  = map[string]any{"cancelled": true}
)

// TestElicitation: an MCP server's elicitation, as the CLI sends it, put to
// the host as pi's dialogs, and the answer the CLI gets.
func TestElicitation(t *testing.T) {
	t.Parallel()
	const person = `"requested_schema":{"type":"object","properties":{
		"name":{"type":"string","title":"Name","description":"as on your passport"},
		"age":{"type":"integer","minimum":0,"maximum":150},
		"colour":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
		"ok":{"type":"boolean","title":"Agree?"},
		"bio":{"type":"string","maxLength":1000,"default":"none"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2}},
		"required":["name","age"]},"property_order":["ok","name","age","colour","bio","tags"]`
	for _, tc := range []dialogCase{
		{name: "one string field", request: `{"mcp_server_name":"srv","message":"Your name?","mode":"form",
			"requested_schema":{"type":"object","properties":{"name":{"type":"string","title":"Name"}},"required":["name"]}}`,
			steps: []dialogStep{{method: "input", answer: value("Ada"), check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, "Name", req.Get("title").String())
				assert.Equal(t, "srv asks: Your name?", req.Get("message").String())
			}}},
			want: `{"action":"accept","content":{"name":"Ada"}}`},
		{name: "a form of every kind, in property_order", request: `{"mcp_server_name":"srv","display_name":"Server","message":"About you",` + person + `}`,
			steps: []dialogStep{
				{method: "confirm", answer: confirmed, check: func(t *testing.T, req gjson.Result) {
					assert.Equal(t, "Agree?", req.Get("title").String())
					assert.Equal(t, "Server asks: About you", req.Get("message").String())
				}},
				{method: "input", answer: value("Ada"), check: func(t *testing.T, req gjson.Result) {
					assert.Equal(t, "Server asks: About you\nas on your passport", req.Get("message").String())
				}},
				{method: "input", answer: value("36")},
				{method: "select", answer: value("Green"), check: func(t *testing.T, req gjson.Result) {
					assert.Equal(t, `["Red","Green"]`, req.Get("options").Raw)
				}},
				{method: "editor", answer: value(""), check: func(t *testing.T, req gjson.Result) {
					assert.Equal(t, "none", req.Get("prefill").String())
				}},
				{method: "input", answer: value("c, a"), check: func(t *testing.T, req gjson.Result) {
					assert.Contains(t, req.Get("placeholder").String(), "a, b, c")
				}},
			},
			want: `{"action":"accept","content":{"ok":true,"name":"Ada","age":36,"colour":"g","bio":"none","tags":["c","a"]}}`},
		{name: "an answer that does not fit is asked again, saying why", request: `{"mcp_server_name":"srv","message":"About you",` + person + `}`,
			steps: []dialogStep{
				{method: "confirm", answer: notConfirmed},
				{method: "input", answer: value("")},
				{method: "input", answer: value("Ada"), check: func(t *testing.T, req gjson.Result) {
					assert.Contains(t, req.Get("message").String(), "Name needs an answer.")
				}},
				{method: "input", answer: value("old")},
				{method: "input", answer: value("200"), check: func(t *testing.T, req gjson.Result) {
					assert.Contains(t, req.Get("message").String(), `"old" is not a whole number.`)
				}},
				{method: "input", answer: value("7"), check: func(t *testing.T, req gjson.Result) {
					assert.Contains(t, req.Get("message").String(), "age takes at most 150.")
				}},
				{method: "select", answer: value("r")},
				{method: "editor", answer: value("hi")},
				{method: "input", answer: value("")}, // optional, no default: left out
			},
			want: `{"action":"accept","content":{"ok":false,"name":"Ada","age":7,"colour":"r","bio":"hi"}}`},
		{name: "no fitting answer in three tries declines", request: `{"mcp_server_name":"srv","message":"How many?",
			"requested_schema":{"type":"object","properties":{"n":{"type":"number"}}}}`,
			steps: []dialogStep{{method: "input", answer: value("x")}, {method: "input", answer: value("y")}, {method: "input", answer: value("z")}},
			want:  `{"action":"decline"}`},
		{name: "cancelled mid-way cancels the whole elicitation", request: `{"mcp_server_name":"srv","message":"About you",` + person + `}`,
			steps: []dialogStep{{method: "confirm", answer: confirmed}, {method: "input", answer: cancelledUI}},
			want:  `{"action":"cancel"}`},
		{name: "a form with no fields is a confirm", request: `{"mcp_server_name":"srv","message":"Go on?","requested_schema":{"type":"object","properties":{}}}`,
			steps: []dialogStep{{method: "confirm", answer: confirmed}},
			want:  `{"action":"accept","content":{}}`},
		{name: "a form with no fields, not confirmed", request: `{"mcp_server_name":"srv","message":"Go on?","requested_schema":{"type":"object"}}`,
			steps: []dialogStep{{method: "confirm", answer: notConfirmed}},
			want:  `{"action":"decline"}`},
		{name: "a nested object is declined without a dialog", request: `{"mcp_server_name":"srv","message":"Address?",
			"requested_schema":{"type":"object","properties":{"name":{"type":"string"},"address":{"type":"object","properties":{"street":{"type":"string"}}}}}}`,
			want: `{"action":"decline"}`},
		{name: "an array of objects is declined without a dialog", request: `{"mcp_server_name":"srv","message":"Items?",
			"requested_schema":{"type":"object","properties":{"items":{"type":"array","items":{"type":"object"}}}}}`,
			want: `{"action":"decline"}`},
		{name: "URL mode is a confirm with the link", request: `{"mcp_server_name":"srv","message":"Sign in","mode":"url","url":"https://example.com/a","elicitation_id":"e1"}`,
			steps: []dialogStep{{method: "confirm", answer: confirmed, check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, "https://example.com/a", req.Get("url").String())
				assert.Equal(t, "Sign in\n\nhttps://example.com/a", req.Get("message").String())
				assert.Equal(t, "srv asks you to open a link", req.Get("title").String())
			}}},
			want: `{"action":"accept"}`},
		{name: "URL mode not confirmed", request: `{"mcp_server_name":"srv","message":"Sign in","mode":"url","url":"https://example.com/a"}`,
			steps: []dialogStep{{method: "confirm", answer: notConfirmed}},
			want:  `{"action":"decline"}`},
		{name: "URL mode cancelled", request: `{"mcp_server_name":"srv","message":"Sign in","mode":"url","url":"https://example.com/a"}`,
			steps: []dialogStep{{method: "confirm", answer: cancelledUI}},
			want:  `{"action":"cancel"}`},
		{name: "never answered: declined at the timeout", request: `{"mcp_server_name":"srv","message":"Your name?","requested_schema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			opts: &Options{Ask: true, AskTimeout: 200 * time.Millisecond},
			steps: []dialogStep{{method: "input", check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, int64(200), req.Get("timeout").Int(), "pi's timeout field")
			}}, {method: "cancel"}},
			want: `{"action":"decline"}`},
		{name: "with --ask=false, declined without a dialog", request: `{"mcp_server_name":"srv","message":"Your name?","requested_schema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			opts: &Options{Ask: false},
			want: `{"action":"decline"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, a := tc.run(t, "elicitation")
			require.NoError(t, a.err)
			assert.JSONEq(t, tc.want, jsonOf(t, a.resp))
			if len(tc.steps) == 0 {
				for _, f := range r.until(waitFor, isType("agent_end")) {
					assert.NotEqual(t, "extension_ui_request", f.Get("type").String(), "no dialog: %s", f.Raw)
				}
			}
		})
	}
}

func isType(typ string) func(gjson.Result) bool {
	return func(f gjson.Result) bool { return f.Get("type").String() == typ }
}

// TestUserDialog: the CLI's request_user_dialog of a kind the bridge
// declared is a select whose options are the kind's results; cancelled,
// unanswered or an option of no result is {behavior:"cancelled"}, the
// CLI's default; a kind not declared is refused with an error, which the
// CLI discards.
func TestUserDialog(t *testing.T) {
	t.Parallel()
	const refusal = `{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt",
		"payload":{"originalModel":"opus","fallbackModel":"sonnet","apiRefusalCategory":"cyber","guidanceText":"Try rewording."}}`
	checkRefusal := func(t *testing.T, req gjson.Result) {
		assert.Equal(t, "Retry with sonnet?", req.Get("title").String())
		assert.Equal(t, "opus declined to answer (cyber).\nTry rewording.", req.Get("message").String())
		assert.Equal(t, `["Retry with sonnet","Don't retry"]`, req.Get("options").Raw)
	}
	for _, tc := range []dialogCase{
		{name: "refusal fallback: retry", request: refusal,
			steps: []dialogStep{{method: "select", answer: value("Retry with sonnet"), check: checkRefusal}},
			want:  `{"behavior":"completed","result":"retry_fallback"}`},
		{name: "refusal fallback: don't retry", request: refusal,
			steps: []dialogStep{{method: "select", answer: value("Don't retry")}},
			want:  `{"behavior":"cancelled"}`},
		{name: "refusal fallback: cancelled", request: refusal,
			steps: []dialogStep{{method: "select", answer: cancelledUI}},
			want:  `{"behavior":"cancelled"}`},
		{name: "refusal fallback: an answer that is no option", request: refusal,
			steps: []dialogStep{{method: "select", answer: value("sure")}},
			want:  `{"behavior":"cancelled"}`},
		{name: "refusal fallback: never answered", request: refusal, opts: &Options{Ask: true, AskTimeout: 200 * time.Millisecond},
			steps: []dialogStep{{method: "select"}, {method: "cancel"}},
			want:  `{"behavior":"cancelled"}`},
		{name: "auto mode's classifier notice", request: `{"subtype":"request_user_dialog","dialog_kind":"auto_mode_server_fallback",
			"payload":{"title":"Classifier","paragraphs":["One.","Two."],"helpUrl":"https://example.com/help"}}`,
			steps: []dialogStep{{method: "select", answer: value("Interrupt"), check: func(t *testing.T, req gjson.Result) {
				assert.Equal(t, "Classifier", req.Get("title").String())
				assert.Equal(t, "One.\n\nTwo.\n\nhttps://example.com/help", req.Get("message").String())
				assert.Equal(t, `["Continue","Interrupt"]`, req.Get("options").Raw)
			}}},
			want: `{"behavior":"completed","result":"interrupt"}`},
		{name: "a kind not declared", request: `{"subtype":"request_user_dialog","dialog_kind":"fable_overage_consent_prompt","payload":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, a := tc.run(t, "request_user_dialog")
			if tc.want == "" {
				require.Error(t, a.err)
				assert.Contains(t, a.err.Error(), `does not render "fable_overage_consent_prompt" dialogs`)
				return
			}
			require.NoError(t, a.err)
			assert.JSONEq(t, tc.want, jsonOf(t, a.resp))
		})
	}
}

// TestDialogKindsDeclared: the kinds rendered are declared in initialize
// when asking is on, none when it is off (the CLI then sends none).
func TestDialogKindsDeclared(t *testing.T) {
	t.Parallel()
	for _, ask := range []bool{true, false} {
		fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{replay(recording(t, "text"))}}
		r := newRig(t, fake, Options{Ask: ask})
		r.sendf(`{"type":"prompt","message":"hi"}`)
		r.event("agent_end")
		if ask {
			assert.Equal(t, []string{"auto_mode_server_fallback", "refusal_fallback_prompt"}, fake.Config().DialogKinds)
		} else {
			assert.Empty(t, fake.Config().DialogKinds)
		}
	}
}

// TestElicitationBadAnswers: answers the bridge cannot take are refused
// with a clear error (success:false), never a crash, and the dialog still
// waits for its answer: an answer to no request, a second answer, an
// answer after the CLI withdrew the request, an answer after the timeout.
func TestElicitationBadAnswers(t *testing.T) {
	t.Parallel()
	const form = `{"mcp_server_name":"srv","message":"Two things",
		"requested_schema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}}`
	noRequest := func(t *testing.T, r *rig, id string) {
		t.Helper()
		r.send(`{"type":"extension_ui_response","id":"` + id + `","value":"late"}`)
		resp := r.answer(id)
		assert.False(t, resp.Get("success").Bool(), resp.Raw)
		assert.Contains(t, resp.Get("error").String(), `no request "`+id+`" is waiting for an answer`)
	}

	t.Run("a wrong id, then twice", func(t *testing.T) {
		t.Parallel()
		r, answered := askingRig(t, context.Background(), Options{Ask: true}, "elicitation", form)
		first := r.event("extension_ui_request")
		noRequest(t, r, "ui_99")
		r.send(`{"type":"extension_ui_response","id":"` + first.Get("id").String() + `","value":"one"}`)
		second := r.event("extension_ui_request")
		noRequest(t, r, first.Get("id").String()) // the first dialog, answered again
		r.send(`{"type":"extension_ui_response","id":"` + second.Get("id").String() + `","value":"two"}`)
		a := got(t, answered)
		assert.JSONEq(t, `{"action":"accept","content":{"a":"one","b":"two"}}`, jsonOf(t, a.resp))
		noRequest(t, r, second.Get("id").String())
	})
	t.Run("withdrawn by the CLI", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		r, answered := askingRig(t, ctx, Options{Ask: true}, "elicitation", form)
		asked := r.event("extension_ui_request")
		cancel() // the CLI's control_cancel_request
		withdrawn := r.event("extension_ui_request")
		assert.Equal(t, "cancel", withdrawn.Get("method").String())
		assert.Equal(t, asked.Get("id").String(), withdrawn.Get("targetId").String())
		got(t, answered) // what it says is dropped: the CLI withdrew it
		r.event("agent_end")
		noRequest(t, r, asked.Get("id").String())
		var dialogs []string
		for _, f := range r.seen {
			if f.Get("type").String() == "extension_ui_request" {
				dialogs = append(dialogs, f.Get("method").String())
			}
		}
		assert.Equal(t, []string{"input", "cancel"}, dialogs, "no second dialog")
	})
	t.Run("after the timeout", func(t *testing.T) {
		t.Parallel()
		r, answered := askingRig(t, context.Background(), Options{Ask: true, AskTimeout: 200 * time.Millisecond}, "elicitation", form)
		asked := r.event("extension_ui_request")
		a := got(t, answered)
		assert.JSONEq(t, `{"action":"decline"}`, jsonOf(t, a.resp))
		r.event("agent_end")
		noRequest(t, r, asked.Get("id").String())
	})
}
