package bridge

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/sessions"
	"github.com/claude-rpc/claude-rpc/transform"
)

// Session entries as pi 1.5 keeps them (its session-format.md): a log of
// what happened in the session, each entry with an id and its parent's,
// for get_entries and get_tree. The CLI's transcript is its own format
// (a line per content block, its own bookkeeping), so the bridge keeps
// pi's log itself, in memory, from what it sees: the session's start
// (model_change, thinking_level_change, session_info when named), each
// run's messages, and the changes the host makes (model, thinking level,
// name, compaction). A session loaded from a transcript starts with its
// messages. Entries live as long as the bridge is on the session, under
// --no-session too.

// entryJSON is one of pi's session entries; Type says which fields it has.
type entryJSON struct {
	// Type is message, model_change, thinking_level_change, session_info,
	// compaction, custom (an extension's appendEntry), custom_message (its
	// sendMessage) or label (its setLabel).
	Type string `json:"type"`
	// ID is the entry's id: 8 hex digits.
	ID string `json:"id"`
	// ParentID is the entry before it; null for the first.
	ParentID *string `json:"parentId" schema:"nullable"`
	// Timestamp is when it happened, ISO 8601.
	Timestamp string `json:"timestamp"`
	// Message is a message entry's message.
	Message *transform.Message `json:"message,omitempty"`
	// Provider and ModelID are a model_change's.
	Provider string `json:"provider,omitempty"`
	ModelID  string `json:"modelId,omitempty"`
	// ThinkingLevel is a thinking_level_change's.
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// Name is a session_info's.
	Name string `json:"name,omitempty"`
	// Summary, FirstKeptEntryID and TokensBefore are a compaction's.
	Summary          string `json:"summary,omitempty"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int64  `json:"tokensBefore,omitempty"`
	// CustomType is a custom or custom_message entry's: the extension's
	// kind of entry or message.
	CustomType string `json:"customType,omitempty"`
	// Data is a custom entry's: what an extension keeps in the session
	// (pi's appendEntry), never sent to the model.
	Data json.RawMessage `json:"data,omitempty"`
	// Content, Display and Details are a custom_message's: an extension's
	// message (pi's sendMessage), which the model gets as the user's, and
	// whether a UI shows it.
	Content json.RawMessage `json:"content,omitempty"`
	Display *bool           `json:"display,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	// TargetID and Label are a label entry's: the entry it labels, and the
	// label (none: the label is cleared).
	TargetID string `json:"targetId,omitempty"`
	Label    string `json:"label,omitempty"`
	// ClaudeSessionID is the CLI session that holds the entry: the
	// session's when the entry was made (claude-rpc's; in its pi file
	// too). An entry read from a pi file without one was written by
	// another program (pi itself).
	ClaudeSessionID string `json:"claudeSessionId,omitempty"`

	// raw is the entry as its pi file holds it, when it was read from one:
	// written as it is (pi's other kinds, and fields claude-rpc does not
	// know, go to the host unchanged).
	raw json.RawMessage
}

// MarshalJSON writes a read entry as it was read, else its fields.
func (e entryJSON) MarshalJSON() ([]byte, error) {
	if e.raw != nil {
		return e.raw, nil
	}
	type fields entryJSON // without this method
	return json.Marshal(fields(e))
}

// customMessageOf is the message of a custom_message entry of a pi file.
func customMessageOf(raw []byte) (transform.Message, bool) {
	v := gjson.ParseBytes(raw)
	if v.Get("type").String() != "custom_message" {
		return transform.Message{}, false
	}
	m, err := customFromJSON(v)
	if err != nil {
		return transform.Message{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, v.Get("timestamp").String()); err == nil {
		m.Timestamp = t.UnixMilli()
	}
	return m, true
}

// appendEntry appends e's line in its pi file to dst (no line end): an
// entry read from a pi file as it was; else its fields as MarshalJSON
// writes them, the message, an entry's bulk, encoded once
// (transform.AppendMessage) where encoding/json would copy it once per
// level of nesting.
func appendEntry(dst []byte, e *entryJSON) ([]byte, error) {
	if e.raw != nil {
		return append(dst, e.raw...), nil
	}
	head, tail, err := entryAround(e)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, head...)
	if e.Message != nil {
		if dst, err = transform.AppendMessage(dst, e.Message); err != nil {
			return dst[:start], err
		}
	}
	return append(dst, tail...), nil
}

