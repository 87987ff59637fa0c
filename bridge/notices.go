package bridge

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

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
	host *hostLink
	// shown are the status entries set and not cleared: key → text.
	shown map[string]string
	// changed says, by key, whether the last setStatus of that key
	// changed it.
	changed map[string]bool
}

func newNoticeBoard(h *hostLink) *noticeBoard {
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
			n.ID = b.host.next("ui_")
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

// Statuses on a session switch. pi clears every extension status when the
// session changes (interactive mode's resetExtensionUI:
// footerDataProvider.clearExtensionStatuses); a host of pi's RPC keeps
// what it was sent, so the bridge clears them: the extensions' entries,
// and the CLI's that belong to the session left (claude.hook.*, a hook of
// its run; claude.backgroundTasks, its tasks). The CLI's that describe the
// bridge or the account stay (claude.permissionMode, claude.rateLimit,
// claude.auth).

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

// shownStatus are the status entries of the extensions the host shows
// (set, not cleared since). Its mutex is taken only in its methods.
type shownStatus struct {
	mu   sync.Mutex
	keys map[string]bool
}

// note records a setStatus sent: set, or cleared.
func (s *shownStatus) note(key string, set bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	if set {
		s.keys[key] = true
	} else {
		delete(s.keys, key)
	}
}

// take returns the keys shown, in order, and forgets them.
func (s *shownStatus) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Sorted(maps.Keys(s.keys))
	s.keys = nil
	return keys
}

// clearStatuses clears, for a session switch, the status entries that
// were the session's: the CLI's (noticeBoard.leaveSession) and the
// extensions'. On the loop.
func (s *server) clearStatuses() {
	evs := s.runs.notices.leaveSession()
	for _, key := range s.extStatus.take() {
		ev := transform.StatusEvent(key, nil)
		ev.Notice.ID = s.host.next("ui_")
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		s.out.events(evs)
	}
}
