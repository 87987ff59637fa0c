// Package claudetest holds the test helpers: the one rule for tests that
// need something from outside the module ([EndToEnd], [Need], [CLI]), the
// fake Anthropic API started for a test ([Start]; the API itself is package
// fakeapi) and a scripted fake transport ([Transport]) that plays the CLI
// for the bridge's tests. Nothing in the claude-rpc binary links it.
package claudetest

import "github.com/claude-rpc/claude-rpc/claudecli/fakeapi"

// Server is the fake Anthropic API ([fakeapi.Server]) that [Start] starts.
type Server = fakeapi.Server

// TB is the part of testing.TB that [Start], [CLI] and the other helpers
// need.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	SkipNow()
	Cleanup(func())
}

// Start starts a fake Anthropic API ([fakeapi.New]) and closes it when the
// test ends.
func Start(t TB) *Server {
	t.Helper()
	s, err := fakeapi.New()
	if err != nil {
		t.Fatalf("starting fake Anthropic API: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
