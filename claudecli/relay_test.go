package claudecli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// relayFile is the file an argument of args names after flag.
func relayFile(t *testing.T, args []string, flag string) string {
	t.Helper()
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("no %s in %v", flag, args)
	return ""
}

func post(t *testing.T, url, body string) (int, gjson.Result) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, gjson.Parse(b.String())
}

// TestRelay: a turn's process reaches Host through the relay, as the
// stream transport's control protocol carries the same requests: its MCP
// servers' messages (mcp_message), the permission tool (can_use_tool,
// the answer as the tool's text) and the tool hooks (hook_callback).
// Nobody else gets in: the URLs' secret is in files only the user can
// read, and a request without a live turn's secret reaches nothing.
func TestRelay(t *testing.T) {
	r, err := startRelay(nil)
	require.NoError(t, err)
	defer r.close()
	var mu sync.Mutex
	var asked []ControlRequest
	block := make(chan struct{})
	host := func(ctx context.Context, req ControlRequest) (any, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		switch req.Subtype {
		case "mcp_message":
			if req.Request.Get("message.method").String() == "tools/call" {
				select { // held until the turn ends
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": req.Request.Get("message.id").Value(), "result": map[string]any{"tools": []any{}}}}, nil
		case "can_use_tool":
			return map[string]any{"behavior": "deny", "message": "no " + req.Request.Get("tool_name").String()}, nil
		case "hook_callback":
			return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny"}}, nil
		}
		return nil, nil
	}
	args, end, err := r.open(Config{Host: host, SDKServers: []string{"host"}, AskPermissions: true, ToolHooks: true, FastMode: true})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(args, " "), "--permission-prompt-tool mcp__claude-rpc__permission")
	assert.Contains(t, strings.Join(args, " "), "--allowedTools mcp__host")
	mcpFile, settingsFile := relayFile(t, args, "--mcp-config"), relayFile(t, args, "--settings")
	for _, a := range args {
		assert.NotContains(t, a, "http://", "no URL (and so no secret) on the command line")
	}
	if runtime.GOOS != "windows" {
		for _, f := range []string{mcpFile, settingsFile} {
			fi, err := os.Stat(f)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the user reads %s", f)
		}
		di, err := os.Stat(filepath.Dir(mcpFile))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}
	mcp, err := os.ReadFile(mcpFile)
	require.NoError(t, err)
	settings, err := os.ReadFile(settingsFile)
	require.NoError(t, err)
	assert.True(t, gjson.GetBytes(settings, "fastMode").Bool(), "the other settings kept in the one --settings")
	hostURL := gjson.GetBytes(mcp, "mcpServers.host.url").String()
	permURL := gjson.GetBytes(mcp, "mcpServers.claude-rpc.url").String()
	hookURL := gjson.GetBytes(settings, "hooks.PreToolUse.0.hooks.0.url").String()
	require.True(t, strings.HasPrefix(hostURL, "http://127.0.0.1:"), hostURL)

	// The turn's process.
	code, v := post(t, hostURL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, int64(1), v.Get("id").Int())
	code, _ = post(t, hostURL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Equal(t, http.StatusAccepted, code)
	code, v = post(t, permURL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"permission","arguments":{"tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"toolu_1"}}}`)
	assert.Equal(t, http.StatusOK, code)
	decision := gjson.Parse(v.Get("result.content.0.text").String())
	assert.Equal(t, "deny", decision.Get("behavior").String())
	assert.Equal(t, "no Bash", decision.Get("message").String())
	code, v = post(t, permURL, `{"jsonrpc":"2.0","id":3,"method":"server/discover"}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, int64(-32601), v.Get("error.code").Int(), "an unknown method is refused at once (the CLI probes)")
	code, v = post(t, hookURL, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{}}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "deny", v.Get("hookSpecificOutput.permissionDecision").String())
	mu.Lock()
	require.Len(t, asked, 4)
	assert.Equal(t, "mcp_message", asked[0].Subtype)
	assert.Equal(t, "host", asked[0].Request.Get("server_name").String())
	assert.Equal(t, "can_use_tool", asked[2].Subtype)
	assert.Equal(t, "toolu_1", asked[2].Request.Get("tool_use_id").String())
	assert.Equal(t, "hook_callback", asked[3].Subtype)
	assert.Equal(t, HookPreTool, asked[3].Request.Get("callback_id").String())
	n := len(asked)
	mu.Unlock()

	// Strangers: the port without the secret, a wrong secret, the right
	// one's first half.
	base := "http://" + r.addr
	secret := strings.Split(strings.TrimPrefix(hostURL, base+"/"), "/")[0]
	for _, u := range []string{base + "/mcp/host", base + "/", base + "/" + strings.Repeat("0", 64) + "/mcp/host",
		base + "/" + secret[:32] + "/mcp/host", base + "/" + secret + "x/mcp/host"} {
		code, _ := post(t, u, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		assert.Equal(t, http.StatusNotFound, code, u)
	}
	resp, err := http.Get(hostURL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	mu.Lock()
	assert.Len(t, asked, n, "nothing reached Host")
	mu.Unlock()

	// A call in flight ends with the turn; the turn's URLs and files are
	// gone after it.
	done := make(chan int)
	go func() {
		code, _ := post(t, hostURL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`)
		done <- code
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(asked) == n+1 }, 5*time.Second, 10*time.Millisecond)
	end()
	select {
	case code := <-done:
		assert.Equal(t, http.StatusOK, code, "answered (an error) once the turn ended")
	case <-time.After(5 * time.Second):
		t.Fatal("the call outlived its turn")
	}
	code, _ = post(t, hostURL, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	assert.Equal(t, http.StatusNotFound, code, "an ended turn's secret reaches nothing")
	assert.NoFileExists(t, mcpFile)
	assert.NoFileExists(t, settingsFile)
	close(block)
}
