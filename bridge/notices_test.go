package bridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"

	"github.com/claude-rpc/claude-rpc/transform"
)

// TestNoticeBoard: notices are numbered as extension_ui_requests; what
// would change nothing the host shows is dropped.
func TestNoticeBoard(t *testing.T) {
	text := func(s string) *string { return &s }
	limit := transform.NotifyEvent(transform.NotifyWarning, "80% used")
	limit.Notice.StatusKey = transform.StatusRateLimit
	status := func(key string, s *string) transform.Event { return transform.StatusEvent(key, s) }
	b := newNoticeBoard(hostlink.New(hostlink.Config{}))
	for _, tc := range []struct {
		name string
		in   []transform.Event
		ids  []string // the ids of those written
	}{
		{"a clear of an entry never set", []transform.Event{status("k", nil)}, nil},
		{"set, with its notify", []transform.Event{status(transform.StatusRateLimit, text("80%")), limit}, []string{"ui_1", "ui_2"}},
		{"the same again: neither", []transform.Event{status(transform.StatusRateLimit, text("80%")), limit}, nil},
		{"a plain notify always", []transform.Event{transform.NotifyEvent(transform.NotifyInfo, "hi")}, []string{"ui_3"}},
		{"cleared", []transform.Event{status(transform.StatusRateLimit, nil)}, []string{"ui_4"}},
		{"cleared again", []transform.Event{status(transform.StatusRateLimit, nil)}, nil},
		{"other events pass", []transform.Event{{Type: transform.EventTurnStart}}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for _, ev := range b.pass(append([]transform.Event(nil), tc.in...)) {
				id := ""
				if ev.Notice != nil {
					id = ev.Notice.ID
				}
				ids = append(ids, id)
			}
			assert.Equal(t, tc.ids, ids)
		})
	}
}

// TestStatusesClearedOnSwitch: pi clears every status when the session
// changes; the bridge clears, on new_session and switch_session, the
// CLI's entries of the session left (a hook still running) and sends each
// a clear once; the next switch has none to clear.
func TestStatusesClearedOnSwitch(t *testing.T) {
	rec := recording(t, "hooks")
	var lines [][]byte
	for _, l := range rec.Lines {
		if gjson.GetBytes(l, "subtype").String() != "hook_response" { // the hooks never end
			lines = append(lines, l)
		}
	}
	r := newRig(t, &claudetest.Transport{Per: true, Scenarios: []claudetest.Scenario{func(t *claudetest.Turn) { t.Emit(lines...) }}}, Options{})
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("session_settled")
	statuses := func(from int) map[string]string {
		out := map[string]string{}
		for _, f := range r.seen[from:] {
			if f.Get("method").String() == "setStatus" {
				out[f.Get("statusKey").String()] = f.Get("statusText").String() + map[bool]string{false: "(cleared)"}[f.Get("statusText").Exists()]
			}
		}
		return out
	}
	shown := statuses(0)
	var hooks []string
	for k, v := range shown {
		if strings.HasPrefix(k, transform.StatusHookPrefix) && v != "(cleared)" {
			hooks = append(hooks, k)
		}
	}
	require.NotEmpty(t, hooks, "hooks shown running: %v", shown)
	n := len(r.seen)
	require.True(t, r.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	cleared := statuses(n)
	for _, k := range hooks {
		assert.Equal(t, "(cleared)", cleared[k], k)
	}
	n = len(r.seen)
	require.True(t, r.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	assert.Empty(t, statuses(n), "nothing left to clear")
}
