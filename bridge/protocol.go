package bridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// response is pi's RpcResponse. Key order matches pi's frames.
type response struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Type    string          `json:"type"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func okResponse(id json.RawMessage, command string, data any) response {
	return response{ID: id, Type: "response", Command: command, Success: true, Data: data}
}

func errResponse(id json.RawMessage, command, msg string) response {
	return response{ID: id, Type: "response", Command: command, Success: false, Error: msg}
}

// command is one parsed line from the host.
type command struct {
	raw  gjson.Result
	id   json.RawMessage // echoed as sent; nil when absent
	typ  string
	line []byte
}

// parseCommand parses one line. A line that is not a JSON object, or has no
// string "type", is an error meant for a "parse" response.
func parseCommand(line []byte) (command, error) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return command{}, fmt.Errorf("empty line")
	}
	if !gjson.ValidBytes(line) {
		return command{}, fmt.Errorf("not valid JSON: %s", excerpt(line))
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return command{}, fmt.Errorf("a command must be a JSON object, got %s", jsonKind(v))
	}
	c := command{raw: v, line: line}
	if id := v.Get("id"); id.Exists() && id.Type != gjson.Null {
		c.id = json.RawMessage(id.Raw)
	}
	t := v.Get("type")
	switch {
	case !t.Exists():
		return c, fmt.Errorf("the command has no \"type\"")
	case t.Type != gjson.String:
		return c, fmt.Errorf("\"type\" must be a string, got %s", jsonKind(t))
	}
	c.typ = t.String()
	return c, nil
}

// str returns a required string field, or an error naming it.
func (c command) str(field string) (string, error) {
	v := c.raw.Get(field)
	if !v.Exists() || v.Type == gjson.Null {
		return "", fmt.Errorf("%s: missing required field %q", c.typ, field)
	}
	if v.Type != gjson.String {
		return "", fmt.Errorf("%s: field %q must be a string, got %s", c.typ, field, jsonKind(v))
	}
	return v.String(), nil
}

// optStr returns an optional string field ("" when absent or null).
func (c command) optStr(field string) (string, error) {
	v := c.raw.Get(field)
	if !v.Exists() || v.Type == gjson.Null {
		return "", nil
	}
	return c.str(field)
}

func jsonKind(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.IsArray():
		return "an array"
	}
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	return "nothing"
}

// excerpt quotes the start of a bad line for an error message.
func excerpt(b []byte) string {
	const n = 80
	if len(b) > n {
		return fmt.Sprintf("%q… (%d bytes)", b[:n], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// piCommands are the commands of pi's protocol. Those the bridge does not
// handle yet are refused as not supported, not as unknown.
var piCommands = map[string]bool{
	"prompt": true, "steer": true, "follow_up": true, "abort": true, "abort_and_prompt": true,
	"new_session": true, "get_state": true, "get_messages": true, "set_model": true,
	"cycle_model": true, "get_available_models": true, "set_thinking_level": true,
	"cycle_thinking_level": true, "set_steering_mode": true, "set_follow_up_mode": true,
	"set_interrupt_mode": true, "compact": true, "set_auto_compaction": true,
	"set_auto_retry": true, "abort_retry": true, "bash": true, "abort_bash": true,
	"get_session_stats": true, "export_html": true, "switch_session": true, "branch": true,
	"fork": true, "get_branch_messages": true, "get_fork_messages": true, "clone": true,
	"get_last_assistant_text": true, "set_session_name": true, "get_commands": true,
	"set_todos": true, "set_host_tools": true,
}
