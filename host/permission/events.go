package permission

import (
	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Resolvers announced in permission.request (docs/events.md#permissionrequest): who is
// expected to answer.
const (
	ResolverAutomatic = "automatic" // --auto-approve answers at once
	ResolverReserved  = "reserved"  // a control client holds the request
	ResolverFile      = "file"      // the file handler waits for <base>.req.response
	ResolverNone      = "none"      // nobody: it waits until cancel or timeout
)

// Sources of permission.response (docs/events.md#permissionresponse): who decided.
const (
	SourceAvenor  = "avenor" // auto-approve
	SourceControl = "control"
	SourceFile    = "file"
	// SourceBoard: a person answered on `avenor board`, which relays the
	// answer over the control socket with the source hint "board".
	SourceBoard = "board"
	// SourceTTY: a person answered at the run's terminal (Options.Ask),
	// the last resolver in the precedence. Not an answer source hint: a
	// control client cannot claim it.
	SourceTTY = "tty"
)

// AnswerSources are the source hints a control client may put on
// answer_permission, so permission.response says which front door a
// person used. Anything else is refused: a hint can name a front door, but
// never claim a decision was avenor's own or the file handler's.
var AnswerSources = []string{SourceControl, SourceBoard}

// ValidAnswerSource says whether s may be given as an answer's source hint;
// "" (no hint, source "control") is valid.
func ValidAnswerSource(s string) bool {
	if s == "" {
		return true
	}
	for _, a := range AnswerSources {
		if s == a {
			return true
		}
	}
	return false
}

// RequestEvent is the permission.request event of docs/events.md#permissionrequest: the
// backend's raw fields, then request_id, tool, question, options
// ({optionId, kind, name?, requiresMessage?}), resolver and, when set,
// requires_user_input.
func RequestEvent(req sdk.PermissionRequest, resolver string) event.Event {
	ev := event.Event{}
	for k, v := range req.Fields {
		ev[k] = v
	}
	opts := make([]any, len(req.Options))
	for i, o := range req.Options {
		m := map[string]any{"optionId": o.ID, "kind": o.Kind}
		if o.Name != "" {
			m["name"] = o.Name
		}
		if o.RequiresMessage {
			m["requiresMessage"] = true
		}
		opts[i] = m
	}
	ev[event.KeyEvent] = string(event.TypePermissionRequest)
	ev["request_id"] = req.ID
	ev["options"] = opts
	ev["resolver"] = resolver
	if req.Tool != "" {
		ev["tool"] = req.Tool
	}
	if req.Question != "" {
		ev["question"] = req.Question
	}
	if req.RequiresUserInput {
		ev["requires_user_input"] = true
	}
	return ev
}

// ResponseEvent is the permission.response event of docs/events.md#permissionresponse; kind is
// the option's normalised kind (allow, reject or unknown).
func ResponseEvent(requestID, optionID, optionKind, source string) event.Event {
	return event.Event{
		event.KeyEvent: string(event.TypePermissionResponse), "request_id": requestID, "option_id": optionID,
		"kind": sdk.NormalizeKind(optionKind), "source": source,
	}
}

// cancelledResponseEvent is the permission.response of an answer whose
// outcome is cancelled: kind "unknown" (nothing was allowed or rejected) and
// outcome "cancelled", an addition to docs/events.md#permissionresponse.
func cancelledResponseEvent(requestID, optionID, source string) event.Event {
	ev := ResponseEvent(requestID, optionID, "", source)
	ev["outcome"] = sdk.OutcomeCancelled
	return ev
}

// errorEvent is avenor.error{source:"permission"} (docs/events.md#avenorerror).
func errorEvent(msg string) event.Event {
	return event.Event{event.KeyEvent: string(event.TypeError), "source": "permission", "message": msg}
}

// warningEvent is avenor.warning{source:"permission"}: something the file
// handler ignored while it keeps waiting.
func warningEvent(msg string) event.Event {
	return event.Event{event.KeyEvent: string(event.TypeWarning), "source": "permission", "message": msg}
}
