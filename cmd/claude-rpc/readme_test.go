package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeLinks: every link of the README and CONTRIBUTING to a section
// of the page names a heading it has, and every link to a file of the
// repository names one that exists (a merge once dropped half the README's
// sections, and the contents' links pointed at nothing).
func TestReadmeLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range []string{"README.md", "CONTRIBUTING.md", "docs/performance.md"} {
		t.Run(page, func(t *testing.T) {
			path := filepath.Join("..", "..", page)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			anchors := headingAnchors(string(b))
			for _, m := range link.FindAllStringSubmatch(string(b), -1) {
				target := m[1]
				switch {
				case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "mailto:"):
				case strings.HasPrefix(target, "#"):
					assert.True(t, anchors[target[1:]], "%s links to %s, a section it does not have", page, target)
				default:
					file, _, _ := strings.Cut(target, "#")
					_, err := os.Stat(filepath.Join(filepath.Dir(path), file))
					assert.NoError(t, err, "%s links to %s", page, target)
				}
			}
		})
	}
}

// headingAnchors are the anchors GitHub gives a page's headings (lower
// case, punctuation but - and _ dropped, spaces as -) and those it names
// itself (<a id="…">).
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([^"]+)">`).FindAllStringSubmatch(page, -1) {
		out[m[1]] = true
	}
	inCode := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				a.WriteRune(r)
			}
		}
		out[a.String()] = true
	}
	return out
}
