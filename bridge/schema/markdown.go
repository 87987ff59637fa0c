package schema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Group is a section of [Markdown]: the definitions whose names start
// with Prefix, under Heading, after Intro. When Only is set, each shows
// only that property (e.g. a response's "data"), its fields as a table.
type Group struct {
	Prefix, Heading, Intro, Only string
}

// Markdown renders doc for reading: intro, then one section per group of
// definitions, in the order of doc's oneOf, then the other definitions
// alphabetically, then the frames doc says are never emitted.
func Markdown(doc *Schema, intro string, groups []Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n", doc.Title, intro)
	if doc.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", doc.Description)
	}
	done := map[string]bool{}
	for _, g := range groups {
		fmt.Fprintf(&b, "\n## %s\n", g.Heading)
		if g.Intro != "" {
			fmt.Fprintf(&b, "\n%s\n", g.Intro)
		}
		for _, name := range defOrder(doc) {
			if !strings.HasPrefix(name, g.Prefix) || done[name] {
				continue
			}
			done[name] = true
			if g.Only != "" {
				writeOnly(&b, doc, name, strings.TrimPrefix(name, g.Prefix), g.Only)
				continue
			}
			writeDef(&b, doc, name, strings.TrimPrefix(name, g.Prefix))
		}
	}
	var rest []string
	for _, name := range slices.Sorted(maps.Keys(doc.Defs)) {
		if !done[name] {
			rest = append(rest, name)
		}
	}
	if len(rest) > 0 {
		b.WriteString("\n## Types\n")
		for _, name := range rest {
			writeDef(&b, doc, name, name)
		}
	}
	if len(doc.NotEmitted) > 0 {
		b.WriteString("\n## What pi sends and claude-rpc does not\n\n")
		for _, k := range slices.Sorted(maps.Keys(doc.NotEmitted)) {
			fmt.Fprintf(&b, "- `%s`: %s\n", k, doc.NotEmitted[k])
		}
	}
	return b.String()
}

// defOrder lists the definitions doc's oneOf refers to, in its order, then
// the others alphabetically.
func defOrder(doc *Schema) []string {
	var names []string
	seen := map[string]bool{}
	for _, v := range doc.OneOf {
		if n, ok := strings.CutPrefix(v.Ref, "#/$defs/"); ok && !seen[n] {
			names = append(names, n)
			seen[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(doc.Defs)) {
		if !seen[n] {
			names = append(names, n)
		}
	}
	return names
}

// writeOnly writes a definition showing only its property prop.
func writeOnly(b *strings.Builder, doc *Schema, name, heading, prop string) {
	s := doc.Defs[name]
	fmt.Fprintf(b, "\n### <a id=\"%s\"></a>%s\n", anchor(name), heading)
	if s.Description != "" {
		fmt.Fprintf(b, "\n%s\n", s.Description)
	}
	p, ok := s.Properties[prop]
	switch {
	case !ok:
		fmt.Fprintf(b, "\nNo `%s`.\n", prop)
	case p.Type == "object" && len(p.Properties) > 0:
		fmt.Fprintf(b, "\n`%s` (%s):\n", prop, presence(s, prop))
		writeFields(b, p)
	default:
		fmt.Fprintf(b, "\n`%s` (%s): %s\n", prop, presence(s, prop), typeName(p))
	}
	writeUnfilled(b, s)
}

func presence(s *Schema, prop string) string {
	if slices.Contains(s.Required, prop) {
		return "always"
	}
	return "optional"
}

func writeFields(b *strings.Builder, s *Schema) {
	b.WriteString("\n| field | type | | description |\n| --- | --- | --- | --- |\n")
	for _, k := range fieldOrder(s) {
		p := s.Properties[k]
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", k, typeName(p), presence(s, k), cell(p.Description))
	}
}

func writeUnfilled(b *strings.Builder, s *Schema) {
	if len(s.Unfilled) > 0 {
		b.WriteString("\nNot filled:\n\n")
		for _, k := range slices.Sorted(maps.Keys(s.Unfilled)) {
			fmt.Fprintf(b, "- `%s`: %s\n", k, s.Unfilled[k])
		}
	}
}

func writeDef(b *strings.Builder, doc *Schema, name, heading string) {
	s := doc.Defs[name]
	fmt.Fprintf(b, "\n### <a id=\"%s\"></a>%s\n", anchor(name), heading)
	if s.Description != "" {
		fmt.Fprintf(b, "\n%s\n", s.Description)
	}
	switch {
	case len(s.OneOf) > 0:
		b.WriteString("\nOne of:\n\n")
		for _, v := range s.OneOf {
			fmt.Fprintf(b, "- %s\n", typeName(v))
		}
	case s.Type == "object" && len(s.Properties) > 0:
		writeFields(b, s)
	default:
		fmt.Fprintf(b, "\n%s\n", typeName(s))
	}
	writeUnfilled(b, s)
}

// fieldOrder lists required fields first (in declaration order, as
// Required keeps it), then the optional ones alphabetically.
func fieldOrder(s *Schema) []string {
	out := slices.Clone(s.Required)
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func typeName(s *Schema) string {
	switch {
	case s.Ref != "":
		n := strings.TrimPrefix(s.Ref, "#/$defs/")
		return fmt.Sprintf("[%s](#%s)", n, anchor(n))
	case len(s.Const) > 0:
		return "`" + string(s.Const) + "`"
	case len(s.Enum) > 0:
		parts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			parts[i] = "`" + string(e) + "`"
		}
		return strings.Join(parts, " \\| ")
	case len(s.OneOf) > 0:
		parts := make([]string, len(s.OneOf))
		for i, v := range s.OneOf {
			parts[i] = typeName(v)
		}
		return strings.Join(parts, " or ")
	case s.Type == "array" && s.Items != nil:
		return typeName(s.Items) + "[]"
	case s.Type == "object" && s.Additional != nil:
		return "map of " + typeName(s.Additional)
	case s.Type == "object" && len(s.Properties) > 0:
		keys := fieldOrder(s)
		return "{" + strings.Join(keys, ", ") + "}"
	case s.Type != "":
		return s.Type
	}
	return "any JSON"
}

func anchor(name string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(strings.ToLower(name))
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
