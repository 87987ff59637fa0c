// Package schema is the small part of JSON Schema (draft 2020-12) that
// claude-rpc's protocol reference needs: [Generator] derives schemas from
// Go types and their doc comments, [Validate] checks a JSON value against
// one, and [Markdown] renders a document for reading.
//
// The subset: type (one name, or "null" through oneOf), const, enum,
// properties, required, additionalProperties (false or a schema), items,
// oneOf, $ref to "#/$defs/…", $defs, title and description, plus the
// extension keywords x-unfilled and x-not-emitted, which carry prose.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Schema is one JSON Schema, or a document holding others in Defs.
type Schema struct {
	Schema      string `json:"$schema,omitempty"`
	ID          string `json:"$id,omitempty"`
	Ref         string `json:"$ref,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
	// Const is the JSON of the only value allowed.
	Const      json.RawMessage    `json:"const,omitempty"`
	Enum       []json.RawMessage  `json:"enum,omitempty"`
	Properties map[string]*Schema `json:"properties,omitempty"`
	Required   []string           `json:"required,omitempty"`
	// Closed is additionalProperties: false; Additional is
	// additionalProperties as a schema. Neither: anything goes.
	Closed     bool      `json:"-"`
	Additional *Schema   `json:"-"`
	Items      *Schema   `json:"items,omitempty"`
	OneOf      []*Schema `json:"oneOf,omitempty"`
	// Unfilled names the fields pi's protocol has here that claude-rpc
	// does not write, and says why (x-unfilled).
	Unfilled map[string]string `json:"x-unfilled,omitempty"`
	// NotEmitted names frames of pi's protocol claude-rpc never writes,
	// and says why (x-not-emitted).
	NotEmitted map[string]string  `json:"x-not-emitted,omitempty"`
	Defs       map[string]*Schema `json:"$defs,omitempty"`
}

type schemaAlias Schema // Schema without its methods

// MarshalJSON writes additionalProperties from Closed and Additional.
func (s *Schema) MarshalJSON() ([]byte, error) {
	v := struct {
		*schemaAlias
		AdditionalProperties any `json:"additionalProperties,omitempty"`
	}{schemaAlias: (*schemaAlias)(s)}
	switch {
	case s.Additional != nil:
		v.AdditionalProperties = s.Additional
	case s.Closed:
		v.AdditionalProperties = false
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads additionalProperties into Closed and Additional.
func (s *Schema) UnmarshalJSON(b []byte) error {
	v := struct {
		*schemaAlias
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}{schemaAlias: (*schemaAlias)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch ap := bytes.TrimSpace(v.AdditionalProperties); {
	case len(ap) == 0, string(ap) == "true":
	case string(ap) == "false":
		s.Closed = true
	default:
		s.Additional = new(Schema)
		return json.Unmarshal(ap, s.Additional)
	}
	return nil
}

// ConstOf returns the JSON of v for Const and Enum.
func ConstOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("schema: a constant that does not encode: " + err.Error())
	}
	return b
}

// RefTo returns a schema that refers to the definition name.
func RefTo(name string) *Schema { return &Schema{Ref: "#/$defs/" + name} }

// Generator derives schemas from Go types. Named struct types become
// definitions in Defs, referred to by $ref; their descriptions are their
// doc comments (from [Docs]). A struct field's schema follows its json tag
// (omitempty makes it optional, every other field is required) and its
// `schema` tag: "ref=Name" gives the definition to use instead of the Go
// type's, "enum=a|b" the strings allowed, "nullable" allows null as well. A Generator is not safe for
// concurrent use.
type Generator struct {
	// Defs are the definitions made so far, by name.
	Defs map[string]*Schema
	// Names renames types' definitions (default: the Go name, capitalized).
	Names map[reflect.Type]string
	// Docs are the doc comments of types and fields; Used gets those the
	// schemas made so far use.
	Docs, Used Docs
	// Custom are the schemas of types that encode themselves (a
	// json.Marshaler), by type; a Marshaler not listed is an error, as its
	// fields do not tell its shape.
	Custom map[reflect.Type]*Schema

	errs []string
}

// NewGenerator returns a generator using docs.
func NewGenerator(docs Docs) *Generator {
	return &Generator{Defs: map[string]*Schema{}, Names: map[reflect.Type]string{}, Docs: docs, Used: Docs{},
		Custom: map[reflect.Type]*Schema{}}
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
)

// Err reports the types the generator could not describe.
func (g *Generator) Err() error {
	if len(g.errs) == 0 {
		return nil
	}
	return fmt.Errorf("schema: %s", strings.Join(g.errs, "; "))
}

// Of returns the schema of t: a $ref for a named struct (defining it on
// first use), else the schema itself.
func (g *Generator) Of(t reflect.Type) *Schema {
	if s, ok := g.Custom[t]; ok {
		return s
	}
	switch {
	case t == rawMessageType:
		return &Schema{} // any JSON value
	case t.Kind() == reflect.Pointer:
		return g.Of(t.Elem())
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		g.errs = append(g.errs, fmt.Sprintf("%v encodes itself: give its schema in Custom", t))
		return &Schema{}
	}
	switch t.Kind() {
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Slice, reflect.Array:
		return &Schema{Type: "array", Items: g.Of(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			g.errs = append(g.errs, fmt.Sprintf("%v: map keys must be strings", t))
		}
		return &Schema{Type: "object", Additional: g.Of(t.Elem())}
	case reflect.Interface:
		return &Schema{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.Object(t)
		}
		name := g.Name(t)
		if _, ok := g.Defs[name]; !ok {
			g.Defs[name] = nil // reserved: a recursive type refers to itself
			g.Defs[name] = g.Object(t)
		}
		return RefTo(name)
	}
	g.errs = append(g.errs, fmt.Sprintf("%v: no JSON Schema for kind %v", t, t.Kind()))
	return &Schema{}
}

// Name is the definition name of a named type.
func (g *Generator) Name(t reflect.Type) string {
	if n, ok := g.Names[t]; ok {
		return n
	}
	r, size := utf8.DecodeRuneInString(t.Name())
	return string(unicode.ToUpper(r)) + t.Name()[size:]
}

// Object returns the schema of struct type t itself (never a $ref): a
// closed object whose properties are its fields.
func (g *Generator) Object(t reflect.Type) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, Closed: true, Description: g.doc(t, "")}
	g.fields(t, s)
	return s
}

func (g *Generator) fields(t reflect.Type, s *Schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, s) // embedded: its fields are the outer struct's
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		var fs *Schema
		nullable := false
		for _, o := range strings.Split(f.Tag.Get("schema"), ",") {
			switch {
			case strings.HasPrefix(o, "ref="):
				fs = RefTo(strings.TrimPrefix(o, "ref="))
				if f.Type.Kind() == reflect.Slice && f.Type != rawMessageType {
					fs = &Schema{Type: "array", Items: fs}
				}
			case strings.HasPrefix(o, "enum="):
				fs = &Schema{Type: "string"}
				for _, v := range strings.Split(strings.TrimPrefix(o, "enum="), "|") {
					fs.Enum = append(fs.Enum, ConstOf(v))
				}
			case o == "nullable":
				nullable = true
			case o != "":
				g.errs = append(g.errs, fmt.Sprintf("%v.%s: unknown schema tag option %q", t, f.Name, o))
			}
		}
		if fs == nil {
			fs = g.Of(f.Type)
		}
		if nullable {
			fs = &Schema{OneOf: []*Schema{fs, {Type: "null"}}}
		}
		if d := g.doc(t, f.Name); d != "" {
			// A copy: fs may be shared (Custom). Next to a $ref, a
			// description is allowed since 2020-12.
			c := *fs
			c.Description = d
			fs = &c
		}
		s.Properties[name] = fs
		if !strings.Contains(","+opts+",", ",omitempty,") {
			s.Required = append(s.Required, name)
		}
	}
}

// Docs are doc comments of Go types and their fields, keyed by
// "importpath.Type" and "importpath.Type.Field".
type Docs map[string]string

// doc returns the description of type t (field "") or of its field, and
// notes the comment in Used.
func (g *Generator) doc(t reflect.Type, field string) string {
	key, name := t.PkgPath()+"."+t.Name(), t.Name()
	if field != "" {
		key, name = key+"."+field, field
	}
	text := g.Docs[key]
	if text != "" {
		g.Used[key] = text
	}
	return trimSubject(text, name)
}

// trimSubject drops "name is" or "name are" from the start of a doc
// comment, and capitalizes what follows unless it starts with an
// identifier ("pi's", "get_state's", "claude-rpc's").
func trimSubject(text, name string) string {
	for _, verb := range []string{" is ", " are "} {
		rest, ok := strings.CutPrefix(text, name+verb)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, " ")
		if strings.ContainsAny(first, "'_-") || first == "pi" {
			return rest
		}
		r, size := utf8.DecodeRuneInString(rest)
		return string(unicode.ToUpper(r)) + rest[size:]
	}
	return text
}

// ParseDocs reads the doc comments of the types declared in the Go files
// (tests included) of each folder, keyed by the folder's import path.
func ParseDocs(dirs map[string]string) (Docs, error) {
	d := Docs{}
	fset := token.NewFileSet()
	for importPath, dir := range dirs {
		pkgs, err := parser.ParseDir(fset, dir, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, decl := range f.Decls {
					gd, ok := decl.(*ast.GenDecl)
					if !ok || gd.Tok != token.TYPE {
						continue
					}
					for _, spec := range gd.Specs {
						ts := spec.(*ast.TypeSpec)
						cg := ts.Doc
						if cg == nil && len(gd.Specs) == 1 {
							cg = gd.Doc
						}
						key := importPath + "." + ts.Name.Name
						d[key] = paragraph(cg)
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								text := paragraph(fl.Doc)
								if text == "" {
									text = paragraph(fl.Comment)
								}
								for _, n := range fl.Names {
									d[key+"."+n.Name] = text
								}
							}
						}
					}
				}
			}
		}
	}
	return d, nil
}

// paragraph is a comment's text on one line.
func paragraph(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	return strings.Join(strings.Fields(cg.Text()), " ")
}
