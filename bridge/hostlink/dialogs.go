package hostlink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The CLI's own dialogs (stream transport), put to the host as pi's
// extension_ui_request dialogs, each with --ask-timeout as pi's timeout:
//
//   - elicitation: an MCP server the CLI runs asks its user
//     (elicitation/create). A form becomes one dialog per field, in the
//     server's order (property_order, else the schema's): a string is an
//     input (an editor when its maxLength is over longText), a string with
//     enum or oneOf choices a select, a boolean a confirm, a number or
//     integer an input checked as one, an array of choices an input of
//     comma-separated choices. A form with no fields is one confirm. The
//     answers go back as {action:"accept", content}. An answer that does
//     not fit the field (not a number, out of range, not a choice, empty
//     but required) asks again, saying why, maxTries times at most, then
//     declines. The host cancelling any dialog cancels the whole
//     elicitation ({action:"cancel"}: the answers given so far are
//     dropped); a dialog left unanswered past --ask-timeout declines it
//     ({action:"decline"}). A schema no dialog can show (a nested object,
//     an array of objects, an unknown type) is declined at once, the
//     reason logged: MCP's answer has no room for a reason (the CLI drops
//     an ElicitResult's _meta). (2.1.275 to 2.1.332 never send one: their
//     MCP client refuses a schema MCP does not allow before asking.) URL mode (the user is to open a link, and
//     the server learns the outcome out of band): pi has no dialog that
//     opens a URL, so it is a confirm whose message ends with the URL, also
//     in its url field: confirmed is accept (the host opens the link, or
//     the user does), not confirmed is decline. With --ask=false every
//     elicitation is declined without a dialog.
//   - request_user_dialog: a dialog of the CLI's own, of a kind the
//     bridge declared in initialize (supportedDialogKinds, from
//     [userDialogs]); the CLI sends no other kind. Each is a select
//     whose options map to the kind's results ({behavior:"completed",
//     result}); cancelled, unanswered, or an option that takes no action
//     answers {behavior:"cancelled"}, which the CLI takes as its default.
//     A kind not declared is refused with an error, which the CLI
//     discards (the SDK's rule: a host must not settle a kind it did not
//     declare).

// longText is the maxLength over which a string field is asked in an
// editor rather than an input.
const longText = 200

// maxTries is how many times a field is asked when its answers do not fit.
const maxTries = 3

// ElicitResult is MCP's ElicitResult: the answer to an elicitation.
type ElicitResult struct {
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content is the form's answers (accept only; {} for a form of no
	// fields).
	Content map[string]any `json:"content,omitzero"`
}

var (
	declined  = ElicitResult{Action: "decline"}
	cancelled = ElicitResult{Action: "cancel"}
)

// endedBy is the elicitation's answer when one of its dialogs ended
// without an answer as how says.
func endedBy(how outcome) ElicitResult {
	if how == uiTimedOut {
		return declined
	}
	return cancelled
}

// Elicitation answers the CLI's elicitation request r.
func (h *Link) Elicitation(ctx context.Context, r gjson.Result) ElicitResult {
	server := r.Get("display_name").String()
	if server == "" {
		server = r.Get("mcp_server_name").String()
	}
	log := h.cfg.Log.With("server", server)
	if !h.cfg.AskOn() {
		log.Info("declined an MCP server's elicitation: claude-rpc runs with --ask=false")
		return declined
	}
	message := r.Get("message").String()
	if r.Get("mode").String() == "url" {
		return h.elicitURL(ctx, server, message, r.Get("url").String())
	}
	fields, err := formFields(r.Get("requested_schema"), r.Get("property_order"))
	if err != nil {
		log.Warn("declined an MCP server's elicitation: its form cannot be shown as pi's dialogs", "reason", err)
		return declined
	}
	intro := server + " asks: " + message
	if len(fields) == 0 {
		a, how := h.ask(ctx, &uiConfirmJSON{Method: "confirm", Title: server, Message: intro})
		switch {
		case how != uiAnswered:
			return endedBy(how)
		case a.Get("confirmed").Bool():
			return ElicitResult{Action: "accept", Content: map[string]any{}}
		}
		return declined
	}
	content := map[string]any{}
	for _, f := range fields {
		v, end := h.askField(ctx, intro, f)
		if end != nil {
			return *end
		}
		if v != nil {
			content[f.name] = v
		}
	}
	return ElicitResult{Action: "accept", Content: content}
}

