//go:build !windows

package extensions

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// piEnv is an environment whose PATH starts with the pinned Node that
// scripts/install-pi16 installs beside pi 1.6.0 (installed first when
// missing), and the cache holding them.
func piEnv(t *testing.T) ([]string, string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "install-pi16")).Output()
	claudetest.Need(t, err == nil, "scripts/install-pi16 installs pi 1.6.0 and its Node (npm)")
	dir := strings.TrimSpace(string(out))
	env := append(os.Environ(), "PATH="+filepath.Join(dir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	return env, filepath.Dir(dir)
}

// recorder keeps what the host calls back with.
type recorder struct {
	mu       sync.Mutex
	tools    []Tool
	commands []Command
	ui       []UI
	errors   []Error
	actions  []Action
	notices  []string
}

func (r *recorder) callbacks() Callbacks {
	return Callbacks{
		Tools:    func(t []Tool) { r.mu.Lock(); r.tools = t; r.mu.Unlock() },
		Commands: func(c []Command) { r.mu.Lock(); r.commands = c; r.mu.Unlock() },
		UI:       func(u UI) { r.mu.Lock(); r.ui = append(r.ui, u); r.mu.Unlock() },
		Error:    func(e Error) { r.mu.Lock(); r.errors = append(r.errors, e); r.mu.Unlock() },
		Action: func(a Action) {
			r.mu.Lock()
			r.actions = append(r.actions, a)
			r.mu.Unlock()
			a.Reply(map[string]any{"cancelled": false}, nil)
		},
		Notice: func(level, text string) { r.mu.Lock(); r.notices = append(r.notices, level+": "+text); r.mu.Unlock() },
	}
}

// TestHostRunsPiExtensions: an extension in TypeScript pi's loader takes
// and Node's type stripping does not (an enum, a parameter property, an
// extensionless import of a .ts file, ./x.js for ./x.ts), importing what
// pi gives extensions (truncateHead, formatSize, Type.Unsafe,
// clampThinkingLevel), loads; its tool runs with its context (the theme,
// ctx.sessionManager), its command runs and calls the command context
// back (newSession), a throwing handler is an extension_error, and its
// flag is given.
func TestHostRunsPiExtensions(t *testing.T) {
	env, cache := piEnv(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "util.ts"), []byte(`
export enum Color { Red, Green }
export class Box { constructor(private n: number) {} get(): number { return this.n; } }
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more.ts"), []byte(`export const more: string = "more";`), 0o644))
	ext := filepath.Join(dir, "ext.ts")
	require.NoError(t, os.WriteFile(ext, []byte(`
import { truncateHead, formatSize, type ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { clampThinkingLevel } from "@mariozechner/pi-ai";
import { Color, Box } from "./util";
import { more } from "./more.js";
export default function (pi: ExtensionAPI) {
  pi.registerFlag("greeting", { type: "string", description: "what to say" });
  pi.registerTool({
    name: "probe", label: "Probe", description: "probes",
    parameters: Type.Object({ a: Type.String(), u: Type.Unsafe<string>({ type: "string" }) }),
    async execute(_id, params, _signal, _onUpdate, ctx) {
      const text = [params.a, new Box(Color.Green).get(), typeof truncateHead, formatSize(2048), typeof clampThinkingLevel, more,
        ctx.ui.theme.bold("b"), typeof ctx.sessionManager.getEntries, pi.getFlag("greeting")].join(" ");
      return { content: [{ type: "text", text }], details: {} };
    },
  });
  pi.registerCommand("again", { description: "starts over", handler: async (args, ctx) => {
    ctx.ui.notify("again " + args, "info");
    await ctx.newSession();
  } });
  pi.on("session_start", async () => { throw new Error("on purpose"); });
}
`), 0o644))
	var r recorder
	h := Start(Config{Paths: []string{ext}, NoExtensions: true, Dir: dir, Env: env, Cache: cache,
		Flags: map[string]any{"greeting": "hello", "nosuch": true}}, r.callbacks())
	defer h.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, h.Loaded(ctx, 30*time.Second), "loaded: %v", r.notices)

	r.mu.Lock()
	require.Len(t, r.tools, 1)
	assert.Equal(t, "probe", r.tools[0].Name)
	assert.JSONEq(t, `{"type":"object","required":["a","u"],"properties":{"a":{"type":"string"},"u":{"type":"string"}}}`, string(r.tools[0].Parameters))
	require.Len(t, r.commands, 1)
	assert.Equal(t, "again", r.commands[0].Name)
	assert.Equal(t, "extension", r.commands[0].Source)
	assert.Contains(t, string(r.commands[0].SourceInfo), ext)
	assert.Contains(t, r.notices, "error: extensions: Unknown option: --nosuch", "pi's diagnostic for a flag no extension registered")
	r.mu.Unlock()
	assert.Equal(t, []string{"greeting"}, h.Flags())
	assert.True(t, h.Handles("session_start"))

	v, err := h.CallTool(ctx, "probe", "t1", json.RawMessage(`{"a":"x","u":"y"}`), nil)
	require.NoError(t, err)
	assert.Regexp(t, `^x 1 function 2\.0KB function more \S*b\S* function hello$`, v.Get("content.0.text").String())
	assert.False(t, v.Get("isError").Bool())

	handled, err := h.RunCommand(ctx, "again", "now")
	require.NoError(t, err)
	assert.True(t, handled)
	handled, err = h.RunCommand(ctx, "nope", "")
	require.NoError(t, err)
	assert.False(t, handled)

	h.Event(json.RawMessage(`{"type":"session_start","reason":"startup"}`))
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.errors) == 1
	}, 10*time.Second, 20*time.Millisecond)
	r.mu.Lock()
	assert.Equal(t, Error{ExtensionPath: ext, Event: "session_start", Error: "on purpose"}, r.errors[0])
	require.NotEmpty(t, r.ui)
	assert.Equal(t, "notify", r.ui[0].Method)
	assert.Equal(t, "again now", r.ui[0].Fields.Get("message").String())
	require.Len(t, r.actions, 1)
	assert.Equal(t, "newSession", r.actions[0].Name)
	assert.True(t, r.actions[0].Awaited())
	r.mu.Unlock()
}

// TestHostWithoutNode: no node on PATH is a notice naming the minimum,
// and the host is gone at once.
func TestHostWithoutNode(t *testing.T) {
	var r recorder
	h := Start(Config{Paths: []string{"x.ts"}, Env: []string{"PATH=" + t.TempDir()}, Cache: t.TempDir()}, r.callbacks())
	defer h.Stop()
	assert.False(t, h.Loaded(context.Background(), 10*time.Second))
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.notices, 1)
	assert.Contains(t, r.notices[0], "error: pi extensions are not loaded (--extension x.ts, those pi's settings and places name): no node on PATH")
	assert.Contains(t, r.notices[0], MinNodeVersion)
}

// TestHostSurvivesBadExtensions: an extension that writes to stdout (at
// load and in a command), floods the host with notices and output, hangs
// in a tool and in a command, and ends its host: the host's lines stay
// whole, a hung call ends with its context (a tool's signal aborted) while
// other calls are answered, a flood is delivered whole, and when the host
// ends every call fails at once with ErrNotRunning, the bridge is told,
// and no node process is left in the extension's folder.
func TestHostSurvivesBadExtensions(t *testing.T) {
	env, cache := piEnv(t)
	dir := t.TempDir()
	ext := filepath.Join(dir, "bad.ts")
	require.NoError(t, os.WriteFile(ext, []byte(`
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
console.log("stdout at load: {\"type\":\"result\",\"id\":1}");
process.stdout.write("no line end");
export default function (pi: ExtensionAPI) {
  pi.registerTool({ name: "echo", label: "Echo", description: "echoes", parameters: Type.Object({ s: Type.String() }),
    async execute(_id, p) { return { content: [{ type: "text", text: p.s }], details: {} }; } });
  pi.registerTool({ name: "hang", label: "Hang", description: "hangs until aborted", parameters: Type.Object({}),
    execute: (_id, _p, signal) => new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))) ) });
  pi.registerCommand("hang", { description: "never returns", handler: () => new Promise(() => {}) });
  pi.registerCommand("flood", { description: "floods", handler: async (_args, ctx) => {
    for (let i = 0; i < 20000; i++) ctx.ui.notify("n" + i, "info");
    process.stdout.write("x".repeat(4 << 20) + "\n");
  } });
  pi.registerCommand("exit", { description: "ends its host", handler: async () => { process.exit(3); } });
}
`), 0o644))
	var r recorder
	h := Start(Config{Paths: []string{ext}, NoExtensions: true, Dir: dir, Env: env, Cache: cache}, r.callbacks())
	defer h.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.True(t, h.Loaded(ctx, 30*time.Second), "loaded despite its stdout: %v", r.notices)
	echo := func() string {
		v, err := h.CallTool(ctx, "echo", "e", json.RawMessage(`{"s":"still here"}`), nil)
		require.NoError(t, err)
		return v.Get("content.0.text").String()
	}
	assert.Equal(t, "still here", echo())

	// Hung: the call ends with its context; the others go on meanwhile.
	hung, stop := context.WithCancel(ctx)
	toolDone, cmdDone := make(chan error, 1), make(chan error, 1)
	go func() { _, err := h.CallTool(hung, "hang", "h", json.RawMessage(`{}`), nil); toolDone <- err }()
	go func() { _, err := h.RunCommand(hung, "hang", ""); cmdDone <- err }()
	assert.Equal(t, "still here", echo(), "answered while two calls hang")
	stop()
	assert.Error(t, <-toolDone)
	assert.Error(t, <-cmdDone)

	// Flooded: every notice arrives, the output goes to the log, and the
	// host's lines stay whole.
	handled, err := h.RunCommand(ctx, "flood", "")
	require.NoError(t, err)
	assert.True(t, handled)
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.ui) >= 20000
	}, 30*time.Second, 50*time.Millisecond)
	r.mu.Lock()
	assert.Equal(t, "n19999", r.ui[len(r.ui)-1].Fields.Get("message").String())
	r.mu.Unlock()
	assert.Equal(t, "still here", echo())

	// Its host ends: calls fail at once, the bridge hears it, nothing is
	// left running.
	_, err = h.RunCommand(ctx, "exit", "")
	assert.ErrorIs(t, err, ErrNotRunning)
	_, err = h.CallTool(ctx, "echo", "e2", json.RawMessage(`{"s":"x"}`), nil)
	assert.ErrorIs(t, err, ErrNotRunning)
	// The notice comes from the goroutine that saw the host exit, which
	// may fail the calls above before it gives the notice.
	assert.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.Contains(strings.Join(r.notices, "\n"), "the extension host ended")
	}, 10*time.Second, 20*time.Millisecond, "the bridge hears that the host ended")
	if runtime.GOOS == "linux" {
		assert.Empty(t, processesIn(t, dir), "no process left with the extension's folder as its cwd")
	}
}

// processesIn lists the pids of the processes whose working folder is dir
// (Linux: /proc).
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	var pids []string
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
