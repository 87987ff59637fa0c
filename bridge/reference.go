package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/bridge/schema"
	"github.com/claude-rpc/claude-rpc/transform"
)

// The protocol reference: every frame claude-rpc writes on stdout, as JSON
// Schema, generated from the Go types that write the frames and their doc
// comments (transform's shapes, the bridge's data types) plus, below, the
// types of the answers the bridge builds as maps and the prose Go types
// cannot carry (what pi has that claude-rpc cannot fill, and why).
// `claude-rpc schema` prints it; testdata/protocol holds it as
// schema.json and, for reading, README.md (TestProtocolReference keeps
// them, and referenceDocs, in step with the code: go test ./bridge -run
// TestProtocolReference -update); and the end-to-end tests check every
// frame claude-rpc writes in them against it.

// Reference returns the protocol reference. It is made once; callers must
// not change it.
func Reference() *schema.Schema { return reference() }

var reference = sync.OnceValue(func() *schema.Schema {
	doc, _, err := referenceFrom(referenceDocs)
	if err != nil {
		panic("bridge: the protocol reference: " + err.Error()) // TestProtocolReference catches it first
	}
	return doc
})

// Schema returns the protocol reference as a JSON document.
func Schema() []byte { return encodeReference(Reference()) }

func encodeReference(doc *schema.Schema) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		panic("bridge: encoding the protocol reference: " + err.Error()) // only strings, maps and slices
	}
	return buf.Bytes()
}