// elicitURL asks the host to confirm opening url.
func (h *Link) elicitURL(ctx context.Context, server, message, url string) ElicitResult {
	if url == "" {
		h.cfg.Log.Warn("declined an MCP server's URL elicitation: it gives no URL", "server", server)
		return declined
	}
	a, how := h.ask(ctx, &uiConfirmJSON{Method: "confirm", Title: server + " asks you to open a link",
		Message: message + "\n\n" + url, URL: url})
	switch {
	case how != uiAnswered:
		return endedBy(how)
	case a.Get("confirmed").Bool():
		return ElicitResult{Action: "accept"}
	}
	return declined
}

// askField asks for f's value until an answer fits it. The value is nil
// for an optional field left empty; end is the elicitation's answer when
// it ends here.
func (h *Link) askField(ctx context.Context, intro string, f formField) (any, *ElicitResult) {
	message := intro
	if f.description != "" {
		message += "\n" + f.description
	}
	var problem string
	for range maxTries {
		m := message
		if problem != "" {
			m = problem + "\n\n" + message
		}
		a, how := h.ask(ctx, f.dialog(m))
		if how != uiAnswered {
			end := endedBy(how)
			return nil, &end
		}
		var v any
		if v, problem = f.read(a); problem == "" {
			return v, nil
		}
	}
	h.cfg.Log.Warn("declined an MCP server's elicitation: no answer fit its field", "field", f.name, "tries", maxTries, "last", problem)
	return nil, &declined
}

// formKind is how a form field is asked and read.
type formKind int

const (
	textField     formKind = iota // input
	longTextField                 // editor
	numberField                   // input, a number
	integerField                  // input, an integer
	booleanField                  // confirm
	choiceField                   // select
	choicesField                  // input, comma-separated choices
)

// formField is one property of an elicitation's requested schema.
type formField struct {
	name, label, description string
	kind                     formKind
	required                 bool
	choices                  []choice
	def                      gjson.Result // the schema's default
	// min and max bound the value (numbers), its length (strings) or its
	// number of choices (choicesField); absent when the schema gives none.
	min, max gjson.Result
}

// choice is one option of an enum: the value sent, the label shown.
type choice struct{ value, label string }

