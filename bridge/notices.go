package bridge

import (
	"maps"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// noticeBoard writes the CLI's notices, the translator's notify and
// setStatus events (transform/notices.go): it gives each the id of an
// extension_ui_request (numbered with the bridge's others) and drops
// those that would change nothing the host shows: a setStatus that sets
// an entry to the text it shows already, or clears one not set, and a
// notify tied to such a status (a usage limit the CLI reports again on
// each model call). Owned by the runner's loop.
type noticeBoard struct {
	host *hostlink.Link
	// shown are the status entries set and not cleared: key → text.
	shown map[string]string
	// changed says, by key, whether the last setStatus of that key
	// changed it.
	changed map[string]bool
}

func newNoticeBoard(h *hostlink.Link) *noticeBoard {
	return &noticeBoard{host: h, shown: map[string]string{}, changed: map[string]bool{}}
}

// pass returns evs without the notices that change nothing, the others
// numbered. It filters evs in place.
func (b *noticeBoard) pass(evs []transform.Event) []transform.Event {
	out := evs[:0]
	for _, ev := range evs {
		if n := ev.Notice; n != nil {
			if !b.changes(n) {
				continue
			}
			n.ID = b.host.Next("ui_")
		}
		out = append(out, ev)
	}
	return out
}

// changes notes n and reports whether it changes what the host shows.
func (b *noticeBoard) changes(n *transform.Notice) bool {
	if n.Method == transform.NoticeNotify {
		return n.StatusKey == "" || b.changed[n.StatusKey]
	}
	text, set := b.shown[n.StatusKey]
	switch {
	case n.StatusText == nil:
		delete(b.shown, n.StatusKey)
		b.changed[n.StatusKey] = set
	case set && text == *n.StatusText:
		b.changed[n.StatusKey] = false
	default:
		b.shown[n.StatusKey] = *n.StatusText
		b.changed[n.StatusKey] = true
	}
	return b.changed[n.StatusKey]
}

// learnLine takes what the line tr read last told the bridge besides its
// events: the CLI's command list, when it changed. On the loop.
func (o *runner) learnLine(tr *transform.Translator) {
	if cmds := tr.TakeCommands(); cmds != nil {
		o.s.commandsListed(claudecli.ParseCommands(gjson.ParseBytes(cmds)))
	}
}

// Statuses on a session switch. The CLI's entries that belong to the
// session left are cleared (claude.hook.*, a hook of its run;
// claude.backgroundTasks, its tasks); those describing the bridge or the
// account stay (claude.permissionMode, claude.rateLimit, claude.auth).
// The extensions' own entries are theirs to clear, as under pi 1.6.0's
// RPC mode, which sends no clear on a switch (its interactive mode resets
// its footer; TestRealExtensions compares the frames with pi's).

// leaveSession clears the CLI's status entries of the session left: the
// events, numbered, that clear them. On the loop.
func (b *noticeBoard) leaveSession() []transform.Event {
	var out []transform.Event
	for _, key := range slices.Sorted(maps.Keys(b.shown)) {
		if strings.HasPrefix(key, transform.StatusHookPrefix) || key == transform.StatusBackgroundTasks {
			out = append(out, transform.StatusEvent(key, nil))
		}
	}
	return b.pass(out)
}

// clearStatuses clears, for a session switch, the CLI's status entries
// that were the session's (noticeBoard.leaveSession). On the loop.
func (s *server) clearStatuses() {
	if evs := s.runs.notices.leaveSession(); len(evs) > 0 {
		s.out.Events(evs)
	}
}
