package transform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoticesFromSDKShapes maps the notice lines the CLI could not be
// made to print against the fake API (no recording has them): each line
// here is built in this test, shaped as the Agent SDK's sdk.d.ts (0.3.328,
// and 0.3.332 alike) types it; they are not recordings. Why each has
// none: notification, informational, auth_status, model_refusal_* and
// session_writes_lost need a claude.ai notice, a Stop hook's verdict, an
// interactive login, a refusal classifier or a full disk; and 2.1.328 in
// print mode prints a local command's output (/cost, /context) as a
// synthetic assistant message, never local_command_output.
func TestNoticesFromSDKShapes(t *testing.T) {
	const sid = `"uuid":"00000000-0000-4000-8000-000000000001","session_id":"s"`
	for _, tc := range []struct {
		name, line string
		want       []string // the notices' encodings
	}{
		{"notification high", `{"type":"system","subtype":"notification","key":"k","text":"Heads up","priority":"high",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Heads up","notifyType":"warning"}`}},
		{"notification low", `{"type":"system","subtype":"notification","key":"k","text":"FYI","priority":"low",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"FYI","notifyType":"info"}`}},
		{"informational warning", `{"type":"system","subtype":"informational","content":"Stop hook said no","level":"warning","prevent_continuation":true,` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Stop hook said no","notifyType":"warning"}`}},
		{"informational suggestion", `{"type":"system","subtype":"informational","content":"Try /compact","level":"suggestion",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Try /compact","notifyType":"info"}`}},
		{"informational info: the CLI's transcript view only", `{"type":"system","subtype":"informational","content":"detail","level":"info",` + sid + `}`, nil},
		{"local command output", `{"type":"system","subtype":"local_command_output","content":"Total cost: $0.05",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Total cost: $0.05","notifyType":"info"}`}},
		{"auth under way", `{"type":"auth_status","isAuthenticating":true,"output":["Opening the browser","Waiting"],` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"setStatus","statusKey":"claude.auth","statusText":"authenticating: Waiting"}`}},
		{"auth failed", `{"type":"auth_status","isAuthenticating":false,"output":[],"error":"denied",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"setStatus","statusKey":"claude.auth"}`,
				`{"type":"extension_ui_request","id":"","method":"notify","message":"Claude authentication failed: denied","notifyType":"error"}`}},
		{"refusal, fallen back", `{"type":"system","subtype":"model_refusal_fallback","trigger":"refusal","direction":"retry","original_model":"a","fallback_model":"b","request_id":null,"content":"Answered by b",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Answered by b","notifyType":"warning"}`}},
		{"refusal, no fallback", `{"type":"system","subtype":"model_refusal_no_fallback","original_model":"a","request_id":null,"content":"",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"The model a refused, and no fallback model could answer","notifyType":"error"}`}},
		{"writes lost", `{"type":"system","subtype":"session_writes_lost","error_code":"ENOSPC","lost":["transcript"],"transcript_session_ids":["s"],` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"notify","message":"Claude could not save its transcript (ENOSPC): resuming this session in Claude may miss part of it","notifyType":"error"}`}},
		{"permission mode back to default", `{"type":"system","subtype":"status","status":null,"permissionMode":"default",` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"setStatus","statusKey":"claude.permissionMode"}`}},
		{"two background tasks, one ambient", `{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"a","task_type":"local_bash","description":"npm test"},{"task_id":"b","task_type":"local_agent","description":"Review"},{"task_id":"c","task_type":"monitor","description":"watch","ambient":true}],` + sid + `}`,
			[]string{`{"type":"extension_ui_request","id":"","method":"setStatus","statusKey":"claude.backgroundTasks","statusText":"2 background tasks: npm test, Review"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTranslator(clock())
			tr.Start(UserMessage([]Content{TextContent("go")}, 1))
			var got []string
			for _, ev := range tr.Line([]byte(tc.line)) {
				require.Equal(t, eventUIRequest, ev.Type)
				b, err := ev.MarshalJSON()
				require.NoError(t, err)
				got = append(got, string(b))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestCommandsChanged: a commands_changed line (as 2.1.328 printed it when
// a command file was added mid-session; built here) hands its list over
// once.
func TestCommandsChanged(t *testing.T) {
	tr := NewTranslator(clock())
	tr.Start(UserMessage([]Content{TextContent("go")}, 1))
	assert.Empty(t, tr.Line([]byte(`{"type":"system","subtype":"commands_changed","commands":[{"name":"hello","description":"Say hi (user)","argumentHint":""}],"uuid":"u","session_id":"s"}`)))
	var cmds []map[string]any
	require.NoError(t, json.Unmarshal(tr.TakeCommands(), &cmds))
	assert.Equal(t, "hello", cmds[0]["name"])
	assert.Nil(t, tr.TakeCommands(), "taken once")
}

// TestTaskUpdated: a task_updated patch (shaped per sdk.d.ts) of a running
// sub-agent shows as its progress: a new description, its move to the
// background; one of a task it does not know shows nothing.
func TestTaskUpdated(t *testing.T) {
	tr := NewTranslator(clock())
	tr.Start(UserMessage([]Content{TextContent("go")}, 1))
	tr.Line([]byte(`{"type":"system","subtype":"task_started","task_id":"t1","tool_use_id":"call1","description":"Look","task_type":"local_agent","prompt":"look around","uuid":"u","session_id":"s"}`))
	evs := tr.Line([]byte(`{"type":"system","subtype":"task_updated","task_id":"t1","patch":{"description":"Look harder","is_backgrounded":true},"uuid":"u","session_id":"s"}`))
	require.Len(t, evs, 1)
	require.Equal(t, EventSubagentProgress, evs[0].Type)
	p := evs[0].Subagent.Progress
	assert.True(t, p.Detached)
	assert.Equal(t, "Look harder", p.Progress.Description)
	assert.Empty(t, tr.Line([]byte(`{"type":"system","subtype":"task_updated","task_id":"t1","patch":{"description":"Look harder"},"uuid":"u","session_id":"s"}`)), "nothing changed")
	assert.Empty(t, tr.Line([]byte(`{"type":"system","subtype":"task_updated","task_id":"other","patch":{"status":"completed"},"uuid":"u","session_id":"s"}`)))
}