// formFields reads an elicitation's requested schema (MCP's flat object
// of primitive properties) in order (the CLI's property_order, then any
// property it left out, in the schema's order). The error says why the
// form cannot be shown.
func formFields(schema, order gjson.Result) ([]formField, error) {
	if t := schema.Get("type").String(); t != "" && t != "object" {
		return nil, fmt.Errorf("the schema is of type %q, not an object", t)
	}
	props := schema.Get("properties")
	if props.Exists() && !props.IsObject() {
		return nil, fmt.Errorf("its properties are not an object")
	}
	var names []string
	for _, n := range order.Array() {
		if props.Get(gjson.Escape(n.String())).Exists() && !slices.Contains(names, n.String()) {
			names = append(names, n.String())
		}
	}
	props.ForEach(func(k, _ gjson.Result) bool {
		if !slices.Contains(names, k.String()) {
			names = append(names, k.String())
		}
		return true
	})
	required := map[string]bool{}
	for _, n := range schema.Get("required").Array() {
		required[n.String()] = true
	}
	fields := make([]formField, 0, len(names))
	for _, name := range names {
		f, err := newField(name, props.Get(gjson.Escape(name)), required[name])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// newField reads one property's schema.
func newField(name string, p gjson.Result, required bool) (formField, error) {
	f := formField{name: name, label: p.Get("title").String(), description: p.Get("description").String(),
		required: required, def: p.Get("default")}
	if f.label == "" {
		f.label = name
	}
	if !p.IsObject() {
		return f, fmt.Errorf("its schema is not an object")
	}
	t := p.Get("type").String()
	var err error
	switch {
	case (t == "string" || t == "") && (p.Get("enum").Exists() || p.Get("oneOf").Exists()):
		f.kind = choiceField
		f.choices, err = choicesOf(p)
	case t == "string":
		f.kind, f.min, f.max = textField, p.Get("minLength"), p.Get("maxLength")
		if f.max.Int() > longText {
			f.kind = longTextField
		}
	case t == "number" || t == "integer":
		f.kind, f.min, f.max = numberField, p.Get("minimum"), p.Get("maximum")
		if t == "integer" {
			f.kind = integerField
		}
	case t == "boolean":
		f.kind = booleanField
	case t == "array":
		f.kind, f.min, f.max = choicesField, p.Get("minItems"), p.Get("maxItems")
		f.choices, err = choicesOf(p.Get("items"))
		if err != nil {
			err = fmt.Errorf("an array whose items are not choices (%w)", err)
		}
	case t == "object":
		err = fmt.Errorf("a nested object")
	default:
		err = fmt.Errorf("type %q", t)
	}
	return f, err
}

// choicesOf reads an enum's choices: enum (labelled by enumNames, when
// as many), or oneOf / anyOf of {const, title}.
func choicesOf(p gjson.Result) ([]choice, error) {
	var cs []choice
	if enum := p.Get("enum"); enum.IsArray() {
		names := p.Get("enumNames").Array()
		for i, v := range enum.Array() {
			c := choice{value: v.String(), label: v.String()}
			if len(names) == len(enum.Array()) {
				c.label = names[i].String()
			}
			cs = append(cs, c)
		}
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, o := range p.Get(key).Array() {
			if o.Get("const").Type != gjson.String {
				return nil, fmt.Errorf("a %s entry without a string const", key)
			}
			c := choice{value: o.Get("const").String(), label: o.Get("title").String()}
			if c.label == "" {
				c.label = c.value
			}
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("no choices")
	}
	return cs, nil
}

func (f formField) labels() []string {
	ls := make([]string, len(f.choices))
	for i, c := range f.choices {
		ls[i] = c.label
	}
	return ls
}

// dialog is the dialog that asks for f, saying message.
func (f formField) dialog(message string) Dialog {
	switch f.kind {
	case choiceField:
		return &uiSelectJSON{Method: "select", Title: f.label, Message: message, Options: f.labels()}
	case booleanField:
		return &uiConfirmJSON{Method: "confirm", Title: f.label, Message: message}
	case longTextField:
		return &uiEditorJSON{Method: "editor", Title: f.label + ": " + message, Prefill: f.def.String()}
	}
	hint := f.def.String()
	switch {
	case f.kind == choicesField:
		hint = "any of: " + strings.Join(f.labels(), ", ") + " (comma-separated)"
	case hint == "" && f.kind == numberField:
		hint = "a number"
	case hint == "" && f.kind == integerField:
		hint = "a whole number"
	}
	return &uiInputJSON{Method: "input", Title: f.label, Message: message, Placeholder: hint}
}

// read takes f's value from the host's answer a; problem says why it does
// not fit, to be asked again.
func (f formField) read(a gjson.Result) (v any, problem string) {
	if f.kind == booleanField {
		return a.Get("confirmed").Bool(), ""
	}
	text := a.Get("value").String()
	if f.kind != textField && f.kind != longTextField {
		text = strings.TrimSpace(text)
	}
	if text == "" {
		switch {
		case f.def.Exists():
			return f.def.Value(), ""
		case f.required:
			return nil, f.label + " needs an answer."
		}
		return nil, ""
	}
	switch f.kind {
	case textField, longTextField:
		return text, f.outside(float64(utf8.RuneCountInString(text)), "characters")
	case numberField:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a number.", text)
		}
		return n, f.outside(n, "")
	case integerField:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a whole number.", text)
		}
		return n, f.outside(float64(n), "")
	case choiceField:
		if c, ok := f.choice(text); ok {
			return c, ""
		}
		return nil, fmt.Sprintf("%q is not one of the options.", text)
	}
	var picked []string
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		c, ok := f.choice(part)
		if !ok {
			return nil, fmt.Sprintf("%q is not one of: %s.", part, strings.Join(f.labels(), ", "))
		}
		if !slices.Contains(picked, c) {
			picked = append(picked, c)
		}
	}
	return picked, f.outside(float64(len(picked)), "choices")
}

// choice is the value of the choice labelled (or valued) text.
func (f formField) choice(text string) (string, bool) {
	for _, c := range f.choices {
		if c.label == text || c.value == text {
			return c.value, true
		}
	}
	return "", false
}

