package claudecli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The supported range of the CLI (npm @anthropic-ai/claude-code):
// scripts/test-cli-versions runs the end-to-end tests that matter against
// each version of it, and CI against its two ends. Below OldestSupported
// claude-rpc turns off what the CLI lacks (see [Plan]); above NewestTested
// it runs as usual and doctor says which version was tested.
const (
	// OldestSupported is the oldest version with everything claude-rpc
	// uses (see [everyCapability]) that passes the version tests.
	OldestSupported = "2.1.275"
	// NewestTested is the newest version the version tests passed on.
	NewestTested = "2.1.332"
)

// Version is a CLI version, major.minor.patch. The zero Version is
// unknown.
type Version struct{ Major, Minor, Patch int }

// ParseVersion reads a version at the start of s: "2.1.328", or the CLI's
// --version line "2.1.328 (Claude Code)". A pre-release or build suffix
// ("2.1.328-beta.1") is ignored.
func ParseVersion(s string) (Version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, " \t\r\n-+("); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || p[0] == '+' {
			return Version{}, false
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, true
}

// mustVersion is ParseVersion for the constants of this file.
func mustVersion(s string) Version {
	v, ok := ParseVersion(s)
	if !ok {
		panic("claudecli: bad version " + s)
	}
	return v
}

