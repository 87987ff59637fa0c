package bridge

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// The permission mode: the host sets it (set_permission_mode, from the
// next turn: the stream transport sends it to the running process, the
// per-turn transports start the next process with it), and the CLI
// changes it by itself (its ExitPlanMode and EnterPlanMode tools), which
// it reports with a system status line. The settings follow what the CLI
// reports, so get_state says the mode the CLI is in and a later process
// starts in it; the host is told of every change with a
// permission_mode_changed event, and sees the mode as the setStatus entry
// claude.permissionMode (transform's, from the CLI's report; the
// transport does not pass on the CLI's report of a mode the host set, so
// the bridge shows that one itself).

func (s *server) setPermissionMode(c *call) (any, error) {
	mode := c.str("mode")
	if !slices.Contains(claudecli.PermissionModes, mode) {
		return nil, fmt.Errorf("%s: mode must be one of %s, got %q", c.typ, strings.Join(claudecli.PermissionModes, ", "), mode)
	}
	before := s.permissionMode()
	s.applySettings(func(st *cliSettings) { st.permissionMode = mode })
	if mode != before {
		s.out.Send(permissionModeChangedJSON{Type: "permission_mode_changed", Mode: mode})
		s.runs.showNotice(transform.PermissionModeStatus(mode))
	}
	return nil, nil
}

// showNotice shows the host a notice of the bridge's own among the CLI's
// (transform's notify and setStatus events), through the runner's
// noticeBoard, which keeps what the host shows. From any goroutine.
func (o *runner) showNotice(ev transform.Event) {
	o.post(func() { o.s.out.Events(o.notices.pass([]transform.Event{ev})) })
}

// permissionMode is the mode the next turn runs in: the one the host set
// or the CLI reported last, else --permission-mode, else the CLI's own.
func (s *server) permissionMode() string {
	set, _ := s.st.currentSettings()
	return cmp.Or(set.permissionMode, s.opts.CLI.PermissionMode, "default")
}

// reportedPermissionMode reads the permission mode a CLI line reports: a
// system status line with a permissionMode (the CLI prints one when its
// mode changed, status null). Other lines report none.
func reportedPermissionMode(line []byte) (string, bool) {
	if !bytes.HasPrefix(line, []byte(`{"type":"system","subtype":"status"`)) {
		return "", false
	}
	m := gjson.GetBytes(line, "permissionMode")
	return m.String(), m.Type == gjson.String && m.String() != ""
}

// followPermissionMode keeps the settings in step with a mode the CLI
// reports in line, and tells the host when it changed. The runner calls
// it with each line of a turn. Run on the runner's loop, it starts no
// process: the stream transport's process is in that mode already.
func (s *server) followPermissionMode(line []byte) {
	mode, ok := reportedPermissionMode(line)
	if !ok || mode == s.permissionMode() {
		return
	}
	s.log.Debug("claude changed its permission mode", "mode", mode)
	s.st.changeSettings(func(st *cliSettings) { st.permissionMode = mode })
	s.passConfig()
	s.out.Send(permissionModeChangedJSON{Type: "permission_mode_changed", Mode: mode})
}
