package hostlink

import "encoding/json"

// The frames the link writes. Their Go types stay unexported, as
// transform's shapes: the protocol reference (the bridge's, listed with
// [Frames]) describes each frame by its type's doc comment, which begins
// with the type's name. The bridge makes dialogs with [Select],
// [Confirm], [Input] and [Editor].

// Dialog is an extension_ui_request that waits for the host's answer
// ([Link.Ask]): given its id and timeout when sent.
type Dialog interface {
	setID(id string, timeout int64)
}

// Select is a select dialog: choose one of options.
func Select(title, message string, options []string) Dialog {
	return &uiSelectJSON{Method: "select", Title: title, Message: message, Options: options}
}

// Confirm is a confirm dialog: yes or no.
func Confirm(title, message string) Dialog {
	return &uiConfirmJSON{Method: "confirm", Title: title, Message: message}
}

// Input is an input dialog: a line of text.
func Input(title, message, placeholder string) Dialog {
	return &uiInputJSON{Method: "input", Title: title, Message: message, Placeholder: placeholder}
}

// Editor is an editor dialog: text, starting from prefill.
func Editor(title, prefill string) Dialog {
	return &uiEditorJSON{Method: "editor", Title: title, Prefill: prefill}
}

// The dialogs, given their id and timeout as they are sent.
func (r *uiSelectJSON) setID(id string, t int64)  { r.Type, r.ID, r.Timeout = uiType, id, max(t, 0) }
func (r *uiInputJSON) setID(id string, t int64)   { r.Type, r.ID, r.Timeout = uiType, id, max(t, 0) }
func (r *uiConfirmJSON) setID(id string, t int64) { r.Type, r.ID, r.Timeout = uiType, id, max(t, 0) }
func (r *uiEditorJSON) setID(id string, t int64)  { r.Type, r.ID, r.Timeout = uiType, id, max(t, 0) }

// uiType is the type of the frames that ask the host's UI.
const uiType = "extension_ui_request"

// Frames are the frames the link writes, by their names in the protocol
// reference (an extension_ui_request by its method: "type.method"), each
// a zero value of its Go type.
func Frames() map[string]any {
	return map[string]any{
		"host_tool_call":               hostToolCallJSON{},
		"host_tool_cancel":             hostToolCancelJSON{},
		"host_uri_request":             hostURIRequestJSON{},
		"host_uri_cancel":              hostURICancelJSON{},
		"extension_ui_request.select":  uiSelectJSON{},
		"extension_ui_request.input":   uiInputJSON{},
		"extension_ui_request.cancel":  uiCancelJSON{},
		"extension_ui_request.confirm": uiConfirmJSON{},
		"extension_ui_request.editor":  uiEditorJSON{},
	}
}

// hostToolCallJSON asks the host to run one of its tools (xcsh's
// host_tool_call); answer with host_tool_result (and, before it, any
// host_tool_update).
type hostToolCallJSON struct {
	Type string `json:"type"`
	// ID is the request's id ("host_N"), for host_tool_result.
	ID string `json:"id"`
	// ToolCallID is the model's toolCall id, as in tool_execution_start.
	ToolCallID string `json:"toolCallId"`
	// ToolName is the name the host gave in set_host_tools.
	ToolName string `json:"toolName"`
	// Arguments are the model's arguments, a JSON object.
	Arguments json.RawMessage `json:"arguments"`
}

// hostToolCancelJSON withdraws a host_tool_call: the turn was interrupted
// or the run ended.
type hostToolCancelJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// TargetID is the host_tool_call's id.
	TargetID string `json:"targetId"`
}

// uiSelectJSON asks the host to choose: a tool's permission (Allow once,
// Allow always, Deny), one of AskUserQuestion's options, one of the
// choices of a field of an MCP server's form (elicitation), or an answer
// to a dialog of the CLI's own (request_user_dialog: retry a refused
// prompt on the fallback model; auto mode's server-side classifier
// notice). Answer with extension_ui_response {id, value} or {id,
// cancelled:true}.
type uiSelectJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Title  string `json:"title"`
	// Message says what is asked: the tool and its command or file, the
	// question, or the MCP server's message. (pi's select has no message;
	// claude-rpc adds it.)
	Message string   `json:"message"`
	Options []string `json:"options"`
	// Timeout is --ask-timeout in milliseconds, when set; unanswered by
	// then, the request counts as denied.
	Timeout int64 `json:"timeout,omitempty"`
}

// uiInputJSON asks the host for text: an AskUserQuestion question that
// allows several answers or none of its options, or a field of an MCP
// server's form (elicitation): a string, a number (checked: an answer that
// is not one is asked again, saying why), or several of a list of choices,
// comma-separated. Answer with extension_ui_response {id, value} or {id,
// cancelled:true}.
type uiInputJSON struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Title   string `json:"title"`
	Message string `json:"message"`
	// Placeholder lists the question's options, if any; for a form's
	// field, its default, its choices, or the kind of number asked.
	Placeholder string `json:"placeholder"`
	Timeout     int64  `json:"timeout,omitempty"`
}

// uiConfirmJSON asks the host yes or no: an extension's ctx.ui.confirm
// (--extension); a yes-or-no field of an MCP server's form, or its form
// with no fields (elicitation); or a link an MCP server asks the user to
// open (URL-mode elicitation: confirmed means the user opens it, or the
// host opens it for them; pi has no dialog that opens a link). Answer
// with extension_ui_response {id, confirmed} or {id, cancelled:true}.
type uiConfirmJSON struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Title   string `json:"title"`
	Message string `json:"message"`
	// URL is claude-rpc's own: the link a URL-mode elicitation asks the
	// user to open (the message ends with it too).
	URL     string `json:"url,omitempty"`
	Timeout int64  `json:"timeout,omitempty"`
}

// uiEditorJSON asks the host for text in an editor: an extension's
// ctx.ui.editor (--extension), or a long text field of an MCP server's
// form (elicitation: a string whose maxLength is over 200). Answer with
// extension_ui_response {id, value} or {id, cancelled:true}.
type uiEditorJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	// Title says what is asked (for a form's field: the field and the
	// server's message).
	Title string `json:"title"`
	// Prefill is the text to start from (a form field's default).
	Prefill string `json:"prefill,omitempty"`
	Timeout int64  `json:"timeout,omitempty"`
}

// uiCancelJSON withdraws an extension_ui_request nobody answered (omp's):
// the run was aborted, the CLI stopped asking, or --ask-timeout passed.
// The host closes the dialog; an answer after it finds nothing waiting.
type uiCancelJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	// TargetID is the request withdrawn.
	TargetID string `json:"targetId"`
}

// hostURIRequestJSON asks the host to read or write one of its URLs
// (omp's): answer with host_uri_result {id, content?, contentType?,
// notes?, isError?, error?}.
type hostURIRequestJSON struct {
	Type string `json:"type"`
	// ID is the request's id ("uri_N"), for host_uri_result.
	ID string `json:"id"`
	// Operation is read or write.
	Operation string `json:"operation"`
	// URL is the URL the model gave, of a scheme the host serves.
	URL string `json:"url"`
	// Content is the text to write (write only).
	Content *string `json:"content,omitempty"`
}

// hostURICancelJSON withdraws a host_uri_request: the turn was
// interrupted or the run ended (omp's).
type hostURICancelJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// TargetID is the host_uri_request's id.
	TargetID string `json:"targetId"`
}
