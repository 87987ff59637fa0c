package bridge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/transform"
)

// The protocol reference: every frame claude-rpc writes, the fields it
// fills, and (in the descriptions) what it cannot fill and why. One table
// serves both as the JSON Schema document (`claude-rpc schema`,
// testdata/protocol/schema.json) and as the check the end-to-end tests run
// on every frame they read, so a frame whose shape drifts fails the suite.
// Objects the bridge marshals from plain structs are described from the Go
// types by reflection; the rest (events and content blocks, which have
// hand-written encoders) are listed here, next to nothing else.

// field is one key of an object.
type field struct {
	name     string
	kind     string // string, integer, number, boolean, object, array, any
	ref      string // the definition of an object, or of an array's items
	required bool
	nullable bool
	doc      string
}

// object is the shape of a frame or a definition. open objects may hold
// keys not listed (tool arguments, details).
type object struct {
	doc    string
	fields []field
	open   bool
}

func req(name, kind, doc string) field {
	return field{name: name, kind: kind, required: true, doc: doc}
}
func opt(name, kind, doc string) field { return field{name: name, kind: kind, doc: doc} }
func ref(name, def string, required bool) field {
	return field{name: name, kind: "object", ref: def, required: required}
}
func refs(name, def string, required bool) field {
	return field{name: name, kind: "array", ref: def, required: required}
}

// message is pi's message, the union of its roles' fields.
var messageShape = object{doc: "pi's AgentMessage: role user (content, timestamp), assistant (content, api, provider, model, usage, stopReason, errorMessage?, responseId?, timestamp) or toolResult (toolCallId, toolName, content, details?, isError, timestamp). The CLI does not say which cache tier a token used, nor prices: usage.cost is zero but for total, set on a run's last message from the CLI's total_cost_usd.",
	fields: []field{req("role", "string", "user, assistant or toolResult"), refs("content", "Content", true),
		opt("api", "string", "anthropic-messages"), opt("provider", "string", "anthropic"), opt("model", "string", ""),
		ref("usage", "Usage", false), opt("stopReason", "string", "stop, length, toolUse, error or aborted"),
		opt("errorMessage", "string", ""), opt("responseId", "string", "the API's message id"),
		opt("toolCallId", "string", ""), opt("toolName", "string", ""),
		{name: "details", kind: "any", doc: "the CLI's structured tool result (e.g. Bash stdout/stderr)"},
		opt("isError", "boolean", ""), req("timestamp", "integer", "Unix milliseconds")}}

var contentShape = object{doc: "A content block: text {text}, thinking {thinking}, toolCall {id, name, arguments}, image {data, mimeType}. Thinking arrives whole: the CLI relays no thinking deltas.",
	fields: []field{req("type", "string", "text, thinking, toolCall or image"), opt("text", "string", ""),
		opt("thinking", "string", ""), opt("id", "string", ""), opt("name", "string", ""),
		{name: "arguments", kind: "object", doc: "the tool's input", ref: ""}, opt("data", "string", "base64"),
		opt("mimeType", "string", "")}}

var assistantEventShape = object{doc: "pi's AssistantMessageEvent: type, contentIndex, delta (the *_delta types), content (the *_end types), toolCall (toolcall_end), partial (the message so far).",
	fields: []field{req("type", "string", "text_start, text_delta, text_end, thinking_start, thinking_delta, thinking_end, toolcall_start, toolcall_delta, toolcall_end"),
		opt("contentIndex", "integer", ""), opt("delta", "string", ""), opt("content", "string", ""),
		ref("toolCall", "Content", false), ref("partial", "Message", false)}}