func (v Version) String() string {
	if v.IsZero() {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// IsZero reports whether the version is unknown.
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or +1 as v is older than, the same as or newer
// than w.
func (v Version) Compare(w Version) int {
	for _, d := range [3]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

// Capability is a part of the CLI's interface claude-rpc relies on.
type Capability int

// The capabilities, with the oldest version that has each (as go run
// ./scripts/cli-capabilities finds by running each published CLI).
const (
	// capStreamJSON: -p --input-format stream-json (a turn as a user line on
	// stdin), used by every transport.
	capStreamJSON Capability = iota
	// capPartialMessages: --include-partial-messages (the API's stream
	// events, for text_delta and the rest).
	capPartialMessages
	// capSessionID: --session-id names the session and --resume continues it.
	capSessionID
	// capControlProtocol: initialize (models, commands) and interrupt on a
	// process with stdin open.
	capControlProtocol
	// capCanUseTool: --permission-prompt-tool stdio, the CLI asking over the
	// control protocol before a tool runs (--ask).
	capCanUseTool
	// capMCPMessage: an "sdk" MCP server in --mcp-config served over the
	// control protocol (set_host_tools).
	capMCPMessage
	// capSetModel: the control protocol's set_model changes the model of the
	// running process.
	capSetModel
	// capForkSession: --resume with --fork-session, --session-id and
	// --resume-session-at (fork, branch, clone).
	capForkSession
	// capEffort: --effort, and apply_flag_settings {effortLevel} on a running
	// process (set_thinking_level).
	capEffort
	// capName: --name, a session's display name (set_session_name).
	capName
	// capCommandLifecycle: command_lifecycle lines for a user line sent mid-turn (the
	// stream transport's steering knows by them when the model got it).
	capCommandLifecycle
	// capToolsStopWithCLI: the CLI ends its Bash tool's commands when it is
	// stopped (SIGTERM), as the pipe and pty transports abort a turn; the
	// commands run in sessions of their own, out of claude-rpc's reach.
	capToolsStopWithCLI
	// capTranscriptFirst: a turn's transcript is on disk when its result line
	// comes. claude-rpc decides by it whether the next turn resumes the
	// session (--resume) or creates it (--session-id).
	capTranscriptFirst
	// capNative: the npm package runs a native binary, not cli.js on Node.js.
	capNative
	numCapabilities
)

// capability is what the table says of one Capability.
type capability struct {
	name string
	// since is the oldest published version that has it.
	since Version
	// without says what claude-rpc does, or what fails, without it.
	without string
}

// The versions are the oldest published ones that have each (npm does not
// have every number), the one before each lacking it: scripts/cli-capabilities
// checks both.
var capabilities = [numCapabilities]capability{
	capStreamJSON:       {"stream-json input", mustVersion("1.0.21"), "no prompt can run: claude-rpc sends every turn as stream-json"},
	capPartialMessages:  {"--include-partial-messages", mustVersion("1.0.109"), "no prompt can run: claude-rpc passes --include-partial-messages"},
	capSessionID:        {"--session-id", mustVersion("1.0.53"), "no prompt can run: claude-rpc names each session with --session-id"},
	capControlProtocol:  {"control protocol (initialize, interrupt)", mustVersion("1.0.110"), "the stream transport is replaced by pipe; get_available_models and get_commands fail"},
	capCanUseTool:       {"can_use_tool (--permission-prompt-tool stdio)", mustVersion("1.0.59"), "--ask is turned off: tools that need permission are refused"},
	capMCPMessage:       {"mcp_message (sdk MCP servers)", mustVersion("1.0.93"), "set_host_tools' tools do not reach the model"},
	capSetModel:         {"set_model on a running process", mustVersion("1.0.112"), "the stream transport is replaced by pipe (set_model would not change the running process's model)"},
	capForkSession:      {"--fork-session with --session-id", mustVersion("2.0.73"), "fork, branch and clone fail (the CLI refuses --session-id with --resume)"},
	capEffort:           {"--effort and apply_flag_settings", mustVersion("2.1.69"), "after set_thinking_level every turn fails (the CLI refuses --effort)"},
	capName:             {"--name", mustVersion("2.1.76"), "after set_session_name every turn fails (the CLI refuses --name)"},
	capCommandLifecycle: {"command_lifecycle (steering mid-turn)", mustVersion("2.1.206"), "the stream transport is replaced by pipe (a steer would never end the run); steering waits for the end of the CLI's turn"},
	capToolsStopWithCLI: {"Bash commands ended with the CLI", mustVersion("2.1.212"), "after an abort on the pipe or pty transport the running Bash command goes on (the stream transport's interrupt ends it)"},
	capTranscriptFirst:  {"transcript written before the result", mustVersion("2.1.275"), "on the pipe and pty transports a next prompt can fail with \"Session ID … is already in use\" (the stream transport keeps its process and is not affected)"},
	capNative:           {"native binary", mustVersion("2.1.113"), "none: the CLI runs on Node.js (slower to start)"},
}

func (c Capability) String() string { return capabilities[c].name }

// Since is the oldest CLI version that has c.
func (c Capability) Since() Version { return capabilities[c].since }

// Without says what claude-rpc does, or what fails, with a CLI lacking c.
func (c Capability) Without() string { return capabilities[c].without }

// everyCapability lists every capability, oldest first as the table has them.
func everyCapability() []Capability {
	cs := make([]Capability, numCapabilities)
	for i := range cs {
		cs[i] = Capability(i)
	}
	return cs
}

// Has reports whether a CLI of version v has c. An unknown version is
// taken to have everything: claude-rpc then runs as it would on the tested
// one.
func (v Version) Has(c Capability) bool {
	return v.IsZero() || v.Compare(c.Since()) >= 0
}

// Lacks lists the capabilities a CLI of version v does not have.
func (v Version) Lacks() []Capability {
	var out []Capability
	for _, c := range everyCapability() {
		if !v.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Place is a version's place in the supported range.
type Place int

const (
	PlaceUnknown   Place = iota // the version could not be read
	PlaceOlder                  // older than OldestSupported
	PlaceSupported              // OldestSupported through NewestTested
	PlaceNewer                  // newer than NewestTested
)

// Place says where v is in the supported range.
func (v Version) Place() Place {
	switch {
	case v.IsZero():
		return PlaceUnknown
	case v.Compare(mustVersion(OldestSupported)) < 0:
		return PlaceOlder
	case v.Compare(mustVersion(NewestTested)) > 0:
		return PlaceNewer
	}
	return PlaceSupported
}

// Usable reports whether prompts can run at all on a CLI of version v.
func (v Version) Usable() bool {
	return v.Has(capStreamJSON) && v.Has(capPartialMessages) && v.Has(capSessionID)
}

// Plan is how claude-rpc runs a CLI of some version: the transport and
// --ask it can have, and what it tells people about the rest (one sentence
// each).
type Plan struct {
	Transport string
	Ask       bool
	// HookEvents: the CLI takes --include-hook-events (checked on 2.1.275,
	// 2.1.328 and 2.1.332; older versions are not measured, so it is not
	// passed to them).
	HookEvents bool
	Notes      []string
}

// PlanFor returns how to run a CLI of version v when transport and ask
// were asked for: the stream transport needs the control protocol,
// set_model and command_lifecycle, else pipe runs instead; --ask needs the
// stream transport and can_use_tool, else it is off. What stays broken is
// in Notes.
func PlanFor(v Version, transport string, ask bool) Plan {
	p := Plan{Transport: transport, Ask: ask, HookEvents: v.IsZero() || v.Compare(mustVersion(OldestSupported)) >= 0}
	if v.IsZero() {
		return p
	}
	if !v.Usable() {
		var lacks []string
		for _, c := range []Capability{capStreamJSON, capPartialMessages, capSessionID} {
			if !v.Has(c) {
				lacks = append(lacks, c.String())
			}
		}
		p.Notes = append(p.Notes, fmt.Sprintf("the Claude CLI %s lacks %s: prompts will fail; install %s or newer", v, strings.Join(lacks, ", "), OldestSupported))
		if ask && !v.Has(capCanUseTool) {
			p.Ask = false
			p.Notes = append(p.Notes, fmt.Sprintf("--ask is off: the Claude CLI %s lacks %s", v, capCanUseTool))
		}
		return p // the rest does not matter
	}
	// A persistent transport speaking the control protocol (stream) needs
	// the CLI's side of it; without it, one process per turn (pipe) runs.
	if asked := CapsOf(transport); asked.Persistent {
		for _, c := range []Capability{capControlProtocol, capSetModel, capCommandLifecycle} {
			if !v.Has(c) {
				p.Transport = TransportPipe
				p.Notes = append(p.Notes, fmt.Sprintf("the Claude CLI %s lacks %s (since %s): running --transport pipe instead of stream", v, c, c.Since()))
				break
			}
		}
	}
	if ask {
		switch {
		case !v.Has(capCanUseTool):
			p.Ask = false
			p.Notes = append(p.Notes, fmt.Sprintf("the Claude CLI %s lacks %s (since %s): --ask is off, tools that need permission are refused", v, capCanUseTool, capCanUseTool.Since()))
		}
	}
	for _, c := range []Capability{capMCPMessage, capForkSession, capEffort, capName, capToolsStopWithCLI, capTranscriptFirst} {
		if (c == capToolsStopWithCLI || c == capTranscriptFirst) && CapsOf(p.Transport).Persistent {
			continue // the interrupt ends them; the process is kept
		}
		if !v.Has(c) {
			p.Notes = append(p.Notes, fmt.Sprintf("the Claude CLI %s lacks %s (since %s): %s", v, c, c.Since(), c.Without()))
		}
	}
	return p
}

// DetectVersion returns the version of the CLI c. It reads it from the
// install when it can (npm's package.json beside the binary or its script,
// the native installer's versions/<version> file), which costs no process
// start (cli.js on Node.js takes seconds to print its version); else it
// runs `--version`, for at most timeout.
func DetectVersion(c Command, timeout time.Duration) (Version, error) {
	if v, ok := installedVersion(c); ok {
		return v, nil
	}
	return runVersion(c, timeout)
}

// runVersion runs `c --version` and reads the version it prints.
func runVersion(c Command, timeout time.Duration) (Version, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, append(append([]string(nil), c.Args...), "--version")...)
	cmd.Env = (&Config{}).Environ()
	// Whatever runs there may print anything: a few KB are kept, and more
	// ends it (its writes fail).
	out, errOut := &capped{n: 4096}, &capped{n: 4096}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := RunCommand(cmd, EndOrphans)
	switch {
	case out.full || errOut.full:
		return Version{}, fmt.Errorf("`%s --version` printed %w", c, errCapped)
	case err != nil:
		return Version{}, fmt.Errorf("`%s --version`: %w: %s", c, err, strings.TrimSpace(errOut.buf.String()))
	}
	v, ok := ParseVersion(out.buf.String())
	if !ok {
		return Version{}, fmt.Errorf("`%s --version` printed %q, not a version", c, strings.TrimSpace(out.buf.String()))
	}
	return v, nil
}

// capped keeps the first n bytes written to it and refuses more: the
// process writing to it then gets EPIPE instead of filling memory.
type capped struct {
	buf  bytes.Buffer
	n    int
	full bool // more was written than kept
}

var errCapped = errors.New("too much output")

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:room])
		c.full = true
		return room, errCapped
	}
	return c.buf.Write(p)
}

// installedVersion reads c's version from its install, without running it.
func installedVersion(c Command) (Version, bool) {
	file := c.Path
	if len(c.Args) > 0 {
		file = c.Args[0] // node with the CLI's script
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return Version{}, false
	}
	// The native installer: ~/.local/share/claude/versions/2.1.328.
	if v, ok := ParseVersion(filepath.Base(real)); ok && filepath.Base(filepath.Dir(real)) == "versions" {
		return v, true
	}
	// npm: the platform package's claude, or the wrapper's bin/claude.exe
	// or cli.js, below the package.json of @anthropic-ai/claude-code*.
	dir := filepath.Dir(real)
	for range 3 {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(b, &pkg) == nil && strings.HasPrefix(pkg.Name, "@anthropic-ai/claude-code") {
				return ParseVersion(pkg.Version)
			}
			return Version{}, false // another package: not the CLI's
		}
		dir = filepath.Dir(dir)
	}
	return Version{}, false
}
