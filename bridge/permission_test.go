package bridge

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestSetPermissionModeSettings: set_permission_mode checks the mode,
// hands the transport a config with it, says so (permission_mode_changed,
// once per change) and get_state reports it; --permission-mode is the
// mode until then.
func TestSetPermissionModeSettings(t *testing.T) {
	fake := &claudetest.Transport{}
	opts := Options{}
	opts.CLI.PermissionMode = "acceptEdits"
	r := newRig(t, fake, opts)
	mode := func() string { return r.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String() }
	assert.Equal(t, "acceptEdits", mode())

	for _, tc := range []struct {
		mode    string
		ok      bool
		changed bool
	}{
		{"plan", true, true},
		{"plan", true, false},
		{"sideways", false, false},
		{"", false, false},
		{"default", true, true},
	} {
		res := r.call(map[string]any{"type": "set_permission_mode", "mode": tc.mode})
		require.Equal(t, tc.ok, res.Get("success").Bool(), "%q: %s", tc.mode, res.Raw)
		var events []string
		for _, f := range r.held {
			if f.Get("type").String() == "permission_mode_changed" {
				events = append(events, f.Get("type").String()+" "+f.Get("mode").String())
			}
		}
		r.held = nil
		if tc.changed {
			assert.Equal(t, []string{"permission_mode_changed " + tc.mode}, events, tc.mode)
		} else {
			assert.Empty(t, events, tc.mode)
		}
		if !tc.ok {
			assert.Contains(t, res.Get("error").String(), "acceptEdits, auto, bypassPermissions, default, dontAsk, manual, plan")
		}
	}
	assert.Equal(t, "default", mode())
	assert.Equal(t, "default", fake.Config().PermissionMode)
	// The mode shows in the host's status line, as the CLI's own changes
	// do (transform.PermissionModeStatus): the default one clears it.
	var status []string
	for _, f := range r.seen {
		if f.Get("method").String() == "setStatus" && f.Get("statusKey").String() == "claude.permissionMode" {
			status = append(status, f.Get("statusText").String())
		}
	}
	assert.Equal(t, []string{"permission mode: plan", ""}, status)
}

// TestPermissionModeFollowed: a mode the CLI reports during a turn (a
// system status line with permissionMode, as it prints when ExitPlanMode
// ran) becomes the settings' and get_state's, and the host is told,
// among the turn's events.
func TestPermissionModeFollowed(t *testing.T) {
	rec := recording(t, "text")
	lines := slices.Insert(slices.Clone(rec.Lines), 1,
		[]byte(`{"type":"system","subtype":"status","status":null,"permissionMode":"acceptEdits","uuid":"u1","session_id":"s"}`))
	fake := &claudetest.Transport{Scenarios: []claudetest.Scenario{func(t *claudetest.Turn) { t.Emit(lines...) }}}
	r := newRig(t, fake, Options{})
	require.True(t, r.call(map[string]any{"type": "set_permission_mode", "mode": "plan"}).Get("success").Bool())
	r.held = nil
	r.sendf(`{"type":"prompt","message":"hi"}`)
	r.event("agent_end")
	var changed []string
	for _, f := range r.seen {
		if f.Get("type").String() == "permission_mode_changed" {
			changed = append(changed, f.Get("mode").String())
		}
	}
	assert.Equal(t, []string{"plan", "acceptEdits"}, changed)
	assert.Equal(t, "acceptEdits", r.call(map[string]any{"type": "get_state"}).Get("data.permissionMode").String())
	assert.Equal(t, "acceptEdits", fake.Config().PermissionMode, "a later process starts in the CLI's mode")
}