// events are the event frames.
var events = map[string]object{
	transform.EventAgentStart:         {},
	transform.EventAgentEnd:           {fields: []field{refs("messages", "Message", true)}},
	transform.EventTurnStart:          {},
	transform.EventTurnEnd:            {fields: []field{ref("message", "Message", true), refs("toolResults", "Message", true)}},
	transform.EventMessageStart:       {fields: []field{ref("message", "Message", true)}},
	transform.EventMessageUpdate:      {fields: []field{ref("assistantMessageEvent", "AssistantMessageEvent", true), ref("message", "Message", true)}},
	transform.EventMessageEnd:         {fields: []field{ref("message", "Message", true)}},
	transform.EventToolExecutionStart: {fields: []field{req("toolCallId", "string", ""), req("toolName", "string", ""), {name: "args", kind: "object", required: true}}},
	"tool_execution_update": {doc: "a host tool's progress (host_tool_update)", fields: []field{req("toolCallId", "string", ""), req("toolName", "string", ""),
		{name: "args", kind: "object", required: true}, {name: "partialResult", kind: "object", required: true}}},
	transform.EventToolExecutionEnd:    {fields: []field{req("toolCallId", "string", ""), req("toolName", "string", ""), ref("result", "ToolResult", true), req("isError", "boolean", "")}},
	transform.EventAutoRetryStart:      {doc: "the CLI's own API retry (its failed attempts are not shown)", fields: []field{req("attempt", "integer", ""), req("maxAttempts", "integer", ""), req("delayMs", "integer", ""), req("errorMessage", "string", "")}},
	transform.EventAutoRetryEnd:        {fields: []field{req("success", "boolean", ""), req("attempt", "integer", ""), opt("finalError", "string", "")}},
	transform.EventAutoCompactionStart: {fields: []field{req("reason", "string", "threshold: the CLI does not say overflow apart")}},
	transform.EventAutoCompactionEnd: {fields: []field{{name: "result", kind: "object", ref: "Compaction", required: true, nullable: true},
		req("aborted", "boolean", ""), req("willRetry", "boolean", "always false: the CLI compacts before the call, never retries one"), opt("errorMessage", "string", "")}},
	"extension_ui_request": {doc: "a question for the host (--ask): answer with extension_ui_response", fields: []field{req("id", "string", "ui_N"),
		req("method", "string", "select or input"), req("title", "string", ""), opt("message", "string", ""),
		{name: "options", kind: "array"}, opt("placeholder", "string", ""), opt("timeout", "integer", "milliseconds")}},
	"host_tool_call":   {fields: []field{req("id", "string", "host_N"), req("toolCallId", "string", ""), req("toolName", "string", ""), {name: "arguments", kind: "object", required: true}}},
	"host_tool_cancel": {fields: []field{req("id", "string", ""), req("targetId", "string", "the host_tool_call's id")}},
}

// responseData are the data of the responses that carry some.
var responseData = map[string]string{
	"get_state": "State", "get_session_stats": "SessionStats", "bash": "BashResult",
	"set_model": "Model", "compact": "Compaction",
}

// definitions are the named object shapes.
func definitions() map[string]object {
	return map[string]object{
		"Message": messageShape, "Content": contentShape, "AssistantMessageEvent": assistantEventShape,
		"Usage":             describe(reflect.TypeFor[transform.Usage](), "token counts the API reported; cost as Message says"),
		"Cost":              describe(reflect.TypeFor[transform.Cost](), ""),
		"ToolResult":        {fields: []field{refs("content", "Content", true), {name: "details", kind: "any"}}},
		"Compaction":        describe(reflect.TypeFor[transform.Compaction](), "firstKeptEntryId is the compact_boundary's uuid: the CLI names no first kept entry"),
		"CompactionDetails": describe(reflect.TypeFor[transform.CompactionDetails](), ""),
		"Model":             describe(reflect.TypeFor[modelInfo](), "cost: input and output per Mtok from the CLI's model description, cache prices unknown (0); contextWindow and maxTokens as the CLI reported them, else 200000 / 32000"),
		"ModelCost":         describe(reflect.TypeFor[modelCost](), ""),
		"State":             describe(reflect.TypeFor[stateData](), "pi's RpcSessionState plus interruptMode, queuedMessageCount, todoPhases (omp/xcsh) and transport (claude-rpc's)"),
		"TodoPhase":         describe(reflect.TypeFor[transform.TodoPhase](), ""),
		"TodoTask":          describe(reflect.TypeFor[transform.TodoTask](), "notes is the CLI task's description, activeForm (claude-rpc's) its present-continuous form"),
		"BashResult":        describe(reflect.TypeFor[bashResult](), ""),
		"SessionStats":      describe(reflect.TypeFor[sessionStats](), "cost is the sum of the CLI's per-run totals"),
		"StatsTokens":       describe(reflect.TypeFor[tokenCounts](), ""),
	}
}

// describe reads an object's shape from a Go struct's json tags: omitempty
// fields are optional. Named struct fields become references.
func describe(t reflect.Type, doc string) object {
	o := object{doc: doc}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, required: !strings.Contains(opts, "omitempty")}
		f.kind, f.ref = kindOf(sf.Type)
		o.fields = append(o.fields, f)
	}
	return o
}

// structNames names the Go types described as definitions.
var structNames = map[reflect.Type]string{
	reflect.TypeFor[transform.Usage](): "Usage", reflect.TypeFor[transform.Cost](): "Cost",
	reflect.TypeFor[transform.CompactionDetails](): "CompactionDetails", reflect.TypeFor[modelCost](): "ModelCost",
	reflect.TypeFor[modelInfo](): "Model", reflect.TypeFor[transform.TodoPhase](): "TodoPhase", reflect.TypeFor[transform.TodoTask](): "TodoTask",
	reflect.TypeFor[tokenCounts](): "StatsTokens",
}

func kindOf(t reflect.Type) (kind, ref string) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string", ""
	case reflect.Bool:
		return "boolean", ""
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer", ""
	case reflect.Float64, reflect.Float32:
		return "number", ""
	case reflect.Struct:
		return "object", structNames[t]
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "any", ""
		}
		_, r := kindOf(t.Elem())
		return "array", r
	}
	return "any", ""
}