// writeEntry writes the line appendEntry makes of e, an entry with a
// message that encodes (transform.CheckMessage), to w: the message as it
// is encoded (transform.WriteMessage), never whole in memory.
func writeEntry(w io.Writer, e *entryJSON) error {
	head, tail, err := entryAround(e)
	if err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	if err := transform.WriteMessage(w, e.Message); err != nil {
		return err
	}
	_, err = w.Write(tail)
	return err
}

// entryAround is the line of e (not read from a pi file) around its
// message: its fields before the message's value (through "message":,
// when it has one), and those after it with the closing brace.
func entryAround(e *entryJSON) (head, tail []byte, err error) {
	type fields entryJSON // without MarshalJSON
	h := fields(*e)
	h.Message, h.ClaudeSessionID = nil, ""
	b, err := json.Marshal(h)
	if err != nil {
		return nil, nil, err
	}
	head = b[:len(b)-1] // without its }
	if e.Message != nil {
		head = append(head, `,"message":`...)
	}
	if e.ClaudeSessionID != "" {
		id, _ := json.Marshal(e.ClaudeSessionID) // a string always encodes
		if e.Message != nil || len(head) > 1 {
			tail = append(tail, ',')
		}
		tail = append(append(tail, `"claudeSessionId":`...), id...)
	}
	return head, append(tail, '}'), nil
}

// entryFromPi is an entry of a pi file as one of the session's entries:
// its kind, id, parent and time, its message when it is one of the
// messages claude-rpc knows, the rest as it is.
func entryFromPi(pe sessions.PiEntry) entryJSON {
	v := gjson.ParseBytes(pe.Raw)
	e := entryJSON{Type: pe.Type, ID: pe.ID, Timestamp: v.Get("timestamp").String(), raw: pe.Raw}
	if pe.ParentID != "" {
		parent := pe.ParentID
		e.ParentID = &parent
	}
	if pe.Type == "message" {
		if m, ok := transform.MessageFromPi([]byte(v.Get("message").Raw)); ok {
			e.Message = &m
		}
	}
	e.Name = v.Get("name").String()
	e.TargetID, e.Label = v.Get("targetId").String(), v.Get("label").String() // a label's, for get_tree
	e.ClaudeSessionID = pe.ClaudeSessionID
	return e
}

// entriesData is get_entries' data.
type entriesData struct {
	// Entries are the session's entries in the order they were made
	// (after since, when given).
	Entries []entryJSON `json:"entries"`
	// LeafID is the last entry's id.
	LeafID string `json:"leafId"`
}

// treeNode is one entry of get_tree and the entries made after it.
type treeNode struct {
	Entry    entryJSON  `json:"entry"`
	Children []treeNode `json:"children"`
	// Label and LabelTimestamp are the entry's label, the latest label
	// entry's for it (pi's setLabel), and when it was set.
	Label          string `json:"label,omitempty"`
	LabelTimestamp string `json:"labelTimestamp,omitempty"`
}

// treeData is get_tree's data: the session's entries as pi's tree. Claude
// sessions do not branch in place (fork makes a new session), so the
// bridge's own are one chain; a pi file opened may have branches.
type treeData struct {
	Tree   []treeNode `json:"tree"`
	LeafID string     `json:"leafId"`
}

