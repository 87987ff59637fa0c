package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ValidateJSON checks one JSON text against doc (a schema whose $refs point
// into its own $defs) and returns what does not match, one problem a line
// with the path to it; none when it matches.
func ValidateJSON(doc *Schema, b []byte) []string {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	return Validate(doc, v)
}

// Validate checks v, as decoded by encoding/json (numbers as float64 or,
// better, json.Number), against doc.
func Validate(doc *Schema, v any) []string {
	c := checker{root: doc}
	c.check(doc, v, "$")
	return c.errs
}

type checker struct {
	root *Schema
	errs []string
}

func (c *checker) fail(path, format string, args ...any) {
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

// deref returns the definition a $ref names.
func (c *checker) deref(s *Schema) (*Schema, error) {
	for seen := 0; s.Ref != ""; seen++ {
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		d := c.root.Defs[name]
		if !ok || d == nil {
			return nil, fmt.Errorf("$ref %q names no definition", s.Ref)
		}
		if seen > 32 {
			return nil, fmt.Errorf("$ref %q: a cycle of references", s.Ref)
		}
		s = d
	}
	return s, nil
}

func (c *checker) check(s *Schema, v any, path string) {
	if s.Ref != "" {
		d, err := c.deref(s)
		if err != nil {
			c.fail(path, "%v", err)
			return
		}
		c.check(d, v, path)
	}
	if s.Type != "" && !hasType(v, s.Type) {
		c.fail(path, "want %s, got %s", s.Type, describe(v))
		return
	}
	if len(s.Const) > 0 && !equalJSON(s.Const, v) {
		c.fail(path, "want %s, got %s", s.Const, describe(v))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e json.RawMessage) bool { return equalJSON(e, v) }) {
		c.fail(path, "want one of %s, got %s", joinRaw(s.Enum), describe(v))
	}
	if obj, ok := v.(map[string]any); ok {
		c.object(s, obj, path)
	}
	if arr, ok := v.([]any); ok && s.Items != nil {
		for i, e := range arr {
			c.check(s.Items, e, fmt.Sprintf("%s[%d]", path, i))
		}
	}
	if len(s.OneOf) > 0 {
		c.oneOf(s.OneOf, v, path)
	}
}

func (c *checker) object(s *Schema, obj map[string]any, path string) {
	for _, r := range s.Required {
		if _, ok := obj[r]; !ok {
			c.fail(path, "missing required property %q", r)
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "." + k
		switch ps, ok := s.Properties[k]; {
		case ok:
			c.check(ps, obj[k], p)
		case s.Additional != nil:
			c.check(s.Additional, obj[k], p)
		case s.Closed:
			c.fail(path, "property %q is not in the reference", k)
		}
	}
}

// oneOf accepts v when exactly one variant matches. Variants whose const
// properties (a "type", a "command") disagree with v are not candidates,
// so that when only one is left its own problems are reported, not a
// list of every variant's.
func (c *checker) oneOf(variants []*Schema, v any, path string) {
	var candidates []*Schema
	var tags []string
	for _, vs := range variants {
		d, err := c.deref(vs)
		if err != nil {
			c.fail(path, "%v", err)
			return
		}
		tags = append(tags, discriminators(d))
		if matchesConsts(d, v) {
			candidates = append(candidates, vs)
		}
	}
	var matched int
	var only []string
	for _, vs := range candidates {
		sub := checker{root: c.root}
		sub.check(vs, v, path)
		if len(sub.errs) == 0 {
			matched++
		}
		only = sub.errs
	}
	switch {
	case matched == 1:
	case matched > 1:
		c.fail(path, "matches %d variants of a oneOf, want exactly one", matched)
	case len(candidates) == 1:
		c.errs = append(c.errs, only...)
	case len(candidates) == 0:
		c.fail(path, "%s is none of the kinds in the reference (%s)", describe(v), strings.Join(slices.Compact(slices.Sorted(slices.Values(tags))), "; "))
	default:
		c.fail(path, "%s matches none of %d variants", describe(v), len(candidates))
	}
}

// discriminators describes a variant by its const properties.
func discriminators(s *Schema) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if p := s.Properties[k]; len(p.Const) > 0 {
			parts = append(parts, k+"="+string(p.Const))
		}
	}
	if len(parts) == 0 {
		return s.Type
	}
	return strings.Join(parts, ",")
}

// matchesConsts reports whether v has every const property of s.
func matchesConsts(s *Schema, v any) bool {
	obj, isObj := v.(map[string]any)
	for k, p := range s.Properties {
		if len(p.Const) == 0 {
			continue
		}
		if !isObj {
			return false
		}
		if got, ok := obj[k]; !ok || !equalJSON(p.Const, got) {
			return false
		}
	}
	if s.Type != "" && !hasType(v, s.Type) {
		return false
	}
	return true
}

func hasType(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		switch v.(type) {
		case json.Number, float64:
			return true
		}
	case "integer":
		switch n := v.(type) {
		case json.Number:
			if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return true
			}
			f, err := n.Float64()
			return err == nil && f == float64(int64(f))
		case float64:
			return n == float64(int64(n))
		}
	}
	return false
}

// equalJSON compares a JSON text with a decoded value.
func equalJSON(raw json.RawMessage, v any) bool {
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		return false
	}
	return reflect.DeepEqual(normalize(want), normalize(v))
}

// normalize turns json.Numbers into float64 so both decodings compare.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = normalize(e)
		}
		return a
	}
	return v
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		return "number " + string(x)
	case float64:
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case map[string]any:
		for _, k := range []string{"type", "role", "command", "method"} {
			if t, ok := x[k].(string); ok {
				return fmt.Sprintf("an object with %s %q", k, t)
			}
		}
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func joinRaw(rs []json.RawMessage) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, ", ")
}
