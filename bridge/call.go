package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// call is one command line from the host, parsed, with its table entry.
type call struct {
	raw  gjson.Result
	id   json.RawMessage // echoed as sent; nil when absent
	typ  string
	line []byte
	def  *commandDef // nil for a command the bridge does not know

	// ctx is the server's context (set by the dispatcher): see Context.
	ctx context.Context

	// reply, set for a call the bridge made itself (an extension's API
	// call: internalCall), takes its response instead of the host.
	reply func(response)

	// done is closed when the call's handler returned; early when its
	// changes to the resources of def.early are made (settle). Calls
	// waiting on it may go. Set by the dispatcher.
	done, early chan struct{}
	settled     bool

	// begun, for a call that may start a run (def.starts), is closed once
	// it has begun: its run is the runner's, or it is answered (begin).
	// before, for a call that overtakes (def.overtakes), holds the
	// starting calls sent before it that had not begun when it was read.
	// Set by the dispatcher.
	begun     chan struct{}
	beginOnce sync.Once
	before    []*call
}

// Context is the call's context: it ends when the bridge shuts down
// (stdin's end, Serve's context), with [errShutdown] as its cause. A
// handler that takes time (a CLI process, reading or writing a session,
// waiting for the host) stops when it ends and answers the cause. Never
// nil: a call the dispatcher did not make has the background context.
func (c *call) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// stopped is the call's failure once its context has ended (the cause,
// prefixed with the command's name); nil until then. Long handlers call
// it between their steps.
func (c *call) stopped() error {
	if err := context.Cause(c.Context()); err != nil {
		return fmt.Errorf("%s: %w", c.typ, err)
	}
	return nil
}

// settle says the call's changes to the resources of def.early are made:
// calls sent after it that touch only those may run while it finishes
// (new_session switches the session at once and answers once the old run
// has ended). Called by the handler's goroutine; idempotent.
func (c *call) settle() {
	if c.early != nil && !c.settled {
		c.settled = true
		close(c.early)
	}
}

// begin says the call has begun (begun): its run is the runner's, or it
// is answered. Safe from any goroutine; idempotent.
func (c *call) begin() {
	if c.begun != nil {
		c.beginOnce.Do(func() { close(c.begun) })
	}
}

// waitBefore waits until the starting calls sent before c have begun, or
// the bridge shuts down.
func (c *call) waitBefore() {
	for _, b := range c.before {
		select {
		case <-b.begun:
		case <-c.Context().Done():
			return
		}
	}
}

// finished closes done (and early, if the handler did not).
func (c *call) finished() {
	c.settle()
	close(c.done)
}

// doneFor is the channel that says the call is done with resource bit.
func (c *call) doneFor(bit res) chan struct{} {
	if c.def.early&bit != 0 {
		return c.early
	}
	return c.done
}

// parseCall parses one line. A line that is not a JSON object, or has no
// string "type", is an error meant for a "parse" response; for an object,
// the call returned with the error holds its id, which the response echoes
// (pi answers an object without a type with its id too).
func parseCall(line []byte) (*call, error) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return &call{}, fmt.Errorf("empty line")
	}
	if !gjson.ValidBytes(line) {
		return &call{}, fmt.Errorf("not valid JSON: %s", excerpt(line))
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return &call{}, fmt.Errorf("a command must be a JSON object, got %s", jsonKind(v))
	}
	c := &call{raw: v, line: line}
	if id := v.Get("id"); id.Exists() {
		// Any JSON value, echoed byte for byte: a number stays a number
		// (open-design sends {"id":1}), null stays null (pi 1.6.0 echoes
		// "id":null too).
		c.id = json.RawMessage(id.Raw)
	}
	t := v.Get("type")
	switch {
	case !t.Exists():
		return c, fmt.Errorf("the command has no \"type\"")
	case t.Type != gjson.String:
		return c, fmt.Errorf("\"type\" must be a string, got %s", jsonKind(t))
	}
	c.typ = t.String()
	return c, nil
}

// fieldKind is the JSON type a request field must have.
type fieldKind int

const (
	fString fieldKind = iota
	fBool
	fArray
	fObject
	fAny // checked by the handler
)

func (k fieldKind) String() string {
	return [...]string{"a string", "a boolean", "an array", "an object", "any value"}[k]
}

// field is one request field of a command, for the dispatcher's checks
// and the reference.
type field struct {
	name     string
	kind     fieldKind
	required bool
	doc      string
}

// check checks the call's fields against its table entry: a required field
// must be there (not null), and a present one must have its kind. Its
// messages are part of what hosts see: one wording for a missing or
// mistyped field, whatever the command.
func (c *call) check() error {
	for _, f := range c.def.fields {
		v := c.raw.Get(gjson.Escape(f.name))
		if !v.Exists() || v.Type == gjson.Null {
			if f.required {
				return fmt.Errorf("%s: missing required field %q", c.typ, f.name)
			}
			continue
		}
		ok := true
		switch f.kind {
		case fString:
			ok = v.Type == gjson.String
		case fBool:
			ok = v.IsBool()
		case fArray:
			ok = v.IsArray()
		case fObject:
			ok = v.IsObject()
		}
		if !ok {
			return fmt.Errorf("%s: field %q must be %s, got %s", c.typ, f.name, f.kind, jsonKind(v))
		}
	}
	return nil
}

// str returns a string field ("" when absent or null); check has made sure
// of its type when the table lists it.
func (c *call) str(field string) string { return c.raw.Get(gjson.Escape(field)).String() }

// has reports whether a field is present and not null.
func (c *call) has(field string) bool {
	v := c.raw.Get(gjson.Escape(field))
	return v.Exists() && v.Type != gjson.Null
}

func jsonKind(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.IsArray():
		return "an array"
	}
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	return "nothing"
}

// excerpt quotes the start of a bad line for an error message.
func excerpt(b []byte) string {
	const n = 80
	if len(b) > n {
		return fmt.Sprintf("%q… (%d bytes)", b[:n], len(b))
	}
	return fmt.Sprintf("%q", b)
}