// newEntryID is a new entry id: 8 hex digits, as pi's.
func newEntryID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func isoMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// addEntry appends e, given its id, parent and time. Called with st.mu held.
func (ls *lockedState) addEntry(e entryJSON, at int64) {
	e.ID = newEntryID()
	if n := len(ls.entries); n > 0 {
		parent := ls.entries[n-1].ID
		e.ParentID = &parent
	}
	e.Timestamp = isoMillis(at)
	e.ClaudeSessionID = ls.sessionID
	ls.entries = append(ls.entries, e)
	ls.queue(e)
}

// startEntries begins the entry log of the session in use: model, thinking
// level, name, and the messages it already has. Called with st.mu held.
func (ls *lockedState) startEntries() {
	ls.entries = nil
	ls.dropUnwritten(ls.pi)
	now := nowMillis()
	model := ls.model
	if model == "" {
		model = "default"
	}
	if ls.sessionName != "" {
		ls.addEntry(entryJSON{Type: "session_info", Name: ls.sessionName}, now)
	}
	ls.addEntry(entryJSON{Type: "model_change", Provider: transform.Provider, ModelID: model}, now)
	ls.addEntry(entryJSON{Type: "thinking_level_change", ThinkingLevel: ls.levelLocked()}, now)
	ls.addMessageEntries(ls.messages)
}

// addMessageEntries adds a message entry for each of msgs. Called with
// st.mu held.
func (ls *lockedState) addMessageEntries(msgs []transform.Message) {
	for i := range msgs {
		m := msgs[i]
		at := m.Timestamp
		if at == 0 {
			at = nowMillis()
		}
		if m.Role == transform.RoleCustom { // as pi keeps an extension's message
			content, err := m.CustomContentJSON()
			if err != nil {
				continue // no content that the encoder refuses reaches the session
			}
			ls.addEntry(entryJSON{Type: "custom_message", CustomType: m.CustomType, Content: content, Display: m.Display, Details: m.Details}, at)
			continue
		}
		ls.addEntry(entryJSON{Type: "message", Message: &m}, at)
	}
}

// note adds an entry for a change the host made, now. Called with st.mu
// held.
func (ls *lockedState) note(e entryJSON) { ls.addEntry(e, nowMillis()) }

// leafID is the id of the session's newest entry ("" when it has none).
func (s *server) leafID() string {
	all := s.st.allEntries()
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1].ID
}

func (s *server) getEntries(c *call) (any, error) {
	all := s.st.allEntries()
	d := entriesData{Entries: []entryJSON{}}
	if n := len(all); n > 0 {
		d.LeafID = all[n-1].ID
	}
	from := 0
	if c.has("since") {
		since := c.str("since")
		from = -1
		for i, e := range all {
			if e.ID == since {
				from = i + 1
			}
		}
		if from < 0 {
			return nil, fmt.Errorf("Entry not found: %s", since) // pi's words
		}
	}
	d.Entries = append(d.Entries, all[from:]...)
	return d, nil
}