// CheckFrame checks one frame claude-rpc wrote against the protocol
// reference; the error lists every difference, with its path.
func CheckFrame(frame []byte) error {
	if problems := schema.ValidateJSON(Reference(), frame); len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// bridgeEvents are the events the bridge writes itself (the others come
// from transform); those of the host in the loop are hostlink's
// (hostFrames).
var hostFrames = hostlink.Frames()

var bridgeEvents = []struct {
	name, tag string
	typ       any
	consts    map[string]string
}{
	{"ready", "ready", readyJSON{}, nil},
	{"prompt_result", "prompt_result", promptResultJSON{}, nil},
	{"available_commands_update", "available_commands_update", availableCommandsUpdateJSON{}, nil},
	{"bash_execution_update", "bash_execution_update", bashUpdateJSON{}, nil},
	{"queue_update", "queue_update", queueUpdateJSON{}, nil},
	{"thinking_level_changed", "thinking_level_changed", thinkingLevelChangedJSON{}, nil},
	{"session_info_changed", "session_info_changed", sessionInfoChangedJSON{}, nil},
	{"permission_mode_changed", "permission_mode_changed", permissionModeChangedJSON{}, nil},
	{"agent_settled", "agent_settled", agentSettledJSON{}, nil},
	{"session_settled", "session_settled", sessionSettledJSON{}, nil},
	{"rpc_chunk", "rpc_chunk", rpcChunkJSON{}, nil},
	{"rpc_frame_error", "rpc_frame_error", rpcFrameErrorJSON{}, nil},
	{"tool_execution_update", "tool_execution_update", toolExecutionUpdateJSON{}, nil},
	{"host_tool_call", "host_tool_call", hostFrames["host_tool_call"], nil},
	{"extension_error", "extension_error", extensionErrorJSON{}, nil},
	{"entry_appended", "entry_appended", entryAppendedJSON{}, nil},
	{"host_tool_cancel", "host_tool_cancel", hostFrames["host_tool_cancel"], nil},
	{"host_uri_request", "host_uri_request", hostFrames["host_uri_request"], nil},
	{"host_uri_cancel", "host_uri_cancel", hostFrames["host_uri_cancel"], nil},
	{"extension_ui_request.select", "extension_ui_request", hostFrames["extension_ui_request.select"], map[string]string{"method": "select"}},
	{"extension_ui_request.input", "extension_ui_request", hostFrames["extension_ui_request.input"], map[string]string{"method": "input"}},
	{"extension_ui_request.cancel", "extension_ui_request", hostFrames["extension_ui_request.cancel"], map[string]string{"method": "cancel"}},
	{"extension_ui_request.confirm", "extension_ui_request", hostFrames["extension_ui_request.confirm"], map[string]string{"method": "confirm"}},
	{"extension_ui_request.editor", "extension_ui_request", hostFrames["extension_ui_request.editor"], map[string]string{"method": "editor"}},
	{"extension_ui_request.setTitle", "extension_ui_request", uiSetTitleJSON{}, map[string]string{"method": "setTitle"}},
	{"extension_ui_request.setWidget", "extension_ui_request", uiSetWidgetJSON{}, map[string]string{"method": "setWidget"}},
	{"extension_ui_request.set_editor_text", "extension_ui_request", uiSetEditorTextJSON{}, map[string]string{"method": "set_editor_text"}},
}

// Prose the Go types cannot carry: what pi's shapes have that claude-rpc
// does not write, and the frames it never sends.
var (
	unfilled = map[string]map[string]string{
		"AssistantMessage": {
			"responseModel": "`model` already is the model the API answered with; the CLI does not report the one asked for next to it",
			"diagnostics":   "pi-ai's provider diagnostics; the CLI reports none",
		},
		"Usage": {
			"cost.input, cost.output, cost.cacheRead, cost.cacheWrite": "always 0: the CLI reports only a total cost per turn (its result's total_cost_usd)",
		},
		"TextContent":     {"textSignature": "OpenAI-only in pi; the Messages API has none"},
		"ThinkingContent": {"thinkingSignature": "the CLI, not the host, sends the conversation back to the API, so the signature stays with it", "redacted": "redacted thinking shows as an empty thinking block"},
		"ToolCall":        {"thoughtSignature": "Google-only in pi"},
		"Model": {
			"thinkingLevelMap, headers, compat": "pi's provider plumbing; the CLI decides how to call the API",
			"cost.cacheRead, cost.cacheWrite":   "0: the CLI tells no cache prices (input and output come from its model description, when it gives a price)",
		},
		"RpcSlashCommand":      {"sourceInfo": "the CLI does not say where a command or skill comes from (source is always \"prompt\")"},
		"event.compaction_end": {"willRetry": "written, always false: the CLI retries by itself and says nothing"},
	}
	// fieldDocs describe fields whose Go declaration has no comment (the
	// bridge's own types); a Go comment, once written, wins.
	fieldDocs = map[string]string{
		"RpcSessionState.model":               "The model the next turn runs, an entry of get_available_models: the one asked for (--model, set_model), else the one the CLI said it will run, else the one its last turn ran; described as get_available_models does (its name, price and limits). Absent (as pi leaves it when it has none) only while the CLI has not yet said which models it has: a first start with nothing in the info cache, before the CLI's answer (about half a second on stream); a host then takes the list's first, the CLI's default.",
		"RpcSessionState.thinkingLevel":       "pi's level; the CLI runs it as an effort level (off and minimal: low). \"medium\", the CLI's default, until set.",
		"RpcSessionState.isCompacting":        "True while a compact command runs.",
		"RpcSessionState.steeringMode":        "\"one-at-a-time\" or \"all\".",
		"RpcSessionState.followUpMode":        "\"one-at-a-time\" or \"all\".",
		"RpcSessionState.interruptMode":       "omp's: \"immediate\" or \"wait\"; stored and reported.",
		"RpcSessionState.sessionFile":         "The CLI's transcript of the session (under ~/.claude/projects); it may not exist before the first turn.",
		"RpcSessionState.sessionId":           "The CLI's session id (claude --resume takes it).",
		"RpcSessionState.sessionName":         "The name set_session_name gave.",
		"RpcSessionState.pendingMessageCount": "Steering and follow-up messages not yet delivered.",
		"RpcSessionState.queuedMessageCount":  "The same as pendingMessageCount (omp's name).",
		"Model.id":                            "The CLI's model id, or its alias (\"default\", \"opus\") until a turn reported the id.",
		"Model.baseUrl":                       "The API the CLI talks to: ANTHROPIC_BASE_URL, else https://api.anthropic.com.",
		"Model.contextWindow":                 "The CLI's figure once a turn reported it; 200000 until then.",
		"Model.maxTokens":                     "The CLI's figure once a turn reported it; 32000 until then.",
		"ModelCost.input":                     "Dollars per million input tokens, from the CLI's model description; 0 when it gives none.",
		"ModelCost.output":                    "Dollars per million output tokens, as input.",
		"SessionStats.cost":                   "Dollars: the costs the CLI reported, summed over the session's assistant messages.",
		"SessionStats.sessionFile":            "As get_state's.",
		"RpcSlashCommand.source":              "Always \"prompt\": the CLI does not say which commands are skills.",
		"RpcSlashCommand.argumentHint":        "The CLI's hint for the command's arguments.",
		"BashResult.output":                   "stdout and stderr, the last 50 KiB.",
		"BashResult.exitCode":                 "-1 when cancelled.",
		"BashResult.fullOutputPath":           "A temp file with the whole output, when it was longer than output.",
		"ForkMessage.entryId":                 "The prompt's entry (uuid) in the CLI's transcript; fork takes it.",
		"CompactionResult.firstKeptEntryId":   "The CLI keeps no entry id for the first message kept: this is its compact boundary's uuid.",
		"CompactionResult.tokensBefore":       "The context's tokens before compacting, as the CLI reported.",
		"CompactionDetails.trigger":           "\"manual\" (compact) or \"auto\".",
		"CompactionDetails.tokensAfter":       "The context's tokens after compacting, as the CLI reported.",
		"TodoTask.status":                     "pending, in_progress or completed.",
	}
	notEmitted = map[string]string{
		"auto_compaction_start, auto_compaction_end":                              "the names pi's forks once used; claude-rpc writes pi's compaction_start/compaction_end (pi 0.73.1 and 1.5.2 alike) and only those, so a host that handles both never sees one compaction twice",
		"extension_ui_request with method setWidget, setTitle or set_editor_text": "the CLI asks nothing that needs them: permissions and AskUserQuestion come as select or input",
	}
)

// referenceFrom generates the protocol reference from the Go types, with
// their doc comments docs, and returns the comments it used. An error is a
// mistake in this file.
func referenceFrom(docs schema.Docs) (*schema.Schema, schema.Docs, error) {
	g := schema.NewGenerator(docs)
	for typ, name := range map[reflect.Type]string{
		reflect.TypeFor[stateData](): "RpcSessionState", reflect.TypeFor[sessionStats](): "SessionStats",
		reflect.TypeFor[modelInfo](): "Model", reflect.TypeFor[modelCost](): "ModelCost",
		reflect.TypeFor[bashResult](): "BashResult", reflect.TypeFor[slashCommand](): "RpcSlashCommand",
		reflect.TypeFor[forkPoint](): "ForkMessage", reflect.TypeFor[transform.Compaction](): "CompactionResult",
	} {
		g.Names[typ] = name
	}
	g.Custom[reflect.TypeFor[transform.Message]()] = schema.RefTo("AgentMessage")
	g.Custom[reflect.TypeFor[transform.Content]()] = schema.RefTo("Content")
	// An entry encodes itself only to pass one read from a pi file on
	// whole: its shape is its fields'.
	entry := reflect.TypeFor[entryJSON]()
	g.Custom[entry] = schema.RefTo(g.Name(entry))
	g.Defs[g.Name(entry)] = g.Object(entry)

	doc := &schema.Schema{
		Schema: "https://json-schema.org/draft/2020-12/schema",
		ID:     "https://github.com/claude-rpc/claude-rpc/testdata/protocol/schema.json",
		Title:  "claude-rpc protocol reference",
		Description: "Every line claude-rpc writes on stdout is one JSON object, one of the frames below: " +
			"a response (type \"response\", with the command's id when it had one) or an event. " +
			"The shapes are pi's (pi-coding-agent 0.73.1's RpcResponse and AgentSessionEvent, " +
			"plus what pi's forks omp, xcsh and indusagi add); where claude-rpc cannot fill a field " +
			"pi has, the type says so under \"Not filled\" (x-unfilled), and why.",
		Defs:       g.Defs,
		NotEmitted: notEmitted,
	}
	var errs []error
	add := func(name string, s *schema.Schema) {
		if g.Defs[name] != nil {
			errs = append(errs, fmt.Errorf("%s is defined twice", name))
		}
		g.Defs[name] = s
		doc.OneOf = append(doc.OneOf, schema.RefTo(name))
	}
	constProp := func(s *schema.Schema, prop string, v any) {
		p := *s.Properties[prop]
		p.Type, p.Const = "", schema.ConstOf(v)
		s.Properties[prop] = &p
	}

	// Responses: the envelope is the response type's, specialised per
	// command.
	for i := range commandTable {
		c := &commandTable[i]
		if !c.answers() {
			continue
		}
		s := g.Object(reflect.TypeFor[response]())
		s.Description = c.doc
		constProp(s, "type", "response")
		constProp(s, "command", c.name)
		constProp(s, "success", true)
		delete(s.Properties, "error")
		if c.data == nil {
			delete(s.Properties, "data")
		} else {
			// Types the reference names have a definition of their own;
			// the answer's own wrappers are written in place.
			dt := reflect.TypeOf(c.data)
			d := g.Object(dt)
			if _, named := g.Names[dt]; named {
				d = g.Of(dt)
			}
			if c.maybe {
				d = &schema.Schema{OneOf: []*schema.Schema{d, {Type: "null"}}}
			}
			s.Properties["data"] = d
			s.Required = append(s.Required, "data")
		}
		s.Unfilled = c.unfilled
		add("response."+c.name, s)
	}
	failure := g.Object(reflect.TypeFor[response]())
	failure.Description = "The answer to any command that fails, and to a line that is no command: command is the command's type (\"parse\" for a line that is not a JSON command); the answer to an unknown command carries its id, as pi 1.5's and omp's (pi 0.73.1's had none)."
	constProp(failure, "type", "response")
	constProp(failure, "success", false)
	delete(failure.Properties, "data")
	failure.Required = append(failure.Required, "error")
	add("error", failure)

	// Events, and the types inside them.
	unions := map[string]string{"message": "AgentMessage", "content": "Content", "assistantMessageEvent": "AssistantMessageEvent"}
	names := map[string]string{"user": "UserMessage", "assistant": "AssistantMessage", "toolResult": "ToolResultMessage", "custom": "CustomMessage",
		"text": "TextContent", "thinking": "ThinkingContent", "toolCall": "ToolCall", "image": "ImageContent"}
	for _, sh := range transform.Shapes() {
		s := g.Object(reflect.TypeOf(sh.Go))
		switch sh.Kind {
		case "event":
			typ, method, request := strings.Cut(sh.Tag, ".")
			constProp(s, "type", typ)
			if request { // extension_ui_request.notify: told apart by its method
				constProp(s, "method", method)
			}
			add("event."+sh.Tag, s)
			if !strings.HasPrefix(sh.Tag, "subagent_") && !request {
				// A sub-agent's own events, in subagent_event.
				u := g.Defs["AgentSessionEvent"]
				if u == nil {
					u = &schema.Schema{Description: "pi's AgentSessionEvent: any of the events of a run (agent_start … agent_end), here one of a sub-agent's own conversation."}
					g.Defs["AgentSessionEvent"] = u
				}
				u.OneOf = append(u.OneOf, schema.RefTo("event."+sh.Tag))
			}
		case "message":
			constProp(s, "role", sh.Tag)
		default:
			constProp(s, "type", sh.Tag)
		}
		if sh.Kind == "event" {
			continue
		}
		if sh.Kind == "assistantMessageEvent" {
			// One Go type for every kind: one definition, its type an
			// enum.
			u := g.Defs[unions[sh.Kind]]
			if u == nil {
				u = s
				u.Properties["type"] = &schema.Schema{}
				g.Defs[unions[sh.Kind]] = u
			}
			p := u.Properties["type"]
			p.Enum = append(p.Enum, schema.ConstOf(sh.Tag))
			continue
		}
		name := names[sh.Tag]
		g.Defs[name] = s
		u := g.Defs[unions[sh.Kind]]
		if u == nil {
			u = &schema.Schema{}
			g.Defs[unions[sh.Kind]] = u
		}
		u.OneOf = append(u.OneOf, schema.RefTo(name))
	}
	g.Defs["AgentMessage"].Description = "pi's AgentMessage: a user, assistant, toolResult or custom (a pi extension's) message, told apart by role."
	g.Defs["Content"].Description = "A content block, told apart by type: text, thinking and toolCall in assistant messages; text and image in user messages and tool results."
	g.Defs["AssistantMessageEvent"].Description = "pi's AssistantMessageEvent: what changed in a streaming assistant message. pi's start, done and error never come through message_update (in pi either): the message's end shows in message_end."
	for _, e := range bridgeEvents {
		s := g.Object(reflect.TypeOf(e.typ))
		constProp(s, "type", e.tag)
		for k, v := range e.consts {
			constProp(s, k, v)
		}
		add("event."+e.name, s)
	}
	for key, text := range fieldDocs {
		def, field, _ := strings.Cut(key, ".")
		var p *schema.Schema
		if d := g.Defs[def]; d != nil {
			p = d.Properties[field]
		}
		switch {
		case p == nil:
			errs = append(errs, fmt.Errorf("fieldDocs: no field %s", key))
		case p.Description == "":
			c := *p
			c.Description = text
			g.Defs[def].Properties[field] = &c
		}
	}
	for name, u := range unfilled {
		if g.Defs[name] == nil {
			errs = append(errs, fmt.Errorf("unfilled: no definition %s", name))
			continue
		}
		g.Defs[name].Unfilled = u
	}
	return doc, g.Used, errors.Join(append(errs, g.Err())...)
}
