package extensions

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Session is what the extensions' calls reach of the session they run
// in: the bridge implements it (bridge/extsession.go). [Actions] carries
// out their API calls on it and [Pump] reads its state; nothing else of
// the bridge is known here. Its methods may be called from any goroutine
// but the bridge's dispatcher and its runner's loop (Call and WaitIdle
// wait for them).
type Session interface {
	// Context is the session's: it ends when the bridge shuts down.
	Context() context.Context
	// Go runs f on a goroutine the bridge waits for at shutdown; false:
	// refused (the bridge is shutting down), f does not run.
	Go(f func()) bool

	// Call runs cmd as if the host had sent it (through the bridge's
	// dispatcher and its ordering rules) and returns its response's data,
	// or its error. It blocks until answered or the session ends.
	Call(cmd map[string]any) (gjson.Result, error)
	// WaitIdle returns once no run is going (or the session ends).
	WaitIdle()
	// Shutdown ends the bridge, as at stdin's end. Never blocks.
	Shutdown()
	// AppendEntry appends pi's custom entry to the session and shows it
	// to the host (entry_appended).
	AppendEntry(customType string, data json.RawMessage)
	// Label sets (label "": clears) an entry's label.
	Label(entryID, label string) error
	// SendMessage hands the run an extension's custom message (pi's
	// sendMessage: its options deliverAs and triggerTurn as given).
	SendMessage(message gjson.Result, deliverAs string, triggerTurn gjson.Result) error
	// SetActiveTools turns off the tools not named (pi's setActiveTools).
	SetActiveTools(names []string)
	// Error shows the host an extension_error.
	Error(e Error)

	// State is the session's state as the extensions read it (ctx.model,
	// ctx.isIdle(), ctx.sessionManager's file, ...): [Host.SetState]'s
	// fields.
	State() map[string]any
	// WaitModel returns once the CLI said its model (ctx.model), or ctx
	// ends.
	WaitModel(ctx context.Context)
}
