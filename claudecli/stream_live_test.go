package claudecli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoteChange: which config changes the running process is brought in
// step with by control requests before the next turn (live), and which
// replace it (stale).
func TestNoteChange(t *testing.T) {
	listChanged := func(server string) map[string]any {
		return map[string]any{"subtype": "mcp_message", "server_name": server,
			"message": map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}}
	}
	sdk := func(names ...string) map[string]any {
		m := map[string]any{}
		for _, n := range names {
			m[n] = map[string]string{"type": "sdk", "name": n}
		}
		return map[string]any{"subtype": "mcp_set_servers", "servers": m}
	}
	base := Config{Path: "claude", AskPermissions: true, SDKServers: []string{"host"}, SDKTools: map[string]string{"host": "a", "ext": "e"}}
	for _, tc := range []struct {
		name    string
		from    string // the permission mode before
		change  func(c *Config)
		live    []map[string]any
		stale   bool
		servers []string // the process's SDK servers after
	}{
		{name: "nothing", change: func(*Config) {}},
		{name: "permission mode", change: func(c *Config) { c.PermissionMode = "plan" },
			live: []map[string]any{{"subtype": "set_permission_mode", "mode": "plan"}}},
		{name: "permission mode back to the CLI's own", from: "plan", change: func(c *Config) { c.PermissionMode = "" },
			live: []map[string]any{{"subtype": "set_permission_mode", "mode": "default"}}},
		{name: "the host's tools", change: func(c *Config) { c.SDKTools = map[string]string{"host": "b", "ext": "e"} },
			live: []map[string]any{listChanged("host")}},
		{name: "the host's server dropped: it lists none", change: func(c *Config) {
			c.SDKServers, c.SDKTools = nil, map[string]string{"host": "none", "ext": "e"}
		}, live: []map[string]any{listChanged("host")}},
		{name: "a server added", change: func(c *Config) {
			c.SDKServers, c.SDKTools = []string{"ext", "host"}, map[string]string{"host": "a", "ext": "f"}
		}, live: []map[string]any{sdk("ext", "host")}, servers: []string{"ext", "host"}},
		{name: "a server added without asking", change: func(c *Config) {
			c.SDKServers, c.AskPermissions = []string{"ext", "host"}, false
		}, stale: true},
		{name: "a model", change: func(c *Config) { c.Model = "sonnet" }, stale: true},
		{name: "effort and fast mode", change: func(c *Config) { c.Effort, c.FastMode = "high", true },
			live: []map[string]any{
				{"subtype": "apply_flag_settings", "settings": map[string]any{"effortLevel": "high"}},
				{"subtype": "apply_flag_settings", "settings": map[string]any{"fastMode": true}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := base
			old.PermissionMode = tc.from
			s := &stream{cfg: old, servers: base.SDKServers}
			next := old
			tc.change(&next)
			s.noteChange(old, next)
			assert.Equal(t, tc.stale, s.stale)
			assert.Equal(t, tc.live, s.live)
			if tc.servers == nil {
				tc.servers = base.SDKServers
			}
			assert.Equal(t, tc.servers, s.servers)
		})
	}

	// A change superseded before the next turn is sent once, as it is
	// last.
	s := &stream{servers: []string{"host"}}
	a, b, c := base, base, base
	b.PermissionMode, b.SDKTools = "plan", map[string]string{"host": "b"}
	c.PermissionMode, c.SDKTools = "acceptEdits", map[string]string{"host": "c"}
	s.noteChange(a, b)
	s.noteChange(b, c)
	assert.Equal(t, []map[string]any{{"subtype": "set_permission_mode", "mode": "acceptEdits"}, listChanged("host")}, s.live)
}

// TestEchoed: after a set_permission_mode request, the CLI's status line
// reporting a mode is the transport's (whenever it comes before the next
// turn's init), once; without a request, or after init, it is the
// turn's. A status line without a status begins no turn of the CLI's own.
func TestEchoed(t *testing.T) {
	status := []byte(`{"type":"system","subtype":"status","status":null,"permissionMode":"plan","uuid":"u","session_id":"s"}`)
	working := []byte(`{"type":"system","subtype":"status","status":"requesting","uuid":"u","session_id":"s"}`)
	init := []byte(`{"type":"system","subtype":"init","permissionMode":"plan","session_id":"s"}`)
	text := []byte(`{"type":"assistant","message":{}}`)

	sp := &streamProc{}
	assert.False(t, sp.echoed(status), "no request: the CLI changed its mode itself")
	sp.awaitEcho()
	assert.False(t, sp.echoed(text))
	assert.False(t, sp.echoed(working))
	assert.True(t, sp.echoed(status))
	assert.False(t, sp.echoed(status), "one report per request")
	sp.awaitEcho()
	assert.False(t, sp.echoed(init))
	assert.False(t, sp.echoed(status), "the turn began: a report now is the turn's")

	assert.False(t, OpensTurn(status))
	assert.True(t, OpensTurn(working))
	assert.True(t, OpensTurn(init))
}
