package cliproto

import (
	"regexp"
	"strings"
)

// dts is a TypeScript declaration file (.d.ts), read only as far as the
// inventory needs: its type aliases and interfaces by name, and the
// string literals a member of an object type may take. It is no
// TypeScript parser: it knows unions, intersections, object literals,
// interfaces with extends, and names qualified by a namespace
// (coreTypes.SDKMessage), which is what the Agent SDK's sdk.d.ts and the
// Anthropic SDK's messages.d.ts use for the types the inventory reads.
type dts struct {
	aliases    map[string]string // type name → its right-hand side
	interfaces map[string]iface
}

type iface struct {
	body    string // between the braces
	extends []string
}

var (
	aliasDecl     = regexp.MustCompile(`(?m)^[ \t]*(?:export )?(?:declare )?type ([A-Za-z_$][\w$]*)(?:<[^=\n]*>)?\s*=\s*`)
	interfaceDecl = regexp.MustCompile(`(?m)^[ \t]*(?:export )?(?:declare )?interface ([A-Za-z_$][\w$]*)(?:<[^{\n]*>)?(?:\s+extends\s+([^{]+))?\s*\{`)
	memberDecl    = regexp.MustCompile(`(?s)^(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*:\s*(.*)$`)
	stringLiteral = regexp.MustCompile(`^'([^'\\]*)'$|^"([^"\\]*)"$`)
	typeName      = regexp.MustCompile(`^(?:[A-Za-z_$][\w$]*\.)*([A-Za-z_$][\w$]*)(?:<.*>)?$`)
)

// parseDTS reads the declarations of src.
func parseDTS(src string) *dts {
	src = stripComments(src)
	d := &dts{aliases: map[string]string{}, interfaces: map[string]iface{}}
	for _, m := range aliasDecl.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		end := scanTo(src, m[1], ';')
		d.aliases[name] = strings.TrimSpace(src[m[1]:end])
	}
	for _, m := range interfaceDecl.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		open := m[1] - 1
		end := scanTo(src, open+1, '}')
		var ext []string
		if m[4] >= 0 {
			for _, e := range splitTop(src[m[4]:m[5]], ',') {
				ext = append(ext, strings.TrimSpace(e))
			}
		}
		d.interfaces[name] = iface{body: src[open+1 : end], extends: ext}
	}
	return d
}

// stripComments drops /* */ comments and // comments that begin a line
// (a // inside a string literal type, as in a URL, stays).
func stripComments(src string) string {
	var b strings.Builder
	for len(src) > 0 {
		i := strings.Index(src, "/*")
		if i < 0 {
			b.WriteString(src)
			break
		}
		b.WriteString(src[:i])
		j := strings.Index(src[i+2:], "*/")
		if j < 0 {
			break
		}
		src = src[i+2+j+2:]
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "//") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// scanTo returns the index in src, from i on, of the first stop byte
// outside brackets and string literals (len(src) when there is none).
func scanTo(src string, i int, stop byte) int {
	depth := 0
	for ; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipString(src, i)
		case depth == 0 && c == stop:
			return i
		case c == '{' || c == '(' || c == '[' || c == '<':
			depth++
		case c == '}' || c == ')' || c == ']' || c == '>' && (i == 0 || src[i-1] != '='):
			depth--
		}
	}
	return len(src)
}

// skipString returns the index of the quote that closes the string
// literal opening at src[i].
func skipString(src string, i int) int {
	q := src[i]
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return len(src)
}

// splitTop splits s at each sep outside brackets and string literals.
func splitTop(s string, sep byte) []string {
	var parts []string
	for {
		i := scanTo(s, 0, sep)
		parts = append(parts, s[:i])
		if i >= len(s) {
			return parts
		}
		s = s[i+1:]
	}
}

// objects returns the bodies of the object types the type expression
// expr stands for: each member of a union, each part of an intersection
// joined into one body, a named type resolved (seen guards against
// cycles).
func (d *dts) objects(expr string, seen map[string]bool) []string {
	expr = strings.TrimSpace(expr)
	if alts := splitTop(expr, '|'); len(alts) > 1 {
		var out []string
		for _, a := range alts {
			out = append(out, d.objects(a, seen)...)
		}
		return out
	}
	if parts := splitTop(expr, '&'); len(parts) > 1 {
		var body strings.Builder
		for _, p := range parts {
			for _, o := range d.objects(p, seen) {
				body.WriteString(o)
				body.WriteString(";")
			}
		}
		return []string{body.String()}
	}
	if strings.HasPrefix(expr, "(") && strings.HasSuffix(expr, ")") {
		return d.objects(expr[1:len(expr)-1], seen)
	}
	if strings.HasPrefix(expr, "{") && strings.HasSuffix(expr, "}") {
		return []string{expr[1 : len(expr)-1]}
	}
	m := typeName.FindStringSubmatch(expr)
	if m == nil || seen[m[1]] {
		return nil
	}
	name := m[1]
	seen[name] = true
	defer delete(seen, name)
	if rhs, ok := d.aliases[name]; ok {
		return d.objects(rhs, seen)
	}
	if in, ok := d.interfaces[name]; ok {
		body := in.body
		for _, e := range in.extends {
			for _, o := range d.objects(e, seen) {
				body += ";" + o
			}
		}
		return []string{body}
	}
	return nil
}

// member returns the type expression of member key of an object body, ""
// when it has none.
func member(body, key string) string {
	for _, part := range splitTop(body, ';') {
		for _, line := range splitTop(part, '\n') {
			m := memberDecl.FindStringSubmatch(strings.TrimSpace(line))
			if m != nil && m[1] == key {
				return strings.TrimSpace(m[2])
			}
		}
	}
	return ""
}

// literals returns the string literals of a type expression ('a' | 'b'),
// the named types it refers to resolved.
func (d *dts) literals(expr string, seen map[string]bool) []string {
	var out []string
	for _, a := range splitTop(expr, '|') {
		a = strings.TrimSpace(a)
		if m := stringLiteral.FindStringSubmatch(a); m != nil {
			out = append(out, m[1]+m[2])
			continue
		}
		if m := typeName.FindStringSubmatch(a); m != nil && !seen[m[1]] {
			if rhs, ok := d.aliases[m[1]]; ok {
				seen[m[1]] = true
				out = append(out, d.literals(rhs, seen)...)
				delete(seen, m[1])
			}
		}
	}
	return out
}

// values returns the string literals member key takes in the object types
// expr stands for, in order, each once; where is the objects' other
// member that must take the literal want ("" for every object).
func (d *dts) values(expr, key, where, want string) []string {
	var out []string
	seen := map[string]bool{}
	for _, body := range d.objects(expr, map[string]bool{}) {
		if where != "" && !contains(d.literals(member(body, where), map[string]bool{}), want) {
			continue
		}
		for _, v := range d.literals(member(body, key), map[string]bool{}) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
