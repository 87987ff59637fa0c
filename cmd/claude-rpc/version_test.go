package main

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(rev, when, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, tc := range []struct {
		name    string
		version string
		bi      *debug.BuildInfo
		want    string
	}{
		{"go install …@v1.2.3: a tag, no VCS stamp", "v1.2.3", &debug.BuildInfo{GoVersion: "go1.26.8"},
			"claude-rpc v1.2.3 (go1.26.8, " + platform + ")"},
		{"go install …@latest between tags: the pseudo-version's commit", "v0.0.0-20260901120000-0123456789ab", &debug.BuildInfo{GoVersion: "go1.26.8"},
			"claude-rpc v0.0.0-20260901120000-0123456789ab (commit 0123456789ab, go1.26.8, " + platform + ")"},
		{"a build in a clone with changes", "devel", vcs("fedcba9876543210fedcba9876543210fedcba98", "2026-09-01T12:00:00Z", "true"),
			"claude-rpc devel (commit fedcba987654 2026-09-01T12:00:00Z (modified), go1.26.8, " + platform + ")"},
		{"a tagged build in a clone", "v1.2.3+dirty", vcs("fedcba9876543210fedcba9876543210fedcba98", "2026-09-01T12:00:00Z", "false"),
			"claude-rpc v1.2.3+dirty (commit fedcba987654 2026-09-01T12:00:00Z, go1.26.8, " + platform + ")"},
		{"no build info", "devel", nil, "claude-rpc devel (" + runtime.Version() + ", " + platform + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, formatVersion(tc.version, tc.bi))
		})
	}
}

// TestPiVersionLine: --version's stdout passes what each host that reads
// `pi --version` checks (README, --version): a semver (pi-web compares it
// with npm's latest), whose first x.y.z is pi's version (T3 Code's
// parseGenericCliVersion, gated on ≥ 0.80.5), the whole line x.y.z with
// an optional -/+ tail (pi-acp's isSemver); claude-rpc's own version is
// its build metadata.
func TestPiVersionLine(t *testing.T) {
	semver := regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	t3 := regexp.MustCompile(`\b(\d+\.\d+\.\d+)\b`)
	piACP := regexp.MustCompile(`^\d+\.\d+\.\d+(?:[-+].+)?$`)
	for v, want := range map[string]string{
		"devel":                              "1.6.0+claude-rpc.devel",
		"":                                   "1.6.0+claude-rpc.devel",
		"v1.2.3":                             "1.6.0+claude-rpc.v1.2.3",
		"v1.2.3+dirty":                       "1.6.0+claude-rpc.v1.2.3.dirty",
		"v0.0.0-20260901120000-0123456789ab": "1.6.0+claude-rpc.v0.0.0-20260901120000-0123456789ab",
		"v1.2.4-0.20260901120000-0123456789ab+dirty": "1.6.0+claude-rpc.v1.2.4-0.20260901120000-0123456789ab.dirty",
	} {
		line := piVersionLine(v)
		assert.Equal(t, want, line, v)
		assert.Regexp(t, semver, line, v)
		m := semver.FindStringSubmatch(line)
		assert.Equal(t, []string{"1", "6", "0"}, m[1:4], "no pre-release part: %s", line)
		assert.Equal(t, piVersion, t3.FindStringSubmatch(line + "\n" + "claude-rpc " + v + " (go1.26.8, linux/amd64)")[1], v)
		assert.Regexp(t, piACP, line, v)
	}
}
