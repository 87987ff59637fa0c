//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// lastRequest is the body of the fake API's last Messages request.
func (b *rpcProc) lastRequest() gjson.Result {
	b.t.Helper()
	reqs := b.srv.MessagesRequests()
	require.NotEmpty(b.t, reqs)
	return gjson.ParseBytes(reqs[len(reqs)-1].Body)
}

func TestModelsAndCommandsFromTheCLI(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--transport", "pipe")
	models := b.call(map[string]any{"type": "get_available_models"})
	require.True(t, models.Get("success").Bool(), models.Raw)
	byID := map[string]gjson.Result{}
	for _, m := range models.Get("data.models").Array() {
		assert.Equal(t, "anthropic", m.Get("provider").String())
		assert.NotContains(t, byID, m.Get("id").String(), "one entry per model")
		byID[m.Get("id").String()] = m
	}
	// What CLI 2.1.328 offers: its default (Opus 5.5) and the aliases.
	require.Contains(t, byID, "claude-opus-5-5", models.Raw)
	assert.Equal(t, "Opus", byID["claude-opus-5-5"].Get("name").String())
	assert.Equal(t, 4.0, byID["claude-opus-5-5"].Get("cost.input").Float())
	assert.Equal(t, 20.0, byID["claude-opus-5-5"].Get("cost.output").Float())
	assert.Contains(t, byID, "claude-sonnet-5-5")

	cmds := b.call(map[string]any{"type": "get_commands"})
	require.True(t, cmds.Get("success").Bool(), cmds.Raw)
	names := map[string]bool{}
	for _, c := range cmds.Get("data.commands").Array() {
		assert.Equal(t, "prompt", c.Get("source").String())
		names[c.Get("name").String()] = true
	}
	assert.True(t, names["compact"] && names["model"], "the CLI's built-in commands are listed: %s", cmds.Raw)
	assert.Empty(t, b.srv.MessagesRequests(), "asking the CLI costs no API call")
}

