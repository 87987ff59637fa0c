//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// piNode is the environment a bridge runs pi extensions with: PATH
// starting with the pinned Node 22 that scripts/install-pi16 installs
// beside pi 1.6.0 (the extension host needs Node 22.19 or later), and the
// cache holding pi's runtime.
func piNode(t testing.TB) []string {
	t.Helper()
	dir := runInstaller(t, "install-pi16")
	return []string{"PATH=" + filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"CLAUDE_RPC_CACHE=" + filepath.Dir(dir)}
}

// startExtBridge starts a bridge that runs pi extensions (piNode), with args.
func startExtBridge(t *testing.T, args ...string) *rpcProc {
	t.Helper()
	return startBridgeWith(t, bridgeOpts{env: piNode(t)}, args...)
}

// findTreeNode is the first node of a get_tree tree that match takes.
func findTreeNode(nodes gjson.Result, match func(gjson.Result) bool) gjson.Result {
	for _, n := range nodes.Array() {
		if match(n) {
			return n
		}
		if f := findTreeNode(n.Get("children"), match); f.Exists() {
			return f
		}
	}
	return gjson.Result{}
}

// extensionFixture is the absolute path of testdata/extensions/name.
func extensionFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "extensions", name))
	require.NoError(t, err)
	return p
}

// TestExtension: hapi's use of --extension, with a fixture extension of
// the same API surface (TypeBox parameters, a before_agent_start
// paragraph, a tool that sets the title through ctx.ui). The model is
// offered the tool and given the paragraph; its call runs in the
// extension, whose setTitle and notify reach the host as
// extension_ui_request frames, and whose result reaches the model. An
// extension that throws as it loads and one that is missing are warnings;
// the others are served.
func TestExtension(t *testing.T) {
	forEachTransport(t, extension)
}

func extension(t *testing.T, transport string) {
	b := startExtBridge(t, "--transport", transport, "-e", extensionFixture(t, "title.ts"),
		"--extension", extensionFixture(t, "throws.ts"), "-e", extensionFixture(t, "missing.ts"))

	require.True(t, b.call(map[string]any{"type": "prompt", "message": `[[tool:mcp__ext__name_chat:{"name":"Weather"}]]`}).Get("success").Bool())
	frames := b.until(60*time.Second, isType("agent_end"))

	var title, notify, start, update gjson.Result
	for _, f := range frames {
		switch {
		case f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "setTitle":
			title = f
		case f.Get("type").String() == "extension_ui_request" && f.Get("method").String() == "notify":
			notify = f
		case f.Get("type").String() == "tool_execution_start":
			start = f
		case f.Get("type").String() == "tool_execution_update":
			update = f
		}
	}
	require.True(t, title.Exists(), "setTitle came as an extension_ui_request")
	assert.Equal(t, "Weather", title.Get("title").String())
	assert.NotEmpty(t, title.Get("id").String())
	assert.Equal(t, "named Weather", notify.Get("message").String())
	assert.Equal(t, "info", notify.Get("notifyType").String())
	assert.Equal(t, "name_chat", start.Get("toolName").String(), "the extension's tool under its own name, as pi shows it")
	assert.Equal(t, "name_chat", update.Get("toolName").String())
	assert.Equal(t, "naming", update.Get("partialResult.content.0.text").String())
	assert.Equal(t, "tool said: Chat named Weather", last(frames, "message_end", "assistant").Get("message.content.0.text").String())

	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	first := gjson.ParseBytes(reqs[0].Body)
	var offered gjson.Result
	for _, tool := range first.Get("tools").Array() {
		if tool.Get("name").String() == "mcp__ext__name_chat" {
			offered = tool
		}
	}
	require.True(t, offered.Exists(), "the model was offered the extension's tool")
	assert.Equal(t, "Give the chat a short name.", offered.Get("description").String())
	assert.Equal(t, "string", offered.Get("input_schema.properties.name.type").String())
	assert.Equal(t, []any{"name"}, offered.Get("input_schema.required").Value(), "Type.Optional leaves mood out of required")
	assert.Equal(t, "busy", offered.Get("input_schema.properties.mood.anyOf.1.const").String())
	assert.Contains(t, first.Get("system").Raw, "Name this chat with the name_chat tool", "before_agent_start's paragraph is in the system prompt")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "Chat named Weather", "the tool's result reached the API")

	log := b.stderr.String()
	assert.Contains(t, log, "this extension fails on purpose")
	assert.Contains(t, log, "missing.ts")
	assert.Contains(t, log, "must not reach the bridge's stdout", "an extension's stdout goes to the log")

	// It goes on serving, the paragraph still there.
	frames = b.runPrompt("again [[say:fine]]")
	assert.Equal(t, "fine", deltaText(frames))
	assert.Contains(t, b.lastRequest().Get("system").Raw, "Name this chat with the name_chat tool")
}

