package bridge

import (
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/sessions"
)

// handedMsg is a steering message sent to the CLI mid-turn, not yet
// started by it.
type handedMsg struct {
	uuid string
	m    message
}

// handOver sends queued steering messages to the CLI while its turn runs,
// when the transport takes them ([claudecli.Steerer]: the stream
// transport). The CLI gives them to the model at the next tool boundary,
// after the tool results, or runs them right after the turn; the
// translator shows each where the CLI started it. In one-at-a-time mode
// the next is handed only once the previous one started, so each boundary
// delivers one, as pi does. Per-turn transports keep them queued until the
// CLI turn ends. Called with s.mu held.
func (s *server) handOver(r *run) {
	st, ok := r.turn.(claudecli.Steerer)
	if !ok || r.aborted || r.compact {
		return
	}
	for len(s.steerQ) > 0 && (s.steeringMode == modeAll || len(r.handed) == 0) {
		m := s.steerQ[0]
		id := sessions.NewID()
		text := s.bashContextText() + m.text
		if !st.Steer(id, claudecli.UserLineID(text, m.images, id)) {
			return // the turn is over: the run delivers the queue as its next turn
		}
		s.takeBashContext()
		r.handed = append(r.handed, handedMsg{uuid: id, m: m})
		s.steerQ = s.steerQ[1:]
	}
}

// started takes the handed message uuid names, which the CLI started.
// Called with s.mu held.
func (r *run) started(uuid string) (message, bool) {
	for i, h := range r.handed {
		if h.uuid == uuid {
			r.handed = append(r.handed[:i], r.handed[i+1:]...)
			return h.m, true
		}
	}
	return message{}, false
}

// pending counts the messages not yet delivered: queued, or held by the CLI
// and not started. Called with s.mu held.
func (s *server) pending() int {
	n := len(s.steerQ) + len(s.followQ)
	if s.run != nil {
		n += len(s.run.handed)
	}
	return n
}