// TestCommandSources: get_commands tells where each command comes from, in
// pi's sourceInfo: a project's command, a user's skill, a skill given with
// pi's --skill, the CLI's own commands.
func TestCommandSources(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	home, dir := t.TempDir(), t.TempDir()
	projectCmd := filepath.Join(dir, ".claude", "commands", "ship.md")
	userSkill := filepath.Join(home, ".claude", "skills", "tidy", "SKILL.md")
	flagSkill := filepath.Join(t.TempDir(), "lint", "SKILL.md")
	mkfile(t, projectCmd, "---\ndescription: Ship it\n---\nShip.")
	mkfile(t, userSkill, "---\nname: tidy\ndescription: Tidy up\n---\nTidy.")
	mkfile(t, flagSkill, "---\nname: lint\ndescription: Lint\n---\nLint.")
	b := startBridgeWith(t, bridgeOpts{srv: srv, home: home, dir: dir, env: []string{"XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}},
		"--skill", filepath.Dir(flagSkill))
	cmds := b.call(map[string]any{"type": "get_commands"})
	require.True(t, cmds.Get("success").Bool(), cmds.Raw)
	byName, kind := map[string]gjson.Result{}, map[string]string{}
	for _, c := range cmds.Get("data.commands").Array() {
		byName[c.Get("name").String()] = c.Get("sourceInfo")
		kind[c.Get("name").String()] = c.Get("source").String()
		for _, field := range []string{"path", "source", "scope", "origin"} {
			assert.True(t, c.Get("sourceInfo."+field).Exists(), "%s: sourceInfo.%s", c.Get("name"), field)
		}
	}
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		return r
	}
	// The values pi 1.5.2 gives its own user's, project's, --skill's and
	// built-in commands.
	for name, want := range map[string]string{
		"ship":    fmt.Sprintf(`{"path":%q,"source":"auto","scope":"project","origin":"top-level","baseDir":%q}`, real(projectCmd), real(filepath.Join(dir, ".claude"))),
		"tidy":    fmt.Sprintf(`{"path":%q,"source":"auto","scope":"user","origin":"top-level","baseDir":%q}`, real(userSkill), real(filepath.Join(home, ".claude"))),
		"lint":    fmt.Sprintf(`{"path":%q,"source":"local","scope":"temporary","origin":"top-level","baseDir":%q}`, real(flagSkill), filepath.Dir(real(flagSkill))),
		"compact": `{"path":"builtin:compact","source":"builtin","scope":"temporary","origin":"top-level"}`,
	} {
		require.Contains(t, byName, name, cmds.Raw)
		assert.JSONEq(t, want, byName[name].Raw, name)
	}
	assert.Equal(t, map[string]string{"ship": "prompt", "tidy": "skill", "lint": "skill", "compact": "prompt"},
		map[string]string{"ship": kind["ship"], "tidy": kind["tidy"], "lint": kind["lint"], "compact": kind["compact"]}, "pi's source")
}

func TestSetModel(t *testing.T) { forStreamAndPipe(t, testSetModel) }

func testSetModel(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("first [[say:one]]")
	assert.Equal(t, "claude-opus-5-5", b.lastRequest().Get("model").String())

	resp := b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": "sonnet"})
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.Equal(t, "claude-sonnet-5-5", resp.Get("data.id").String())
	assert.Equal(t, "claude-sonnet-5-5", b.call(map[string]any{"type": "get_state"}).Get("data.model.id").String())
	b.runPrompt("second [[say:two]]")
	assert.Equal(t, "claude-sonnet-5-5", b.lastRequest().Get("model").String(), "the next turn runs the new model")
	assert.Contains(t, b.lastRequest().Get("messages").Raw, "first [[say:one]]", "same conversation")

	for _, bad := range []map[string]any{
		{"type": "set_model", "provider": "openai", "modelId": "gpt-5"},
		{"type": "set_model", "provider": "anthropic", "modelId": "claude-nonexistent-1"},
		{"type": "set_model", "provider": "anthropic"},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
	r := b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": "claude-nonexistent-1"})
	assert.Contains(t, r.Get("error").String(), "claude-opus-5-5", "the error lists the known models")
	assert.Equal(t, "claude-sonnet-5-5", b.call(map[string]any{"type": "get_state"}).Get("data.model.id").String(), "a refused change changes nothing")

	cyc := b.call(map[string]any{"type": "cycle_model"})
	require.True(t, cyc.Get("success").Bool(), cyc.Raw)
	next := cyc.Get("data.model.id").String()
	assert.NotEqual(t, "claude-sonnet-5-5", next)
	assert.Equal(t, "medium", cyc.Get("data.thinkingLevel").String())
	b.runPrompt("third [[say:three]]")
	assert.Equal(t, next, b.lastRequest().Get("model").String())
}

func TestThinkingLevel(t *testing.T) { forStreamAndPipe(t, testThinkingLevel) }

func testThinkingLevel(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	assert.Equal(t, "medium", b.call(map[string]any{"type": "get_state"}).Get("data.thinkingLevel").String())
	b.runPrompt("first [[say:one]]")
	assert.Equal(t, "medium", b.lastRequest().Get("output_config.effort").String(), "the CLI's default effort")

	require.True(t, b.call(map[string]any{"type": "set_thinking_level", "level": "high"}).Get("success").Bool())
	assert.Equal(t, "high", b.call(map[string]any{"type": "get_state"}).Get("data.thinkingLevel").String())
	b.runPrompt("second [[say:two]]")
	assert.Equal(t, "high", b.lastRequest().Get("output_config.effort").String())

	cyc := b.call(map[string]any{"type": "cycle_thinking_level"})
	assert.Equal(t, "xhigh", cyc.Get("data.level").String(), cyc.Raw)
	b.runPrompt("third [[say:three]]")
	assert.Equal(t, "xhigh", b.lastRequest().Get("output_config.effort").String())

	for _, bad := range []map[string]any{
		{"type": "set_thinking_level", "level": "extreme"},
		{"type": "set_thinking_level"},
		{"type": "set_thinking_level", "level": 3},
	} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.NotEmpty(t, r.Get("error").String())
	}
	assert.Equal(t, "xhigh", b.call(map[string]any{"type": "get_state"}).Get("data.thinkingLevel").String())
}

func TestCompact(t *testing.T) { forStreamAndPipe(t, testCompact) }

func testCompact(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("[[bash:echo one]]")
	b.runPrompt("second [[say:two]]")
	before := b.lastRequest()

	b.sendJSON(map[string]any{"type": "compact", "id": "c1", "customInstructions": "keep it short"})
	var resp gjson.Result
	for _, f := range b.until(60*time.Second, isResponse("compact")) {
		assert.NotContains(t, []string{"agent_start", "message_start"}, f.Get("type").String(), "compact shows no run")
		resp = f
	}
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.Contains(t, resp.Get("data.summary").String(), "summary")
	assert.Positive(t, resp.Get("data.tokensBefore").Int())
	assert.NotEmpty(t, resp.Get("data.firstKeptEntryId").String())
	assert.Contains(t, b.lastRequest().Raw, "keep it short", "the instructions reached the summarizing call")
	assert.False(t, b.call(map[string]any{"type": "get_state"}).Get("data.isCompacting").Bool())

	b.runPrompt("third [[say:three]]")
	// The next request carries the summary instead of the turns. (Its
	// bytes need not shrink here: the fake API's summary quotes the whole
	// summarizing prompt.)
	after := b.lastRequest()
	assert.Contains(t, before.Get("messages").Raw, `"tool_use"`)
	assert.NotContains(t, after.Get("messages").Raw, `"tool_use"`, "the tool call is summarized away")
	assert.Less(t, len(after.Get("messages").Array()), len(before.Get("messages").Array()))
	assert.Contains(t, after.Get("messages").Raw, "This session is being continued")
}

// TestHandoff: omp's handoff is the CLI's compaction told to write a
// handoff document: the summarizing call gets those instructions and the
// host's, the answer is omp's {} (no savedPath), the next turn carries the
// document instead of the turns; refused while a prompt streams, with
// omp's words.
func TestHandoff(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	b.runPrompt("[[bash:echo one]]")
	b.sendJSON(map[string]any{"type": "handoff", "id": "h1", "customInstructions": "mention the echo"})
	frames := b.until(60*time.Second, isResponse("handoff"))
	resp := frames[len(frames)-1]
	require.True(t, resp.Get("success").Bool(), resp.Raw)
	assert.JSONEq(t, `{}`, resp.Get("data").Raw)
	assert.True(t, slices.ContainsFunc(frames, isType("compaction_end")), "shown as a compaction")
	summarize := b.lastRequest().Raw
	assert.Contains(t, summarize, "handoff document")
	assert.Contains(t, summarize, "mention the echo")
	b.runPrompt("next [[say:two]]")
	assert.NotContains(t, b.lastRequest().Get("messages").Raw, `"tool_use"`, "the turns are handed off")

	b.startSlowPrompt("[[slow:200]]")
	r := b.call(map[string]any{"type": "handoff"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, "Cannot hand off while a response is in progress", r.Get("error").String())
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	b.until(15*time.Second, isResponse("abort"))
	require.True(t, b.call(map[string]any{"type": "new_session"}).Get("success").Bool())
	r = b.call(map[string]any{"type": "handoff"})
	assert.Equal(t, "Nothing to hand off (no messages yet)", r.Get("error").String(), r.Raw)
}

func TestCompactErrors(t *testing.T) {
	t.Parallel()
	b := startBridge(t, "--transport", "stream")
	r := b.call(map[string]any{"type": "compact", "customInstructions": 5})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	b.startSlowPrompt("[[slow:200]]")
	r = b.call(map[string]any{"type": "compact"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Contains(t, r.Get("error").String(), "busy")
	b.sendJSON(map[string]any{"type": "abort", "id": "ab"})
	b.until(15*time.Second, isResponse("abort"))
	r = b.call(map[string]any{"type": "new_session"})
	require.True(t, r.Get("success").Bool())
	r = b.call(map[string]any{"type": "compact"})
	assert.False(t, r.Get("success").Bool(), "nothing to compact in a new session: %s", r.Raw)
	b.runPrompt("still fine [[say:ok]]")
}

func TestAutoCompactionEvents(t *testing.T) {
	t.Parallel()
	srv := claudetest.Start(t)
	// The CLI compacts once the context passes 1% of the window.
	b := startBridgeWith(t, bridgeOpts{srv: srv, env: []string{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=1"}}, "--transport", "stream")
	b.runPrompt("[[bash:echo one]]")
	var start, end gjson.Result
	for i := 0; i < 3 && !end.Exists(); i++ {
		for _, f := range b.runPrompt("more [[say:fine]]") {
			switch f.Get("type").String() {
			case "compaction_start":
				start = f
			case "compaction_end":
				if f.Get("result").IsObject() {
					end = f
				}
			}
		}
	}
	require.True(t, end.Exists(), "the CLI compacted on its own")
	assert.Equal(t, "threshold", start.Get("reason").String())
	assert.Contains(t, end.Get("result.summary").String(), "summary")
	assert.Positive(t, end.Get("result.tokensBefore").Int())
	assert.False(t, end.Get("aborted").Bool())

	// Turned off, the CLI does not compact.
	require.True(t, b.call(map[string]any{"type": "set_auto_compaction", "enabled": false}).Get("success").Bool())
	assert.False(t, b.call(map[string]any{"type": "get_state"}).Get("data.autoCompactionEnabled").Bool())
	for i := 0; i < 2; i++ {
		for _, f := range b.runPrompt("again [[say:fine]]") {
			assert.NotEqual(t, "compaction_start", f.Get("type").String())
		}
	}
	r := b.call(map[string]any{"type": "set_auto_compaction", "enabled": "no"})
	assert.False(t, r.Get("success").Bool(), r.Raw)
}

// TestFastMode: omp's set_fast_mode turns the CLI's fast mode on (its API
// requests then ask for speed "fast") and off again, from the next turn,
// on the running process (stream) or the next one (pipe, pty); refused,
// with omp's words, for a model the CLI says has none.
func TestFastMode(t *testing.T) { forStreamAndPipe(t, testFastMode) }

func testFastMode(t *testing.T, tp string) {
	b := startBridge(t, "--transport", tp)
	b.runPrompt("first [[say:one]]")
	assert.False(t, b.lastRequest().Get("speed").Exists(), "no fast mode unless asked: %s", b.lastRequest().Get("speed").Raw)
	st := b.call(map[string]any{"type": "get_state"})
	assert.False(t, st.Get("data.fastModeEnabled").Bool())
	assert.False(t, st.Get("data.fastModeActive").Bool())

	on := b.call(map[string]any{"type": "set_fast_mode", "enabled": true})
	require.True(t, on.Get("success").Bool(), on.Raw)
	assert.True(t, on.Get("data.enabled").Bool())
	b.runPrompt("second [[say:two]]")
	assert.Equal(t, "fast", b.lastRequest().Get("speed").String())
	st = b.call(map[string]any{"type": "get_state"})
	assert.True(t, st.Get("data.fastModeEnabled").Bool())
	assert.True(t, st.Get("data.fastModeActive").Bool(), "the CLI's result said fast_mode_state on")

	off := b.call(map[string]any{"type": "set_fast_mode", "enabled": false})
	require.True(t, off.Get("success").Bool(), off.Raw)
	assert.False(t, off.Get("data.active").Bool())
	b.runPrompt("third [[say:three]]")
	assert.NotEqual(t, "fast", b.lastRequest().Get("speed").String())

	require.True(t, b.call(map[string]any{"type": "set_model", "provider": "anthropic", "modelId": "haiku"}).Get("success").Bool())
	r := b.call(map[string]any{"type": "set_fast_mode", "enabled": true})
	assert.False(t, r.Get("success").Bool(), r.Raw)
	assert.Equal(t, "Fast mode is unavailable for the current model.", r.Get("error").String())
	for _, bad := range []map[string]any{{"type": "set_fast_mode"}, {"type": "set_fast_mode", "enabled": "yes"}} {
		r := b.call(bad)
		assert.False(t, r.Get("success").Bool(), r.Raw)
		assert.Contains(t, r.Get("error").String(), "enabled")
	}
}