// TestExtensionWithoutNode: without node on PATH, --extension is a warning
// and the bridge serves as without it.
func TestExtensionWithoutNode(t *testing.T) {
	t.Parallel()
	ext := extensionFixture(t, "title.ts")
	b := startBridgeWith(t, bridgeOpts{env: []string{"PATH=" + t.TempDir()}}, "-e", ext)
	frames := b.runPrompt("hello [[say:hi]]")
	assert.Equal(t, "hi", deltaText(frames))
	assert.Contains(t, b.stderr.String(), "pi extensions are not loaded (--extension "+ext+"): no node on PATH")
	assert.NotContains(t, b.lastRequest().Get("system").Raw, "name_chat")
}

// TestExtensionHostDies: when the extension host dies during a tool call,
// the model gets an error result saying so, and the bridge goes on
// serving.
func TestExtensionHostDies(t *testing.T) {
	t.Parallel()
	b := startExtBridge(t, "-e", extensionFixture(t, "dies.ts"))
	frames := b.runPrompt(`[[tool:mcp__ext__die:{}]]`)
	reply := last(frames, "message_end", "assistant").Get("message.content.0.text").String()
	assert.Contains(t, reply, "the extension host is not running (it exited: exit status 3)")
	assert.Contains(t, reply, "die could not run")
	frames = b.runPrompt("still there? [[say:yes]]")
	assert.Equal(t, "yes", deltaText(frames))
}

