package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// subagentRegistry is omp's sub-agent registry, fed by the translator's
// subagent_* events (transform/subagents.go): which sub-agents run, where
// their transcripts are, and which of the events the host subscribed to
// (set_subagent_subscription; off until it does, so hosts that never ask
// see none). It lives as long as the session: a session change forgets
// it. Its mutex is taken only by its methods, which call nothing else
// (observe's file makes a path: sessions.SubagentPath).
type subagentRegistry struct {
	mu      sync.Mutex
	level   string                       // off, progress or events
	running map[string]*subagentSnapshot // by id
	// files are the transcripts of the sub-agents seen, running or ended,
	// by id; order is their ids, oldest first, at most keptTranscripts.
	files map[string]string
	order []string
	// detached are background sub-agents the last run left running in
	// the CLI process (stream transport), for the next run to adopt.
	detached *transform.Subagents
}

// keep holds the background sub-agents a run left running, when it ran in
// the session in use (gen).
func (g *subagentRegistry) keep(s *transform.Subagents) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.detached = s
}

// take hands the held sub-agents to the next run.
func (g *subagentRegistry) take() *transform.Subagents {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.detached
	g.detached = nil
	return s
}

// keptTranscripts is how many ended sub-agents' transcripts stay known
// (omp's bound).
const keptTranscripts = 256

// observe takes the run's events before they are written: it keeps the
// registry, gives the sub-agents' frames their transcript's path, and
// returns evs without the sub-agent frames the host did not subscribe to
// (in place). file gives a sub-agent's transcript by its id.
func (g *subagentRegistry) observe(evs []transform.Event, file func(id string) string) []transform.Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := evs[:0]
	for _, ev := range evs {
		sub := ev.Subagent
		if sub == nil {
			out = append(out, ev)
			continue
		}
		switch ev.Type {
		case transform.EventSubagentLifecycle:
			l := sub.Lifecycle
			l.SessionFile = file(l.ID)
			g.remember(l.ID, l.SessionFile)
			if l.Status == "started" {
				g.running[l.ID] = &subagentSnapshot{ID: l.ID, Index: l.Index, Agent: l.Agent, AgentSource: l.AgentSource,
					Description: l.Description, Status: "running", SessionFile: l.SessionFile,
					ParentToolCallID: l.ParentToolCallID, LastUpdate: time.Now().UnixMilli()}
			} else {
				delete(g.running, l.ID)
			}
		case transform.EventSubagentProgress:
			p := sub.Progress
			p.SessionFile = file(p.Progress.ID)
			if snap := g.running[p.Progress.ID]; snap != nil {
				progress := p.Progress
				snap.Status, snap.Task, snap.Progress, snap.LastUpdate = progress.Status, p.Task, &progress, time.Now().UnixMilli()
			}
		}
		if g.level == "events" || g.level == "progress" && ev.Type != transform.EventSubagentEvent {
			out = append(out, ev)
		}
	}
	return out
}

// remember notes a sub-agent's transcript, forgetting the oldest past
// keptTranscripts.
func (g *subagentRegistry) remember(id, file string) {
	if _, ok := g.files[id]; !ok {
		g.order = append(g.order, id)
	}
	g.files[id] = file
	for len(g.order) > keptTranscripts {
		delete(g.files, g.order[0])
		g.order = g.order[1:]
	}
}

// reset forgets every sub-agent: a session change (the subscription
// stays, as omp's).
func (g *subagentRegistry) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running, g.files, g.order, g.detached = map[string]*subagentSnapshot{}, map[string]string{}, nil, nil
}

// subagentLevels are set_subagent_subscription's levels, omp's.
var subagentLevels = map[string]bool{"off": true, "progress": true, "events": true}

func (s *server) setSubagentSubscription(c *call) (any, error) {
	level := c.str("level")
	if !subagentLevels[level] {
		return nil, fmt.Errorf("Invalid subagent subscription level: %s", c.raw.Get("level").String())
	}
	s.subs.subscribe(level)
	return subagentLevelData{Level: level}, nil
}

// subscribe makes level the host's subscription.
func (g *subagentRegistry) subscribe(level string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.level = level
}

func (s *server) getSubagents(*call) (any, error) {
	return subagentsData{Subagents: s.subs.runningNow()}, nil
}

// runningNow is a copy of the running sub-agents, in the order they
// started.
func (g *subagentRegistry) runningNow() []subagentSnapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := make([]subagentSnapshot, 0, len(g.running))
	for _, snap := range g.running {
		list = append(list, *snap)
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].Index < list[j].Index || list[i].Index == list[j].Index && list[i].ID < list[j].ID
	})
	return list
}

// getSubagentMessages reads a sub-agent's transcript from a byte offset, as
// omp's does: the whole lines written since, as the CLI wrote them, and
// the pi messages they make.
func (s *server) getSubagentMessages(c *call) (any, error) {
	from := int64(0)
	if v := c.raw.Get("fromByte"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || math.IsInf(v.Float(), 0) || math.IsNaN(v.Float()) {
			return nil, errors.New("fromByte must be a finite number")
		}
		from = max(0, int64(v.Float()))
	}
	file, err := s.subs.resolve(c.str("subagentId"), c.str("sessionFile"))
	if err != nil {
		return nil, err
	}
	return readSubagentTranscript(file, from, s.opts.ToolNames)
}

// resolve finds the transcript a get_subagent_messages call names.
func (g *subagentRegistry) resolve(id, file string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case id != "":
		if f := g.files[id]; f != "" {
			return f, nil
		}
		return "", fmt.Errorf("Unknown subagent or session file unavailable: %s", id)
	case file != "":
		for _, f := range g.files {
			if f == file {
				return f, nil
			}
		}
		return "", errors.New("Unknown subagent session file")
	}
	return "", errors.New("get_subagent_messages requires subagentId or sessionFile")
}

// readSubagentTranscript reads the whole lines of file from byte from on;
// from past the end (the file was replaced) reads it from the start,
// with reset set. A file not written yet reads as empty.
func readSubagentTranscript(file string, from int64, names transform.ToolNames) (*subagentMessagesData, error) {
	d := &subagentMessagesData{SessionFile: file, FromByte: from, NextByte: from, Entries: []json.RawMessage{}, Messages: []transform.Message{}}
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if from > fi.Size() {
		d.FromByte, d.NextByte, d.Reset = 0, 0, true
	}
	b, err := io.ReadAll(io.NewSectionReader(f, d.FromByte, fi.Size()-d.FromByte))
	if err != nil {
		return nil, err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1] // whole lines: the CLI may be writing the next
	d.NextByte = d.FromByte + int64(len(b))
	var lines [][]byte
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if !gjson.ValidBytes(line) {
			continue
		}
		lines = append(lines, line)
		d.Entries = append(d.Entries, json.RawMessage(line))
	}
	if msgs := transform.FromTranscriptPart(lines, names); msgs != nil {
		d.Messages = msgs
	}
	return d, nil
}

// subagentFile is where the CLI writes sub-agent id's transcript in the
// session a run's translator reported.
func (s *server) subagentFile(tr *transform.Translator) func(string) string {
	return func(id string) string { return sessions.SubagentPath(s.configDir, s.cwd, tr.SessionID(), id) }
}
