package bridge

import (
	"context"
	"log/slog"
	"time"

	"github.com/claude-rpc/claude-rpc/bridge/extensions"
	"github.com/claude-rpc/claude-rpc/bridge/writer"
	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/infocache"
	"github.com/claude-rpc/claude-rpc/transform"
)

// The shapes of message_update ([Options.MessageUpdates]).
const (
	UpdatesFull  = "full"
	UpdatesDelta = "delta"
)

// DefaultCoalesce is the default [Options.Coalesce] (the writer's).
const DefaultCoalesce = writer.DefaultCoalesce

// Options configures [Serve].
type Options struct {
	// CLI says how to run the Claude CLI.
	CLI claudecli.Config
	// Transport is how: "stream", "pipe" or "pty" (see claudecli.New);
	// empty means stream.
	Transport string
	// UseTransport, when set, runs the turns instead of the transport
	// Transport names: a program embedding the bridge may bring its own
	// (the bridge's tests: a scripted fake). It is used as it is, from
	// the start: Plan is not asked, and what the bridge does follows its
	// Caps (Ask matters only when they say Control). Serve closes it when
	// it ends, as it does its own.
	UseTransport claudecli.Transport
	// MaxLine caps one line from the host and from the CLI; 0 means
	// [jsonl.DefaultMaxLine].
	MaxLine int
	// Log receives the bridge's logs; nil discards them.
	Log *slog.Logger
	// IdleTimeout stops a turn during which the CLI printed nothing for
	// that long, ending the run with an error; 0 never does.
	IdleTimeout time.Duration
	// Ask puts the CLI's permission prompts and AskUserQuestion to the
	// host as extension_ui_request (stream transport); AskTimeout bounds
	// the wait for an answer (then: denied); 0 waits as long as the turn.
	Ask        bool
	AskTimeout time.Duration
	// Session, when set, is the session (id or transcript path) to start
	// on; Continue starts on the cwd's most recent one.
	Session  string
	Continue bool
	// Fork, with Session, starts on a copy of that session under a new id
	// rather than on the session itself (pi's --fork <path|id>; the CLI's
	// --resume … --fork-session). The copy's id is SessionID when set.
	Fork bool
	// SessionID is pi's --session-id: start on the working directory's
	// session with this id, or create the session with this id when there
	// is none (also under --no-session, where it only names the session).
	// main checks it as pi does (letters, digits, '.', '_' and '-',
	// beginning and ending with a letter or digit); the CLI's own
	// --session-id takes a UUID only, so a pi id that is not one is mapped
	// to one (the same id, the same UUID: a name-based UUID), which
	// get_state reports.
	SessionID string
	// PiSessions keeps each session as pi 1.6 keeps its own too, beside
	// the CLI's transcript: a pi session file (sessions.PiWriter), in
	// SessionDir when set, else where pi keeps the working folder's
	// sessions (sessions.PiSessionPlace). get_state's sessionFile names
	// it; --session, switch_session, fork and clone take it. Never under
	// CLI.NoPersistence.
	PiSessions bool
	SessionDir string
	// SessionName is the session's display name from the start (pi's
	// --name/-n): get_state's sessionName, and the CLI's --name, as after
	// set_session_name. Empty: no name.
	SessionName string
	// ThinkingLevel is the thinking level from the start (pi's --thinking,
	// or the ":<level>" suffix of pi's --model): off, minimal, low,
	// medium, high, xhigh or max (main checks). Empty keeps the default.
	// It is clamped to the model's levels as set_thinking_level is.
	ThinkingLevel string
	// Coalesce is the window in which text, thinking and tool-input
	// deltas of one block are merged into one message_update frame (see
	// writer.Writer); 0 writes every delta as its own frame, as pi does.
	Coalesce time.Duration
	// MessageUpdates is the shape of message_update: "full" (pi 0.73's,
	// the default: each carries the message so far, twice) or "delta"
	// (pi 1.5's: the change only, output linear in the reply).
	MessageUpdates string

	// Extensions are pi extensions to load (pi's --extension): one Node
	// process on PATH, owned by the bridge, runs them through pi's own
	// extension runtime (package extensions; extensions.go says what of
	// pi's extension API the bridge serves).
	Extensions []string
	// ExtensionsDiscover loads, besides Extensions, what pi finds itself
	// (its extension folders and settings: pi without --no-extensions).
	// The host is started only when there is something to load.
	ExtensionsDiscover bool
	// ExtensionFlags are the extensions' own flags given on the command
	// line (pi's registerFlag), by name without dashes: a string, or true
	// for a bare flag (extensions.Config.Flags).
	ExtensionFlags map[string]any
	// ExtensionCache is where pi's runtime is installed or fetched to
	// ("": the default cache, extensions.DefaultCache).
	ExtensionCache string

	// Prewarm starts the stream transport's CLI process when the bridge
	// starts and whenever the session or the CLI's config replaced it, so
	// the first prompt does not wait for the CLI's start-up (the process
	// calls no API and writes nothing until a prompt comes; it costs the
	// memory of a CLI process while the host does not prompt).
	Prewarm bool

	// ReleaseIdle, when above 0, ends the stream transport's CLI process
	// once the session has rested that long: no run, no turn the CLI runs
	// by itself, none of its background tasks running, no dialog of the
	// CLI's open (rest.go). The session and everything the bridge keeps
	// stay; the next prompt resumes the session in a new process, which a
	// return signal (get_state, get_messages …: a host showing it is back)
	// starts ahead when Prewarm is on. pipe and pty hold no process
	// between prompts: it changes nothing there.
	ReleaseIdle time.Duration

	// ToolNames is how tool calls are shown: under pi's names and
	// argument shapes where pi has the tool (the default), or as the CLI
	// printed them (transform.ToolNames).
	ToolNames transform.ToolNames

	// Idle, when set, is called each time a run ends and nothing more
	// runs (its last frames, session_settled among them, are queued), and
	// when the session in use changes while nothing runs (new_session,
	// switch_session, fork, …; a session loaded at start). It is called
	// on the bridge's run owner goroutine and must return at once (claude-rpc
	// resets a timer that gives the heap back to the OS and sets its
	// memory limit above what stays live).
	Idle func()

	// Plan, when set, says how to run the CLI of the given version
	// (transport and --ask, see [claudecli.PlanFor]); version is the one
	// the info cache remembers for this CLI binary, "" when it has none,
	// and Plan reads it from the CLI then (which may take seconds). The
	// bridge calls it once, on a goroutine of its own, after ready: what
	// needs the transport (a prompt, the CLI's live models and commands)
	// waits for it, nothing else does. Nil: Transport and Ask as given.
	Plan func(version string) claudecli.Plan

	// InfoCache keeps what the CLI said about itself between runs
	// (infocache.DefaultDir()); nil keeps nothing. get_state,
	// get_available_models and get_commands answer from it until the CLI
	// has spoken, and it is refreshed in the background.
	InfoCache *infocache.Store

	// What only tests and benchmarks set (export_test.go gives the
	// external ones theirs). Each replaces one thing a bridge otherwise
	// makes or fixes itself, so it travels with the rest of the options.

	// query, when set, replaces [claudecli.Query].
	query func(context.Context, claudecli.Config, time.Duration) (claudecli.Info, error)
	// flushWait bounds how long, at exit, the bridge lets a CLI process
	// that has finished its turn write its transcript before stopping it;
	// 0 means 10 seconds.
	flushWait time.Duration
	// firstModelWait, when set, replaces firstModelWait (startmodel.go).
	firstModelWait time.Duration
	// trace, when set, is called for each frame made from a CLI line with
	// the time the line was read, the time the frame was written, and
	// whether coalescing held it (BenchmarkLineToFrame). It is called on
	// the writer goroutine and must be quick.
	trace func(read, written time.Time, held bool)
}

// modelWait is how long after the start get_state waits for the CLI to say
// its model (firstModelWait, unless a test set its own).
// cacheDir is where pi's extension runtime is kept.
func (o *Options) cacheDir() string {
	if o.ExtensionCache != "" {
		return o.ExtensionCache
	}
	return extensions.DefaultCache(o.CLI.Env)
}

func (o *Options) modelWait() time.Duration {
	if o.firstModelWait > 0 {
		return o.firstModelWait
	}
	return firstModelWait
}