func (s *server) getTree(*call) (any, error) {
	all := s.st.allEntries()
	d := treeData{Tree: []treeNode{}}
	if len(all) == 0 {
		return d, nil
	}
	d.LeafID = all[len(all)-1].ID
	labels := map[string]entryJSON{}
	for _, e := range all {
		if e.Type == "label" {
			labels[e.TargetID] = e
		}
	}
	// pi's tree (SessionManager.getTree): each entry under its parent,
	// children oldest first; an entry whose parent is none of the
	// session's is a root. A session the bridge made is one chain; a pi
	// file may have branches (a fork or tree navigation in pi).
	at := make(map[string]int, len(all))
	for i, e := range all {
		if _, dup := at[e.ID]; !dup {
			at[e.ID] = i
		}
	}
	children := make(map[int][]int, len(all))
	var roots []int
	for i, e := range all {
		p, ok := -1, false
		if e.ParentID != nil && *e.ParentID != e.ID {
			p, ok = at[*e.ParentID]
		}
		if ok && p != i {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	built := make([]bool, len(all)) // an entry is shown once, whatever cycle its file has
	var build func(i int) treeNode
	build = func(i int) treeNode {
		built[i] = true
		n := treeNode{Entry: all[i], Children: []treeNode{}}
		if l, ok := labels[all[i].ID]; ok && l.Label != "" {
			n.Label, n.LabelTimestamp = l.Label, l.Timestamp
		}
		kids := children[i]
		slices.SortStableFunc(kids, func(a, b int) int { return cmp.Compare(entryTime(all[a]), entryTime(all[b])) })
		for _, k := range kids {
			if !built[k] {
				n.Children = append(n.Children, build(k))
			}
		}
		return n
	}
	for _, r := range roots {
		d.Tree = append(d.Tree, build(r))
	}
	return d, nil
}

// entryTime is an entry's timestamp in milliseconds (0 when it has none
// that reads), by which pi orders an entry's children.
func entryTime(e entryJSON) int64 {
	t, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// entryPrompt is what fork needs of a user message entry (an id of
// get_entries' or of a pi file's get_fork_messages).
type entryPrompt struct {
	text string
	// nth is how many user messages with the same text come before it on
	// the session's current branch, so fork can find that prompt in the
	// CLI's transcript, which holds that branch.
	nth int
	// offBranch: the entry is on another branch of the session's pi file
	// than the current one, which the CLI's transcript does not hold;
	// before are then the entries before it (from the first to its
	// parent), copies, as pi builds a fork from them.
	offBranch bool
	before    []entryJSON
}

// pathTo is the indexes of the entries from the first to all[i], by
// parentId, oldest first (pi's branch: SessionManager.getBranch). A
// parent not in all (or a cycle) ends it.
func pathTo(all []entryJSON, i int) []int {
	at := make(map[string]int, len(all))
	for j, e := range all {
		if _, dup := at[e.ID]; !dup {
			at[e.ID] = j
		}
	}
	var rev []int
	seen := map[int]bool{}
	for ok := true; ok && !seen[i]; {
		seen[i] = true
		rev = append(rev, i)
		p := all[i].ParentID
		if p == nil {
			break
		}
		i, ok = at[*p]
	}
	slices.Reverse(rev)
	return rev
}

// entryPromptOf is the user message entry id as fork needs it; ok is false
// when the id is no user message's entry. The current branch is the one
// that ends in the last entry (pi's leaf). Called with st.mu held.
func (ls *lockedState) entryPromptOf(id string) (p entryPrompt, ok bool) {
	all := ls.entries
	at := slices.IndexFunc(all, func(e entryJSON) bool { return e.ID == id })
	if at < 0 || all[at].Type != "message" || all[at].Message == nil || all[at].Message.Role != transform.RoleUser {
		return entryPrompt{}, false
	}
	p.text = all[at].Message.Text()
	branch := pathTo(all, len(all)-1)
	if !slices.Contains(branch, at) {
		p.offBranch = true
		for _, i := range pathTo(all, at) {
			if i != at {
				p.before = append(p.before, all[i])
			}
		}
		return p, true
	}
	for _, i := range branch {
		if i == at {
			break
		}
		if e := all[i]; e.Type == "message" && e.Message != nil && e.Message.Role == transform.RoleUser && e.Message.Text() == p.text {
			p.nth++
		}
	}
	return p, true
}

// userEntries are the user messages of every branch of the session's
// entries that have text, as pi lists them for forking
// (getUserMessagesForForking). Called with st.mu held.
func (ls *lockedState) userEntries() []forkPoint {
	points := []forkPoint{}
	for _, e := range ls.entries {
		if e.Type != "message" || e.Message == nil || e.Message.Role != transform.RoleUser {
			continue
		}
		if t := e.Message.Text(); t != "" {
			points = append(points, forkPoint{EntryID: e.ID, Text: t})
		}
	}
	return points
}