// TestExtensionCommands: an extension's commands are listed by
// get_commands (source "extension", where they come from), and a prompt
// "/name args" runs the handler and is answered "handled" once it
// returned, as pi answers; the API calls it makes are carried out as the
// host's commands would be (setSessionName, sendUserMessage: a run,
// newSession), and one that throws is pi's extension_error.
func TestExtensionCommands(t *testing.T) {
	t.Parallel()
	ext := extensionFixture(t, "commands.ts")
	b := startExtBridge(t, "-e", ext, "--greeting", "howdy")

	var cmds gjson.Result
	require.Eventually(t, func() bool {
		cmds = b.call(map[string]any{"type": "get_commands"})
		return strings.Contains(cmds.Raw, "name-it")
	}, 30*time.Second, 100*time.Millisecond, "the extension's commands are listed once it loaded")
	var nameIt gjson.Result
	for _, c := range cmds.Get("data.commands").Array() {
		if c.Get("name").String() == "name-it" {
			nameIt = c
		}
	}
	assert.Equal(t, "extension", nameIt.Get("source").String())
	assert.Equal(t, "Names the session", nameIt.Get("description").String())
	assert.Equal(t, ext, nameIt.Get("sourceInfo.path").String())
	assert.Equal(t, "cli", nameIt.Get("sourceInfo.source").String())

	r := b.call(map[string]any{"type": "prompt", "message": "/name-it Weather"})
	require.True(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, "handled", r.Get("data.disposition").String())
	require.Eventually(t, func() bool {
		return b.call(map[string]any{"type": "get_state"}).Get("data.sessionName").String() == "Weather"
	}, 10*time.Second, 50*time.Millisecond, "setSessionName named the session")
	notify := b.until(10*time.Second, func(f gjson.Result) bool { return strings.Contains(f.Get("message").String(), "named") })
	assert.Contains(t, notify[len(notify)-1].Get("message").String(), "Weather, howdy", "the extension's flag, from claude-rpc's command line")

	count := func() string {
		assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/count"}).Get("data.disposition").String())
		f := b.until(10*time.Second, func(f gjson.Result) bool { return strings.HasPrefix(f.Get("message").String(), "messages ") })
		return f[len(f)-1].Get("message").String()
	}
	assert.Equal(t, "messages 0", count(), "ctx.sessionManager, before a prompt")

	r = b.call(map[string]any{"type": "prompt", "message": "/ask hello [[say:hi there]]"})
	assert.Equal(t, "handled", r.Get("data.disposition").String())
	frames := b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, "hi there", deltaText(frames), "sendUserMessage ran a turn")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "hello")
	assert.Equal(t, "messages 2", count(), "ctx.sessionManager reads the session as it is now")

	// sendMessage, idle without a turn: a custom message in the session
	// (message_start and message_end, get_messages), which the model gets
	// with the next prompt.
	custom := func(f gjson.Result) bool {
		return f.Get("type").String() == "message_end" && f.Get("message.role").String() == "custom"
	}
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/note now keep it short"}).Get("data.disposition").String())
	ends := b.until(10*time.Second, custom)
	m := ends[len(ends)-1].Get("message")
	assert.Equal(t, "note", m.Get("customType").String())
	assert.Equal(t, `"keep it short"`, m.Get("content").Raw, "a string, as the extension gave it (pi keeps it so)")
	assert.True(t, m.Get("display").Bool())
	assert.JSONEq(t, `{"how":"now"}`, m.Get("details").Raw)
	msgs := b.call(map[string]any{"type": "get_messages"}).Get("data.messages").Array()
	require.NotEmpty(t, msgs)
	assert.Equal(t, "custom", msgs[len(msgs)-1].Get("role").String(), "get_messages has it")
	frames = b.runPrompt("go on [[say:ok]]")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "keep it short", "the model got it with the next prompt")
	// deliverAs nextTurn: in the next prompt's run, after its message.
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/note next mind the tests"}).Get("data.disposition").String())
	frames = b.runPrompt("next [[say:done]]")
	var roles []string
	for _, f := range frames {
		if f.Get("type").String() == "message_start" {
			roles = append(roles, f.Get("message.role").String())
		}
	}
	assert.Equal(t, []string{"user", "custom", "assistant"}, roles, "nextTurn: after the prompt, in its run")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "mind the tests")
	// before_agent_start's message: in the run after the prompt's, and to
	// the model.
	frames = b.runPrompt("remind me [[say:sure]]")
	roles = nil
	for _, f := range frames {
		if f.Get("type").String() == "message_end" {
			roles = append(roles, f.Get("message.role").String()+":"+f.Get("message.customType").String())
		}
	}
	assert.Equal(t, []string{"user:", "custom:reminder", "assistant:"}, roles)
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "buy milk")
	// triggerTurn: a run of its own, the custom message first.
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/note turn [[say:noted]]"}).Get("data.disposition").String())
	frames = b.until(60*time.Second, isType("agent_end"))
	assert.Equal(t, "noted", deltaText(frames), "triggerTurn ran a turn")
	end := frames[len(frames)-1]
	assert.Equal(t, "custom", end.Get("messages.0.role").String())

	// appendEntry: an entry in the session, and pi's entry_appended.
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/keep remember this"}).Get("data.disposition").String())
	appended := b.until(10*time.Second, isType("entry_appended"))
	entry := appended[len(appended)-1].Get("entry")
	assert.Equal(t, "custom", entry.Get("type").String())
	assert.Equal(t, "note", entry.Get("customType").String())
	assert.JSONEq(t, `{"text":"remember this"}`, entry.Get("data").Raw)
	entries := b.call(map[string]any{"type": "get_entries"}).Get("data.entries").Array()
	require.NotEmpty(t, entries)
	assert.Equal(t, entry.Get("id").String(), entries[len(entries)-1].Get("id").String(), "get_entries has it")
	// setLabel: get_tree shows it on the entry; an unknown entry is
	// extension_error, in pi's words.
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/mark start"}).Get("data.disposition").String())
	var labelled gjson.Result
	require.Eventually(t, func() bool {
		tree := b.call(map[string]any{"type": "get_tree"}).Get("data.tree")
		labelled = findTreeNode(tree, func(n gjson.Result) bool { return n.Get("label").Exists() })
		return labelled.Exists()
	}, 10*time.Second, 50*time.Millisecond, "get_tree shows the label")
	assert.Equal(t, "start", labelled.Get("label").String())
	assert.Equal(t, "message", labelled.Get("entry.type").String())
	assert.Equal(t, "user", labelled.Get("entry.message.role").String())

	r = b.call(map[string]any{"type": "prompt", "message": "/broken"})
	assert.Equal(t, "handled", r.Get("data.disposition").String())
	errFrame := b.until(10*time.Second, isType("extension_error"))
	e := errFrame[len(errFrame)-1]
	assert.Equal(t, "command:broken", e.Get("extensionPath").String())
	assert.Equal(t, "command", e.Get("event").String())
	assert.Equal(t, "broken on purpose", e.Get("error").String())

	before := b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	r = b.call(map[string]any{"type": "prompt", "message": "/fresh"})
	assert.Equal(t, "handled", r.Get("data.disposition").String())
	assert.NotEqual(t, before, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String(), "newSession started a new session")
	fresh := b.until(10*time.Second, func(f gjson.Result) bool { return strings.HasPrefix(f.Get("message").String(), "fresh ") })
	assert.Regexp(t, `^fresh \d+$`, fresh[len(fresh)-1].Get("message").String(), "withSession ran with the new session's ctx")
	assert.Equal(t, 0, int(b.call(map[string]any{"type": "get_messages"}).Get("data.messages.#").Int()))
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/mark nothing"}).Get("data.disposition").String())
	errFrame = b.until(10*time.Second, func(f gjson.Result) bool {
		return f.Get("type").String() == "extension_error" && f.Get("event").String() == "set_label"
	})
	assert.Equal(t, "<runtime>", errFrame[len(errFrame)-1].Get("extensionPath").String())
	assert.Equal(t, "Entry none not found", errFrame[len(errFrame)-1].Get("error").String(), "setLabel on an entry the session lacks")

	// session_before_switch can cancel a new session; shutdown and start
	// are told, with the files.
	notified := func(prefix string) string {
		f := b.until(10*time.Second, func(f gjson.Result) bool { return strings.HasPrefix(f.Get("message").String(), prefix) })
		return f[len(f)-1].Get("message").String()
	}
	before = b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String()
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/block"}).Get("data.disposition").String())
	r = b.call(map[string]any{"type": "new_session"})
	assert.True(t, r.Get("data.cancelled").Bool(), "session_before_switch cancelled it: %s", r.Raw)
	assert.Equal(t, before, b.call(map[string]any{"type": "get_state"}).Get("data.sessionId").String())
	r = b.call(map[string]any{"type": "new_session"})
	assert.False(t, r.Get("data.cancelled").Bool(), r.Raw)
	assert.Equal(t, "shutdown new to file", notified("shutdown "))
	assert.Equal(t, "start new from file", notified("start "))

	// ctx.reload: shutdown and start (reload), the extensions loaded again
	// (their commands still there).
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/reload-me"}).Get("data.disposition").String())
	assert.Equal(t, "shutdown reload to none", notified("shutdown "))
	assert.Equal(t, "start reload from none", notified("start "))
	assert.Contains(t, b.call(map[string]any{"type": "get_commands"}).Raw, "reload-me")

	// model_select and thinking_level_select.
	level := b.call(map[string]any{"type": "get_state"}).Get("data.thinkingLevel").String()
	require.True(t, b.call(map[string]any{"type": "set_thinking_level", "level": "high"}).Get("success").Bool())
	assert.Equal(t, "level "+level+" -> high", notified("level "))
	models := b.call(map[string]any{"type": "get_available_models"}).Get("data.models").Array()
	require.GreaterOrEqual(t, len(models), 2)
	cur := b.call(map[string]any{"type": "get_state"}).Get("data.model.id").String()
	other := models[0].Get("id").String()
	if other == cur {
		other = models[1].Get("id").String()
	}
	require.True(t, b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": other}).Get("success").Bool())
	assert.Regexp(t, ` -> `+regexp.QuoteMeta(other)+` \(set\)$`, notified("model "))

	// input: transformed, or handled with no run.
	frames = b.runPrompt("please transformed")
	assert.Equal(t, "transformed", deltaText(frames), "the input handler changed the prompt")
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(t, reqs)
	assert.Contains(t, reqs[len(reqs)-1].LastUserText(), "[[say:transformed]]")
	r = b.call(map[string]any{"type": "prompt", "message": "swallow"})
	assert.Equal(t, "handled", r.Get("data.disposition").String(), r.Raw)
	assert.False(t, b.call(map[string]any{"type": "get_state"}).Get("data.isStreaming").Bool(), "no run")

	// user_bash: a handler's result stands for running the command.
	r = b.call(map[string]any{"type": "bash", "command": "fake ls"})
	assert.Equal(t, "faked ls", r.Get("data.output").String(), r.Raw)
	r = b.call(map[string]any{"type": "bash", "command": "echo real"})
	assert.Equal(t, "real\n", r.Get("data.output").String(), r.Raw)

	// setActiveTools: the CLI's write tool off, the others kept.
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/no-write"}).Get("data.disposition").String())
	assert.Equal(t, fmt.Sprintf("all read,write,edit,bash,grep,find,ls; models %d", len(models)), notified("all "), "the CLI's tools and models")
	b.runPrompt("tools? [[say:fine]]")
	var offered []string
	for _, tool := range b.lastRequest().Get("tools.#.name").Array() {
		offered = append(offered, tool.String())
	}
	assert.NotContains(t, offered, "Write", "setActiveTools turned it off")
	assert.Contains(t, offered, "Read")
	assert.Contains(t, offered, "Bash")

	// A prompt naming no extension's command goes to the model.
	frames = b.runPrompt("/nothing [[say:plain]]")
	assert.Equal(t, "plain", deltaText(frames))
}

