package main

import (
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
