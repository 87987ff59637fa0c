package extensions

import (
	"encoding/json"
	"reflect"

	"github.com/tidwall/gjson"
)

// ToolOutputText is the text of a CLI tool's output (a PostToolUse hook's
// tool_response) as the model gets it, which pi's tool_result handlers
// read, and how to put a changed text back in the tool's own shape (the
// CLI validates updatedToolOutput against it): a string as it is; Bash's
// {stdout, stderr, …}, the text in stdout; nil for the other shapes.
func ToolOutputText(resp gjson.Result) (string, func(string) any) {
	switch {
	case resp.Type == gjson.String:
		return resp.String(), func(t string) any { return t }
	case resp.IsObject() && resp.Get("stdout").Exists():
		text := resp.Get("stdout").String()
		if e := resp.Get("stderr").String(); e != "" {
			text += "\n" + e
		}
		return text, func(t string) any {
			var out map[string]any
			if json.Unmarshal([]byte(resp.Raw), &out) != nil {
				return t
			}
			out["stdout"], out["stderr"] = t, ""
			return out
		}
	}
	return resp.Raw, nil
}

// JSONEqual reports whether two JSON texts hold the same value (a
// tool_call handler's input against the call's).
func JSONEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
