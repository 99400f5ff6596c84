package runtime

import (
	"context"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Permissions resolves a session's permission requests. Record announces the
// request (emitting permission.request through emit) before it returns, and
// the returned function waits for the decision. host/permission's broker
// implements it; a failure of the broker (not ctx) fails the attempt.
type Permissions interface {
	Record(ctx context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error)
}

// PermissionsFunc builds the Permissions of one attempt; nil uses the
// built-in AutoOrWait.
type PermissionsFunc func(sessionID string) Permissions

// AutoOrWait is the minimal resolver: with Auto it approves ordinary requests
// with their first allow option (source "avenor"); otherwise — and always for
// requests that need user input — the request waits until the turn ends.
type AutoOrWait struct{ Auto bool }

// Record implements Permissions.
func (a AutoOrWait) Record(ctx context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	resolver := "none"
	var pick *sdk.PermissionOption
	if a.Auto && !req.RequiresUserInput {
		for i := range req.Options {
			if sdk.NormalizeKind(req.Options[i].Kind) == "allow" {
				pick = &req.Options[i]
				break
			}
		}
		if pick != nil {
			resolver = "automatic"
		}
	}
	emit(RequestEvent(req, resolver))
	return func(ctx context.Context) (sdk.PermissionDecision, error) {
		if pick == nil {
			<-ctx.Done()
			return sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}, ctx.Err()
		}
		d := sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: pick.ID, Kind: sdk.DecisionKind(pick.Kind)}
		emit(ResponseEvent(req.ID, pick.ID, pick.Kind, "avenor"))
		return d, nil
	}
}

// RequestEvent is the permission.request event of contract §2.4.
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
	ev["event"] = "permission.request"
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

// ResponseEvent is the permission.response event of contract §2.4.
func ResponseEvent(requestID, optionID, optionKind, source string) event.Event {
	return event.Event{
		"event": "permission.response", "request_id": requestID, "option_id": optionID,
		"kind": sdk.NormalizeKind(optionKind), "source": source,
	}
}
