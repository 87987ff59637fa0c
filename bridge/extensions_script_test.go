//go:build !windows

package bridge

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

// TestExtHostScript runs the embedded host script in node on an extension
// that asks a dialog in its tool, uses TypeBox's builders and StringEnum,
// and calls an API method the host leaves out: the tool's schema is JSON
// Schema, the dialog's answer reaches the tool, and the left-out method
// is a no-op. It needs node on PATH, which the Windows test run (Wine) has
// not: the extension host is tested on Linux and macOS.
func TestExtHostScript(t *testing.T) {
	_, err := exec.LookPath("node")
	claudetest.Need(t, err == nil, "node on PATH runs the extension host")
	dir := t.TempDir()
	ext := filepath.Join(dir, "ask.ts")
	require.NoError(t, os.WriteFile(ext, []byte(`
import { Type } from "typebox";
import { StringEnum } from "@mariozechner/pi-ai";
export default function (pi) {
  pi.registerFlag("x", {});
  pi.registerTool({
    name: "ask", label: "Ask",
    parameters: Type.Object({ n: Type.Integer(), k: StringEnum(["a", "b"]), l: Type.Array(Type.Boolean()), o: Type.Optional(Type.Null()) }),
    async execute(id, params, signal, onUpdate, ctx) {
      const yes = await ctx.ui.confirm("Sure?", "Really");
      return { content: [{ type: "text", text: "answer " + yes + " " + params.n }] };
    },
  });
}
`), 0o644))
	tools := make(chan []hostTool, 2)
	ui := make(chan gjson.Result, 2)
	h, err := startExtHost([]string{ext}, dir, nil, slog.New(slog.DiscardHandler), func(ts []hostTool) { tools <- ts }, func(m gjson.Result) { ui <- m })
	require.NoError(t, err)
	defer h.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.True(t, h.loaded(ctx))
	ts := <-tools
	require.Len(t, ts, 1)
	assert.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer"},"k":{"type":"string","enum":["a","b"]},
		"l":{"type":"array","items":{"type":"boolean"}},"o":{"type":"null"}},"required":["n","k","l"]}`, string(ts[0].Parameters))
	assert.Equal(t, "Ask", ts[0].Description, "no description: the label")

	go func() {
		m := <-ui
		assert.Equal(t, "confirm", m.Get("method").String())
		assert.Equal(t, "Really", m.Get("message").String())
		_ = h.send(map[string]any{"type": "ui_response", "uiId": m.Get("uiId").Int(), "confirmed": true})
	}()
	v, err := h.call(ctx, "tool_call", map[string]any{"name": "ask", "params": map[string]any{"n": 7}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "answer true 7", v.Get("content.0.text").String())
	assert.False(t, v.Get("isError").Bool())

	v, err = h.call(ctx, "tool_call", map[string]any{"name": "nope"}, nil)
	assert.ErrorContains(t, err, "no extension registered a tool named nope")
}
