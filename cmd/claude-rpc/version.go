package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// it comes from the module's build info.
var version = ""

// buildVersion is the module version: what `go install …@v1.2.3` (or a
// pseudo-version for a commit) installed, or "devel" for a build from a
// clone without a tag.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

// piVersion is the pi release whose RPC protocol and command line
// claude-rpc speaks: what it says it is to a host that asks `pi --version`.
const piVersion = "1.6.0"

// piVersionLine is what --version prints on stdout, in place of pi's bare
// version: pi's version, with claude-rpc's own as semver build metadata
// (1.6.0+claude-rpc.v1.2.3). Hosts read the pi version from it (T3 Code
// takes the first x.y.z, pi-acp wants the whole line to be semver); build
// metadata counts in no semver comparison. The README's --version says
// how each host reads it.
func piVersionLine(v string) string {
	var ids []string
	// Build metadata is dot-separated identifiers of [0-9A-Za-z-].
	for _, id := range strings.FieldsFunc(v, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-')
	}) {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		ids = []string{"devel"}
	}
	return piVersion + "+claude-rpc." + strings.Join(ids, ".")
}

// pseudoCommitRE is the commit at the end of a pseudo-version
// (v0.0.0-20260901120000-0123456789ab, maybe +dirty).
var pseudoCommitRE = regexp.MustCompile(`-\d{14}-([0-9a-f]{12})(\+dirty)?$`)

// versionLine is what --version prints on stderr, for people: the module
// version, the commit it was built from (the VCS stamp of a build in a clone, else the commit a
// pseudo-version names; a tagged `go install` records none), and the Go
// version and platform.
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(buildVersion(), bi)
}

func formatVersion(v string, bi *debug.BuildInfo) string {
	var commit, when string
	modified := false
	goVersion := runtime.Version()
	if bi != nil {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if commit == "" {
		if m := pseudoCommitRE.FindStringSubmatch(v); m != nil {
			commit = m[1]
		}
	}
	var details []string
	if commit != "" {
		c := "commit " + commit[:min(12, len(commit))]
		if when != "" {
			c += " " + when
		}
		if modified {
			c += " (modified)"
		}
		details = append(details, c)
	}
	details = append(details, goVersion, runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("claude-rpc %s (%s)", v, strings.Join(details, ", "))
}
