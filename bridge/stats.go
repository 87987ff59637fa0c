package bridge

import (
	"strings"

	"github.com/claude-rpc/claude-rpc/transform"
)

// setSessionName handles set_session_name: the name get_state reports and
// the CLI's title for the session (--name, from the next turn on).
func (s *server) setSessionName(c command) {
	name, err := c.str("name")
	if err == nil && strings.TrimSpace(name) == "" {
		s.w.send(errResponse(c.id, c.typ, "Session name cannot be empty")) // pi's words
		return
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	s.sessionName = strings.TrimSpace(name)
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, nil))
}

// sessionStats is pi's get_session_stats data.
type sessionStats struct {
	SessionFile       string      `json:"sessionFile,omitempty"`
	SessionID         string      `json:"sessionId"`
	UserMessages      int         `json:"userMessages"`
	AssistantMessages int         `json:"assistantMessages"`
	ToolCalls         int         `json:"toolCalls"`
	ToolResults       int         `json:"toolResults"`
	TotalMessages     int         `json:"totalMessages"`
	Tokens            tokenCounts `json:"tokens"`
	Cost              float64     `json:"cost"`
}

type tokenCounts struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Total      int64 `json:"total"`
}

// stats counts the session's messages and sums the CLI's usage and cost on
// them (the CLI reports cost per run; it sits on each run's last message).
func (s *server) stats() sessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := sessionStats{SessionFile: s.transcriptPath(), SessionID: s.sessionID,
		TotalMessages: len(s.messages)}
	for i := range s.messages {
		m := &s.messages[i]
		switch m.Role {
		case transform.RoleUser:
			st.UserMessages++
		case transform.RoleToolResult:
			st.ToolResults++
		case transform.RoleAssistant:
			st.AssistantMessages++
			for _, c := range m.Content {
				if c.Type == "toolCall" {
					st.ToolCalls++
				}
			}
			u := m.Usage
			st.Tokens.Input += u.Input
			st.Tokens.Output += u.Output
			st.Tokens.CacheRead += u.CacheRead
			st.Tokens.CacheWrite += u.CacheWrite
			st.Cost += u.Cost.Total
		}
	}
	st.Tokens.Total = st.Tokens.Input + st.Tokens.Output + st.Tokens.CacheRead + st.Tokens.CacheWrite
	return st
}
