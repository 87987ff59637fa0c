//go:build linux

package htmlexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserTimeout bounds one Chromium run; a cold start on a loaded 2-core
// machine takes a few seconds.
const browserTimeout = 90 * time.Second

// TestBrowserRendersExport opens an export in headless Chromium and checks
// what the browser made of it, not only our source: hostile message text is
// a text node in the DOM (serialised back as &lt;...), no element came from
// it, and the page paints something that is not a blank canvas.
func TestBrowserRendersExport(t *testing.T) {
	chromium := claudetest.Chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "session.html")
	msgs := []json.RawMessage{
		json.RawMessage(mustJSON(t, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "marker-user " + hostile},
			map[string]any{"type": "image", "data": png1x1, "mimeType": "image/png"},
		}})),
		json.RawMessage(mustJSON(t, map[string]any{"role": "assistant", "model": "m", "stopReason": "toolUse", "content": []any{
			map[string]any{"type": "thinking", "thinking": "marker-thinking"},
			map[string]any{"type": "text", "text": "marker-code\n```\nx := 1 < 2\n```"},
			map[string]any{"type": "toolCall", "id": "t1", "name": "marker-tool", "arguments": map[string]any{"command": "</pre><b>y</b>"}},
		}})),
		json.RawMessage(`{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"marker-result"}],"isError":true}`),
		json.RawMessage(`{"role":"assistant","content":[],"stopReason":"error","errorMessage":"marker-error"}`),
	}
	f, err := os.Create(page)
	require.NoError(t, err)
	require.NoError(t, Render(context.Background(), f, "marker-title </title><b>t</b>", msgs))
	require.NoError(t, f.Close())

	t.Run("dom", func(t *testing.T) {
		dom, err := runBrowser(t, chromium, "--dump-dom", "file://"+page)
		require.NoError(t, err)
		got := string(dom)
		require.Contains(t, got, "</html>", "a whole document was dumped")
		// A text node is serialised with < and > escaped, so these prove the
		// browser read the hostile text as text.
		assert.Contains(t, got, hostileEscaped)
		assert.Contains(t, got, "<title>marker-title &lt;/title&gt;&lt;b&gt;t&lt;/b&gt;</title>")
		assert.Contains(t, got, "<h1>marker-title &lt;/title&gt;&lt;b&gt;t&lt;/b&gt;</h1>")
		assert.Contains(t, got, "&lt;/pre&gt;&lt;b&gt;y&lt;/b&gt;")
		// No element came from message text: the page has no <b>, <script>
		// or onerror anywhere, and exactly one <img>, ours.
		assert.NotContains(t, got, "<b>")
		assert.NotContains(t, got, "<script")
		assert.NotContains(t, got, "data-pwned", "a script from message text ran")
		assert.Equal(t, 1, strings.Count(got, "<img"))
		assert.Contains(t, got, `<img src="data:image/png;base64,`+png1x1+`"`)
		assert.Contains(t, got, `<details class="thinking"><summary>Thinking</summary><div class="text">marker-thinking</div></details>`)
		assert.Contains(t, got, "<pre><code>x := 1 &lt; 2</code></pre>")
		assert.Contains(t, got, `class="msg toolResult error"`)
		assert.Contains(t, got, `<div class="errmsg">marker-error</div>`)
		assert.Equal(t, 4, strings.Count(got, `<section class="msg `))
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(dir, "shot.png")
		_, err := runBrowser(t, chromium, "--screenshot="+shot, "--window-size=1200,2000", "file://"+page)
		require.NoError(t, err)
		r, err := os.Open(shot)
		require.NoError(t, err, "no screenshot written")
		defer r.Close()
		img, err := png.Decode(r)
		require.NoError(t, err)
		b := img.Bounds()
		assert.Equal(t, image.Pt(1200, 2000), b.Size())
		colors := map[[4]uint32]int{}
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, a := img.At(x, y).RGBA()
				colors[[4]uint32{r, g, bl, a}]++
			}
		}
		t.Logf("screenshot %v, %d distinct colours", b.Size(), len(colors))
		// Text, borders and the tinted message boxes give hundreds of colours;
		// a page that failed to render is one flat colour.
		assert.Greater(t, len(colors), 10, "screenshot is (nearly) one flat colour")
	})
}

// TestRunBrowserKillsOnTimeout checks the timeout path of runBrowser with a
// stand-in that ignores its arguments and forks a grandchild, as Chromium
// does: both must be gone when runBrowser returns.
func TestRunBrowserKillsOnTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	script := fmt.Sprintf(`sleep 300 & echo $$ $! > %s; wait`, pidFile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := runBrowserCtx(ctx, t, "/bin/sh", "-c", script)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 20*time.Second)
	pids, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var sh, sleep int
	_, err = fmt.Sscan(string(pids), &sh, &sleep)
	require.NoError(t, err)
	for _, pid := range []int{sh, sleep} {
		assert.Eventually(t, func() bool {
			return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		}, 5*time.Second, 50*time.Millisecond, "pid %d outlived the timeout", pid)
	}
}

// runBrowser runs headless Chromium with a fresh profile and the flags that
// keep it off the network, and returns its stdout.
func runBrowser(t *testing.T, chromium string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	profile := t.TempDir()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
	}
	return runBrowserCtx(ctx, t, chromium, append(base, args...)...)
}

// runBrowserCtx runs a command in its own process group and, when ctx ends
// or the command returns, kills that group by its pid, so neither Chromium
// nor the renderer and helper processes it forks outlive the test. The group
// and its kill on cancel are claudecli's, as for the bridge's bash command.
func runBrowserCtx(ctx context.Context, t *testing.T, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	claudecli.PrepareGroup(cmd)
	err := cmd.Start()
	if err != nil {
		return nil, err
	}
	err = cmd.Wait()
	// Whatever is left in the group (a crash handler, a zygote) goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s: %w (stderr: %s)", name, ctxErr, tail(stderr.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w (stderr: %s)", name, err, tail(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}
