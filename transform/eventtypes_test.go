package transform

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventConsts are the package's event types: the string constants named
// Event…, read from its source so that a new one cannot be left out.
func eventConsts(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	consts := map[string]string{}
	for _, f := range pkgs["transform"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Event") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						consts[n.Name] = v
					}
				}
			}
		}
	}
	require.NotEmpty(t, consts)
	return consts
}

// eventOf is an event of type typ with what its encoding reads.
func eventOf(typ string) Event {
	ev := Event{Type: typ, Retry: &Retry{}, DurationMs: -1}
	switch typ {
	case EventSubagentLifecycle, EventSubagentProgress, EventSubagentEvent:
		ev.Subagent = &Subagent{Lifecycle: &SubagentLifecycle{}, Progress: &SubagentProgress{}}
	case eventUIRequest:
		ev.Notice = NotifyEvent(NotifyInfo, "x").Notice
	}
	return ev
}

// TestEveryEventTypeEncodes checks that each event type of the package has
// its encoding in both encoders (TestMain's OnUnknownEvent panics
// otherwise), that both write the same, and that each is in Shapes (the
// protocol reference).
func TestEveryEventTypeEncodes(t *testing.T) {
	shapes := map[string]bool{}
	for _, s := range Shapes() {
		if s.Kind == "event" {
			tag, _, _ := strings.Cut(s.Tag, ".")
			shapes[tag] = true
		}
	}
	for name, typ := range eventConsts(t) {
		t.Run(name, func(t *testing.T) {
			ev := eventOf(typ)
			want, got := refFrame(t, ev), encFrame(t, ev)
			assert.Equal(t, string(want), string(got))
			assert.True(t, bytes.HasPrefix(got, []byte(`{"type":"`+typ+`"`)), "%s", got)
			assert.True(t, shapes[typ], "%s (%s) is not in Shapes", name, typ)
		})
	}
}

// TestUnknownEventTypeIsCaught checks that an event of a type with no
// encoding reaches OnUnknownEvent from both encoders, and that without the
// hook (the binary) it is written as its type alone.
func TestUnknownEventTypeIsCaught(t *testing.T) {
	ev := Event{Type: "no_such_event"}
	msg := `transform: event type "no_such_event" has no encoding (its case in Encoder.event and Event.MarshalJSON)`
	assert.PanicsWithValue(t, msg, func() { _, _ = ev.MarshalJSON() })
	assert.PanicsWithValue(t, msg, func() { _ = NewEncoder(&bytes.Buffer{}).Event(&ev) })

	var seen []string
	b, err := eventWithHook(func(typ string) { seen = append(seen, typ) }, ev)
	require.NoError(t, err)
	assert.Equal(t, `{"type":"no_such_event"}`+"\n"+`{"type":"no_such_event"}`, string(b))
	assert.Equal(t, []string{"no_such_event", "no_such_event"}, seen)
}

// eventWithHook writes ev through MarshalJSON and the Encoder with hook as
// OnUnknownEvent (nil: the binary's), one line each.
func eventWithHook(hook func(string), ev Event) ([]byte, error) {
	old := OnUnknownEvent
	OnUnknownEvent = hook
	defer func() { OnUnknownEvent = old }()
	a, err := ev.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.Event(&ev); err != nil {
		return nil, err
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	return append(append(a, '\n'), bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}
