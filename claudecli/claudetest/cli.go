package claudetest

import (
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
)

// CLIEnvVar names the environment variable that gives tests the path of the
// real Claude CLI, and with it turns the end-to-end tests on. scripts/test
// sets it (to what scripts/install-cli prints).
const CLIEnvVar = "CLAUDE_RPC_TEST_CLI"

// EndToEndHint is the one line that says how to run the end-to-end tests,
// for a run without [CLIEnvVar].
const EndToEndHint = "end-to-end tests need the real Claude CLI: " +
	CLIEnvVar + "=$(scripts/install-cli) go test ./... runs them (scripts/test sets it)"

// The one rule for a test that needs something from outside the module (the
// real CLI, Chromium, omp):
//
//   - present: the test runs;
//   - missing under CI ([InCI]): the test fails, saying what is missing;
//     CI runs scripts/test, which provides everything;
//   - missing elsewhere: the test skips, with one line saying how to get it.
//
// [Need] applies it; [EndToEnd], [CLI] and [Chromium] are its uses.

// InCI reports whether the tests run under CI: the CI variable is set, as CI
// services set it (CI=true), to anything but "false" or "0".
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// Need applies the one rule: it returns when have is true; otherwise it
// fails the test under CI and skips it elsewhere, with why (one line: what
// is missing and how to get it).
func Need(t TB, have bool, why string) {
	t.Helper()
	if have {
		return
	}
	if InCI() {
		t.Fatal("CI is set, so this test may not skip: " + why)
	}
	t.Skip(why)
}

// EndToEndOn reports whether end-to-end tests run: [CLIEnvVar] is set.
func EndToEndOn() bool { return os.Getenv(CLIEnvVar) != "" }

// hinted is set by [PrintEndToEndHint]: the package's skips then say nothing
// more.
var hinted atomic.Bool

// PrintEndToEndHint prints [EndToEndHint] to stderr once, for a package's
// TestMain when [EndToEndOn] is false; the package's end-to-end tests then
// skip without repeating it. Under CI it prints why the run fails instead.
func PrintEndToEndHint() {
	if InCI() {
		fmt.Fprintln(os.Stderr, "CI is set, so the end-to-end tests may not skip, and "+CLIEnvVar+" is not set: "+EndToEndHint)
	} else {
		fmt.Fprintln(os.Stderr, "skipped: "+EndToEndHint)
	}
	hinted.Store(true)
}

// EndToEnd is the gate of every end-to-end test (one that runs the real CLI,
// the claude-rpc binary or another program installed from a registry): the
// one rule for [CLIEnvVar]. It returns when the variable is set, fails the
// test under CI, and skips it elsewhere with [EndToEndHint] (with no message
// when [PrintEndToEndHint] said it already).
func EndToEnd(t TB) {
	t.Helper()
	if EndToEndOn() {
		return
	}
	if hinted.Load() && !InCI() {
		t.SkipNow()
	}
	Need(t, false, EndToEndHint)
}

// CLI returns the path of the real Claude CLI that [CLIEnvVar] names, after
// [EndToEnd]. It fails the test when the variable names no file.
func CLI(t TB) string {
	t.Helper()
	EndToEnd(t)
	p := os.Getenv(CLIEnvVar)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v (scripts/install-cli prints the path of the pinned CLI)", CLIEnvVar, p, err)
	}
	return p
}

// Chromium returns the path of headless Chromium ("chromium" on PATH), which
// the HTML export tests render their pages in, by the one rule: missing, it
// fails the test under CI and skips it elsewhere.
func Chromium(t TB) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	Need(t, err == nil, "chromium is not on PATH, and this test renders in it: apt-get install chromium (Debian; scripts/test installs it)")
	return p
}
