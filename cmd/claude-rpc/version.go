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

// pseudoCommitRE is the commit at the end of a pseudo-version
// (v0.0.0-20260901120000-0123456789ab, maybe +dirty).
var pseudoCommitRE = regexp.MustCompile(`-\d{14}-([0-9a-f]{12})(\+dirty)?$`)

// versionLine is what --version prints: the module version, the commit it
// was built from (the VCS stamp of a build in a clone, else the commit a
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