// outside says how n breaks f's bounds (of unit), or "".
func (f formField) outside(n float64, unit string) string {
	if unit != "" {
		unit = " " + unit
	}
	switch {
	case f.min.Exists() && n < f.min.Float():
		return fmt.Sprintf("%s needs at least %s%s.", f.label, f.min.Raw, unit)
	case f.max.Exists() && n > f.max.Float():
		return fmt.Sprintf("%s takes at most %s%s.", f.label, f.max.Raw, unit)
	}
	return ""
}

// userDialog is how a request_user_dialog kind is asked: a select whose
// options are the kind's results.
type userDialog func(payload gjson.Result) (title, message string, options []dialogOption)

// dialogOption is one option of a userDialog: its label, and the result
// it answers (none: {behavior:"cancelled"}, the CLI's default).
type dialogOption struct{ label, result string }

// userDialogs are the request_user_dialog kinds claude-rpc renders, as
// the CLI defines them (2.1.275 to 2.1.332). The CLI sends an SDK host
// only these kinds of its own: refusal_fallback_prompt,
// auto_mode_server_fallback, fable_overage_consent_prompt,
// send_to_project_remote_control_offer and enum_prompt (and Slack
// connectors' dialogs). Not rendered, so not declared, and the CLI takes
// its no-dialog path: fable_overage_consent_prompt (consent to paid
// usage: its terms and balance are for the CLI's own screen, and a
// bridge must not buy on a select), send_to_project_remote_control_offer
// (Remote Control, a claude.ai feature a bridge has no part in),
// enum_prompt (its payload's shape is not in the SDK's types) and Slack's.
var userDialogs = map[string]userDialog{
	// The model refused (stop_reason refusal); the CLI offers to run the
	// turn again on the fallback model. Payload {originalModel,
	// fallbackModel, apiRefusalCategory?, guidanceText?}; results
	// retry_fallback, edit_prompt (not offered: a pi host has no prompt
	// to give back), cancelled.
	"refusal_fallback_prompt": func(p gjson.Result) (string, string, []dialogOption) {
		fallback := p.Get("fallbackModel").String()
		msg := p.Get("originalModel").String() + " declined to answer"
		if c := p.Get("apiRefusalCategory").String(); c != "" {
			msg += " (" + c + ")"
		}
		if g := p.Get("guidanceText").String(); g != "" {
			msg += ".\n" + g
		}
		return "Retry with " + fallback + "?", msg, []dialogOption{{"Retry with " + fallback, "retry_fallback"}, {"Don't retry", ""}}
	},
	// Auto mode's permission classifier runs on the server; the CLI says
	// so once. Payload {title, paragraphs, helpUrl, gatewayHost?};
	// results continue, interrupt, cancelled.
	"auto_mode_server_fallback": func(p gjson.Result) (string, string, []dialogOption) {
		var paras []string
		for _, x := range p.Get("paragraphs").Array() {
			paras = append(paras, x.String())
		}
		if u := p.Get("helpUrl").String(); u != "" {
			paras = append(paras, u)
		}
		return p.Get("title").String(), strings.Join(paras, "\n\n"), []dialogOption{{"Continue", "continue"}, {"Interrupt", "interrupt"}}
	},
}

// DialogKinds are the request_user_dialog kinds the bridge declares in
// initialize (supportedDialogKinds), in order.
func DialogKinds() []string { return slices.Sorted(maps.Keys(userDialogs)) }

// UserDialog answers the CLI's request_user_dialog request r.
func (h *Link) UserDialog(ctx context.Context, r gjson.Result) (any, error) {
	kind := r.Get("dialog_kind").String()
	ask := userDialogs[kind]
	if ask == nil {
		h.cfg.Log.Warn("the CLI sent a dialog claude-rpc does not render; left to the CLI's deadline", "kind", kind)
		return nil, fmt.Errorf("claude-rpc does not render %q dialogs (it declared %s)", kind, strings.Join(DialogKinds(), ", "))
	}
	title, message, options := ask(r.Get("payload"))
	labels := make([]string, len(options))
	for i, o := range options {
		labels[i] = o.label
	}
	a, how := h.ask(ctx, &uiSelectJSON{Method: "select", Title: title, Message: message, Options: labels})
	for _, o := range options {
		if how == uiAnswered && o.result != "" && a.Get("value").String() == o.label {
			return map[string]any{"behavior": "completed", "result": o.result}, nil
		}
	}
	return map[string]any{"behavior": "cancelled"}, nil
}
