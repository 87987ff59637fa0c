package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frame and part are what a generated schema is tested on.
type frame struct {
	Type string `json:"type"`
	// Count is how many things there are.
	Count int             `json:"count"`
	Name  string          `json:"name,omitempty"`
	Parts []part          `json:"parts"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Kind  string          `json:"kind,omitempty" schema:"enum=a|b"`
	Next  *part           `json:"next" schema:"nullable"`
	Tags  map[string]int  `json:"tags,omitempty"`
}

// part is one piece.
type part struct {
	Text string `json:"text"`
	Skip string `json:"-"`
}

func testDoc(t *testing.T) *Schema {
	t.Helper()
	docs, err := ParseDocs(map[string]string{"github.com/claude-rpc/claude-rpc/bridge/schema": "."})
	require.NoError(t, err)
	g := NewGenerator(docs)
	f := g.Object(reflect.TypeFor[frame]())
	f.Properties["type"] = &Schema{Const: ConstOf("frame")}
	other := &Schema{Type: "object", Closed: true, Required: []string{"type"},
		Properties: map[string]*Schema{"type": {Const: ConstOf("other")}, "n": {Type: "integer"}}}
	g.Defs["frame"], g.Defs["other"] = f, other
	require.NoError(t, g.Err())
	return &Schema{OneOf: []*Schema{RefTo("frame"), RefTo("other")}, Defs: g.Defs}
}

func TestGenerate(t *testing.T) {
	doc := testDoc(t)
	f := doc.Defs["frame"]
	assert.Equal(t, []string{"type", "count", "parts", "next"}, f.Required, "omitempty fields are optional")
	assert.True(t, f.Closed)
	assert.Equal(t, "How many things there are.", f.Properties["count"].Description)
	assert.Equal(t, "integer", f.Properties["count"].Type)
	assert.Equal(t, "#/$defs/Part", f.Properties["parts"].Items.Ref)
	assert.Equal(t, "One piece.", doc.Defs["Part"].Description)
	assert.NotContains(t, doc.Defs["Part"].Properties, "Skip")
	assert.Equal(t, &Schema{}, f.Properties["raw"], "raw JSON is anything")
	assert.Len(t, f.Properties["next"].OneOf, 2)
	assert.Equal(t, "integer", f.Properties["tags"].Additional.Type)

	// The document survives a round trip through its JSON.
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	var back Schema
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, back.Defs["frame"].Closed)
	assert.Equal(t, "integer", back.Defs["frame"].Properties["tags"].Additional.Type)
	b2, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(b2))
}

func TestGenerateRefusesSelfEncodingTypes(t *testing.T) {
	g := NewGenerator(Docs{})
	g.Of(reflect.TypeFor[struct{ T selfEncoding }]())
	assert.ErrorContains(t, g.Err(), "encodes itself")
	g = NewGenerator(Docs{})
	g.Custom[reflect.TypeFor[selfEncoding]()] = &Schema{Type: "string"}
	g.Of(reflect.TypeFor[struct{ T selfEncoding }]())
	assert.NoError(t, g.Err())
}

type selfEncoding struct{}

func (selfEncoding) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

func TestValidate(t *testing.T) {
	doc := testDoc(t)
	for _, tc := range []struct {
		name, json string
		want       []string // substrings, one per problem; none: valid
	}{
		{"valid", `{"type":"frame","count":1,"parts":[{"text":"a"}],"next":null}`, nil},
		{"valid with optional fields", `{"type":"frame","count":1,"parts":[],"next":{"text":"b"},"name":"n","raw":[1,{"x":2}],"kind":"b","tags":{"a":1}}`, nil},
		{"the other kind", `{"type":"other","n":3}`, nil},
		{"missing field", `{"type":"frame","parts":[],"next":null}`, []string{`$: missing required property "count"`}},
		{"extra field", `{"type":"frame","count":1,"parts":[],"next":null,"new":1}`, []string{`$: property "new" is not in the reference`}},
		{"wrong type", `{"type":"frame","count":"1","parts":[],"next":null}`, []string{`$.count: want integer, got "1"`}},
		{"not an integer", `{"type":"frame","count":1.5,"parts":[],"next":null}`, []string{`$.count: want integer, got number 1.5`}},
		{"deep", `{"type":"frame","count":1,"parts":[{"text":"a"},{"txt":"b"}],"next":null}`,
			[]string{`$.parts[1]: missing required property "text"`, `$.parts[1]: property "txt" is not in the reference`}},
		{"enum", `{"type":"frame","count":1,"parts":[],"next":null,"kind":"c"}`, []string{`$.kind: want one of "a", "b", got "c"`}},
		{"null where not allowed", `{"type":"frame","count":1,"parts":null,"next":null}`, []string{`$.parts: want array, got null`}},
		{"nullable, wrong", `{"type":"frame","count":1,"parts":[],"next":3}`, []string{`$.next: number 3 is none of the kinds in the reference (null; object)`}},
		{"map values", `{"type":"frame","count":1,"parts":[],"next":null,"tags":{"a":"x"}}`, []string{`$.tags.a: want integer`}},
		{"unknown kind", `{"type":"mystery"}`, []string{`$: an object with type "mystery" is none of the kinds in the reference (type="frame"; type="other")`}},
		{"not an object", `[1]`, []string{`$: an array of 1 is none of the kinds`}},
		{"not JSON", `{`, []string{"not JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateJSON(doc, []byte(tc.json))
			require.Len(t, got, len(tc.want), "problems: %q", got)
			for i, w := range tc.want {
				assert.True(t, strings.HasPrefix(got[i], w) || strings.Contains(got[i], w), "problem %d: %q does not say %q", i, got[i], w)
			}
		})
	}
}

func TestValidateBadRef(t *testing.T) {
	got := Validate(&Schema{Ref: "#/$defs/nothing"}, map[string]any{})
	assert.Equal(t, []string{`$: $ref "#/$defs/nothing" names no definition`}, got)
}

func TestMarkdown(t *testing.T) {
	doc := testDoc(t)
	doc.Title = "T"
	doc.Defs["frame"].Unfilled = map[string]string{"gone": "because"}
	doc.NotEmitted = map[string]string{"ghost": "never"}
	md := Markdown(doc, "intro", []Group{{Prefix: "fr", Heading: "Frames"}})
	for _, want := range []string{
		"# T\n\nintro\n\n## Frames\n", `### <a id="frame"></a>ame`,
		"| `count` | integer | always | How many things there are. |",
		"| `parts` | [Part](#part)[] | always |  |",
		"| `next` | [Part](#part) or null | always |  |",
		"| `kind` | `\"a\"` \\| `\"b\"` | optional |  |",
		"- `gone`: because", "## Types\n", "### <a id=\"other\"></a>other", "- `ghost`: never",
	} {
		assert.Contains(t, md, want)
	}
}
