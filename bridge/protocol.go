package bridge

import (
	"maps"
	"reflect"

	"github.com/claude-rpc/claude-rpc/bridge/hostlink"
	"github.com/claude-rpc/claude-rpc/transform"
)

// FrameTypes are the Go types of the frames the bridge writes itself, for
// the protocol reference: package bridge/reference generates it from them,
// their doc comments and transform's shapes ([transform.Shapes]: the events
// made from the CLI's lines). The bridge does not import that package.
// The types may be unexported: the reference reads their exported fields
// and json tags.
type FrameTypes struct {
	// Envelope is the type of every response frame, pi's RpcResponse:
	// its data field holds a command's data.
	Envelope reflect.Type
	// Responses are the successful responses of the commands that have
	// one of their own (not the host's answers to the bridge's requests),
	// in the command table's order (pi's, then its forks').
	Responses []ResponseType
	// Events are the events the bridge writes itself.
	Events []EventType
	// Names are the reference's names for the data types pi's protocol
	// names ("RpcSessionState", "Model", "CompactionResult"): each has a
	// definition of its own, which a response's data refers to (other
	// data is written in place); a type not here is named after its Go
	// name.
	Names map[reflect.Type]string
	// FieldShaped are types that encode themselves (a json.Marshaler) yet
	// whose JSON has their fields' shape.
	FieldShaped []reflect.Type
}

// ResponseType is the successful response to one command.
type ResponseType struct {
	Command string
	// Doc says what the command does, for the reference.
	Doc string
	// Data is the type of the response's data; nil: the response has
	// none.
	Data reflect.Type
	// Maybe: the data is sometimes null.
	Maybe bool
	// Unfilled are the fields pi's response has that claude-rpc's does
	// not fill, each with why.
	Unfilled map[string]string
}

// EventType is one event the bridge writes.
type EventType struct {
	// Name is the reference's name for it: its type, and for the
	// extension_ui_request frames their method after a dot
	// ("extension_ui_request.select").
	Name string
	// Tag is the event's type field.
	Tag string
	// Go is the type the event is written from.
	Go reflect.Type
	// Consts are fields other than type whose value the event always has
	// (an extension_ui_request's method).
	Consts map[string]string
}

// Frames describes the frames the bridge writes itself. Each call makes a
// new description, which shares nothing with the bridge's tables.
func Frames() FrameTypes {
	f := FrameTypes{
		Envelope: reflect.TypeFor[response](),
		Events:   bridgeEvents(),
		Names: map[reflect.Type]string{
			reflect.TypeFor[stateData](): "RpcSessionState", reflect.TypeFor[sessionStats](): "SessionStats",
			reflect.TypeFor[modelInfo](): "Model", reflect.TypeFor[modelCost](): "ModelCost",
			reflect.TypeFor[bashResult](): "BashResult", reflect.TypeFor[slashCommand](): "RpcSlashCommand",
			reflect.TypeFor[forkPoint](): "ForkMessage", reflect.TypeFor[transform.Compaction](): "CompactionResult",
		},
		// An entry encodes itself only to pass one read from a pi file on
		// whole: its shape is its fields'.
		FieldShaped: []reflect.Type{reflect.TypeFor[entryJSON]()},
	}
	for i := range commandTable {
		c := &commandTable[i]
		if !c.answers() {
			continue
		}
		r := ResponseType{Command: c.name, Doc: c.doc, Maybe: c.maybe, Unfilled: maps.Clone(c.unfilled)}
		if c.data != nil {
			r.Data = reflect.TypeOf(c.data)
		}
		f.Responses = append(f.Responses, r)
	}
	return f
}

// bridgeEvents are the events the bridge writes itself, in the reference's
// order: a frame type the bridge adds (frames.go) is listed here, and so
// are the host link's requests to the host (hostlink.Frames).
func bridgeEvents() []EventType {
	ev := func(tag string, v any) EventType {
		return EventType{Name: tag, Tag: tag, Go: reflect.TypeOf(v)}
	}
	ui := func(method string, v any) EventType {
		return EventType{Name: "extension_ui_request." + method, Tag: "extension_ui_request", Go: reflect.TypeOf(v),
			Consts: map[string]string{"method": method}}
	}
	host := hostlink.Frames() // the host link's requests to the host
	return []EventType{
		ev("ready", readyJSON{}),
		ev("prompt_result", promptResultJSON{}),
		ev("available_commands_update", availableCommandsUpdateJSON{}),
		ev("bash_execution_update", bashUpdateJSON{}),
		ev("queue_update", queueUpdateJSON{}),
		ev("thinking_level_changed", thinkingLevelChangedJSON{}),
		ev("session_info_changed", sessionInfoChangedJSON{}),
		ev("permission_mode_changed", permissionModeChangedJSON{}),
		ev("agent_settled", agentSettledJSON{}),
		ev("session_settled", sessionSettledJSON{}),
		ev("rpc_chunk", rpcChunkJSON{}),
		ev("rpc_frame_error", rpcFrameErrorJSON{}),
		ev("tool_execution_update", toolExecutionUpdateJSON{}),
		ev("host_tool_call", host["host_tool_call"]),
		ev("extension_error", extensionErrorJSON{}),
		ev("entry_appended", entryAppendedJSON{}),
		ev("host_tool_cancel", host["host_tool_cancel"]),
		ev("host_uri_request", host["host_uri_request"]),
		ev("host_uri_cancel", host["host_uri_cancel"]),
		ui("select", host["extension_ui_request.select"]),
		ui("input", host["extension_ui_request.input"]),
		ui("cancel", host["extension_ui_request.cancel"]),
		ui("confirm", host["extension_ui_request.confirm"]),
		ui("editor", host["extension_ui_request.editor"]),
		ui("setTitle", uiSetTitleJSON{}),
		ui("setWidget", uiSetWidgetJSON{}),
		ui("set_editor_text", uiSetEditorTextJSON{}),
	}
}