// TestExtensionToolHooks: the extensions' tool_call and tool_result
// handlers apply to the CLI's own tools (through the CLI's PreToolUse and
// PostToolUse hooks), as pi fires them for its own: a bash call blocked
// with a reason, one whose command a handler changed, and its output
// changed before the model gets it.
func TestExtensionToolHooks(t *testing.T) {
	t.Parallel()
	for _, tp := range []string{"stream", "pipe"} { // pipe: the relay's http hooks
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			extensionToolHooks(t, tp)
		})
	}
}

func extensionToolHooks(t *testing.T, transport string) {
	b := startExtBridge(t, "--transport", transport, "-e", extensionFixture(t, "commands.ts"), "--permission-mode", "acceptEdits")
	resultOf := func(frames []gjson.Result) gjson.Result {
		for _, f := range frames {
			if f.Get("type").String() == "tool_execution_end" {
				return f
			}
		}
		t.Fatalf("no tool_execution_end")
		return gjson.Result{}
	}
	end := resultOf(b.runPrompt(`[[tool:Bash:{"command":"rm -f nothing.txt","description":"remove"}]]`))
	assert.True(t, end.Get("isError").Bool(), end.Raw)
	assert.Contains(t, end.Get("result.content.0.text").String(), "no rm here", "blocked, the reason to the model")

	end = resultOf(b.runPrompt(`[[tool:Bash:{"command":"echo secret","description":"say"}]]`))
	assert.False(t, end.Get("isError").Bool(), end.Raw)
	assert.Contains(t, end.Get("result.content.0.text").String(), "public", "the changed command ran")
	assert.NotContains(t, end.Get("result.content.0.text").String(), "secret")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "[checked] public", "tool_result changed what the model got")
}

