package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/claude-rpc/claude-rpc/transform"
)

// TestNoticeBoard: notices are numbered as extension_ui_requests; what
// would change nothing the host shows is dropped.
func TestNoticeBoard(t *testing.T) {
	text := func(s string) *string { return &s }
	limit := transform.NotifyEvent(transform.NotifyWarning, "80% used")
	limit.Notice.StatusKey = transform.StatusRateLimit
	status := func(key string, s *string) transform.Event { return transform.StatusEvent(key, s) }
	b := newNoticeBoard(newHostLink())
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