// CheckFrame checks one frame against the reference: a known type, every
// required key, no key the reference does not list, and the kinds of what
// is there, down through the objects it names.
func CheckFrame(frame []byte) error {
	v := gjson.ParseBytes(frame)
	typ := v.Get("type").String()
	if typ == "response" {
		return checkResponse(v)
	}
	o, ok := events[typ]
	if !ok {
		return fmt.Errorf("unknown frame type %q", typ)
	}
	o.fields = append([]field{req("type", "string", "")}, o.fields...)
	return checkObject(v, o, definitions(), typ)
}

func checkResponse(v gjson.Result) error {
	o := object{fields: []field{{name: "id", kind: "any"}, req("type", "string", ""), req("command", "string", ""),
		req("success", "boolean", ""), opt("error", "string", ""), {name: "data", kind: "any", nullable: true}}}
	if d, ok := responseData[v.Get("command").String()]; ok && v.Get("success").Bool() {
		o.fields[5] = ref("data", d, true)
	}
	return checkObject(v, o, definitions(), "response "+v.Get("command").String())
}

func checkObject(v gjson.Result, o object, defs map[string]object, at string) error {
	if !v.IsObject() {
		return fmt.Errorf("%s: want an object, got %s", at, v.Raw)
	}
	known := map[string]field{}
	for _, f := range o.fields {
		known[f.name] = f
		if f.required && !v.Get(gjson.Escape(f.name)).Exists() {
			return fmt.Errorf("%s: %q is missing", at, f.name)
		}
	}
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		f, ok := known[k.String()]
		if !ok {
			if !o.open {
				err = fmt.Errorf("%s: %q is not in the reference", at, k.String())
			}
			return err == nil
		}
		err = checkValue(val, f, defs, at+"."+f.name)
		return err == nil
	})
	return err
}

func checkValue(v gjson.Result, f field, defs map[string]object, at string) error {
	if v.Type == gjson.Null && (f.nullable || f.kind == "any") {
		return nil
	}
	ok := true
	switch f.kind {
	case "string":
		ok = v.Type == gjson.String
	case "boolean":
		ok = v.IsBool()
	case "integer":
		ok = v.Type == gjson.Number && v.Float() == float64(int64(v.Float()))
	case "number":
		ok = v.Type == gjson.Number
	case "object":
		ok = v.IsObject()
	case "array":
		ok = v.IsArray()
	}
	if !ok {
		return fmt.Errorf("%s: want %s, got %.80s", at, f.kind, v.Raw)
	}
	if f.ref == "" {
		return nil
	}
	d := defs[f.ref]
	if f.kind == "array" {
		for i, el := range v.Array() {
			if err := checkObject(el, d, defs, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return checkObject(v, d, defs, at)
}

// Schema is the reference as a JSON Schema (2020-12) document.
func Schema() []byte {
	defs := definitions()
	all := map[string]any{}
	for name, o := range defs {
		all[name] = jsonSchema(o)
	}
	var oneOf []any
	var names []string
	for name := range events {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o := events[name]
		o.fields = append([]field{req("type", "string", "")}, o.fields...)
		s := jsonSchema(o)
		s["properties"].(map[string]any)["type"] = map[string]any{"const": name}
		s["title"] = name
		oneOf = append(oneOf, s)
	}
	var cmds []string
	for c := range responseData {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	resp := map[string]any{"title": "response", "type": "object", "required": []string{"type", "command", "success"},
		"properties": map[string]any{"type": map[string]any{"const": "response"}, "id": map[string]any{},
			"command": map[string]any{"type": "string"}, "success": map[string]any{"type": "boolean"},
			"error": map[string]any{"type": "string"}, "data": map[string]any{}},
		"additionalProperties": false,
		"description": "Every command is answered by one response with its id (none for unknown commands and unparsable lines, as pi). Data of a successful " +
			strings.Join(cmds, ", ") + " follow the definitions of the same purpose; others are described in the README."}
	doc := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "claude-rpc frames (stdout)",
		"oneOf": append(oneOf, resp), "$defs": all}
	b, _ := json.MarshalIndent(doc, "", "  ") // maps and strings always encode
	return append(b, '\n')
}

func jsonSchema(o object) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range o.fields {
		p := map[string]any{}
		if f.kind != "any" {
			p["type"] = f.kind
			if f.nullable {
				p["type"] = []string{f.kind, "null"}
			}
		}
		if f.ref != "" {
			r := map[string]any{"$ref": "#/$defs/" + f.ref}
			if f.kind == "array" {
				p["items"] = r
			} else {
				p = map[string]any{"$ref": "#/$defs/" + f.ref}
				if f.nullable {
					p = map[string]any{"oneOf": []any{r, map[string]any{"type": "null"}}}
				}
			}
		}
		if f.doc != "" {
			p["description"] = f.doc
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": o.open}
	if len(required) > 0 {
		s["required"] = required
	}
	if o.doc != "" {
		s["description"] = o.doc
	}
	return s
}