// TestExtensionCompaction: session_before_compact can cancel a manual
// compaction (pi's frames: compaction_start, compaction_end aborted, the
// command failing "Compaction cancelled"); session_compact tells of one
// that happened, with its entry.
func TestExtensionCompaction(t *testing.T) {
	t.Parallel()
	b := startExtBridge(t, "-e", extensionFixture(t, "commands.ts"))
	b.runPrompt("hello [[say:hi]]")
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/no-compact"}).Get("data.disposition").String())
	r := b.call(map[string]any{"type": "compact"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, "Compaction cancelled", r.Get("error").String())
	end := b.until(10*time.Second, isType("compaction_end"))
	assert.True(t, end[len(end)-1].Get("aborted").Bool(), end[len(end)-1].Raw)

	b.runPrompt("second [[say:two]]")
	b.sendJSON(map[string]any{"type": "compact", "id": "c2"})
	done := b.until(60*time.Second, isResponse("compact"))
	require.True(t, done[len(done)-1].Get("success").Bool(), done[len(done)-1].Raw)
	told := b.until(30*time.Second, func(f gjson.Result) bool { return strings.HasPrefix(f.Get("message").String(), "compacted ") })
	assert.Equal(t, "compacted compaction with summary", told[len(told)-1].Get("message").String())
}

// TestExtensionStatusOnSwitch: an extension's status stays on a session
// switch, as pi 1.6.0's RPC mode sends no clear (its interactive mode
// resets its footer; TestRealExtensions compares pi-mcp-adapter's frames
// across new_session): the extension clears it if it wants to.
func TestExtensionStatusOnSwitch(t *testing.T) {
	t.Parallel()
	b := startExtBridge(t, "-e", extensionFixture(t, "commands.ts"))
	require.Eventually(t, func() bool {
		return strings.Contains(b.call(map[string]any{"type": "get_commands"}).Raw, `"status"`)
	}, 30*time.Second, 100*time.Millisecond, "the extension's commands are listed once it loaded")
	status := func(f gjson.Result) bool {
		return f.Get("method").String() == "setStatus" && f.Get("statusKey").String() == "ext.status"
	}
	assert.Equal(t, "handled", b.call(map[string]any{"type": "prompt", "message": "/status busy"}).Get("data.disposition").String())
	set := b.until(10*time.Second, status)
	assert.Equal(t, "busy", set[len(set)-1].Get("statusText").String())
	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	b.runPrompt("after the switch [[say:ok]]")
	n := 0
	for _, f := range b.seen { // every frame read, those held by call too
		if status(gjson.ParseBytes(f)) {
			n++
		}
	}
	assert.Equal(t, 1, n, "the set, and no clear of the extension's status")
}
