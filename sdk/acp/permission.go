package acp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// permissionParams are the params of session/request_permission.
type permissionParams struct {
	SessionID string            `json:"sessionId"`
	ToolCall  map[string]any    `json:"toolCall"`
	Options   []PermissionOffer `json:"options"`
}

// PermissionOffer is one option an agent offers. Option ids are
// agent-specific (OpenCode once/always/reject, Gemini
// proceed_once/proceed_always/cancel, Cursor allow-once/…): answers pick
// by kind and send the id back.
type PermissionOffer struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name,omitempty"`
	Kind     string `json:"kind"`
}

// PermissionOutcome is ACP's answer to a permission request.
type PermissionOutcome struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId,omitempty"`
	} `json:"outcome"`
}

func cancelledOutcome() PermissionOutcome {
	var o PermissionOutcome
	o.Outcome.Outcome = runtime.OutcomeCancelled
	return o
}

func selectedOutcome(optionID string) PermissionOutcome {
	var o PermissionOutcome
	o.Outcome.Outcome = runtime.OutcomeSelected
	o.Outcome.OptionID = optionID
	return o
}

// permissionRequest is the host's request for a session/request_permission:
// the JSON-RPC id as request_id, the agent's options and kinds unchanged,
// the tool (best effort) and the tool call's title as the question, and
// the raw toolCall among the event's fields (docs/events.md#permissionrequest).
func permissionRequest(id json.RawMessage, p permissionParams, tool string) runtime.PermissionRequest {
	req := runtime.PermissionRequest{ID: IDString(id), Tool: tool, Fields: map[string]any{}}
	for _, o := range p.Options {
		req.Options = append(req.Options, runtime.PermissionOption{ID: o.OptionID, Kind: o.Kind, Name: o.Name})
	}
	if p.ToolCall != nil {
		req.Fields["toolCall"] = p.ToolCall
		if title, _ := p.ToolCall["title"].(string); title != "" {
			req.Question = title
		}
		if req.Tool == "" {
			req.Tool, _ = p.ToolCall["kind"].(string)
		}
	}
	if p.SessionID != "" {
		req.Fields["session_id"] = p.SessionID
	}
	return req
}

// permissionAnswer is the answer to send for the host's decision: the
// chosen option, or "cancelled" when the host cancelled (or could not
// decide: nothing is ever allowed by default).
func permissionAnswer(offers []PermissionOffer, d runtime.PermissionDecision, err error) PermissionOutcome {
	if err != nil || d.Outcome != runtime.OutcomeSelected {
		return cancelledOutcome()
	}
	if d.OptionID != "" {
		return selectedOutcome(d.OptionID)
	}
	// A decision by kind alone: the first offer of that kind.
	for _, o := range offers {
		if runtime.DecisionKind(o.Kind) == d.Kind && d.Kind != "" {
			return selectedOutcome(o.OptionID)
		}
	}
	return cancelledOutcome()
}

// handlePermission relays session/request_permission to the host. When the
// tool call was never announced (Gemini asks before any tool_call), a
// synthetic tool.call goes first, so the request always has its tool call.
func (s *Session) handlePermission(ctx context.Context, id json.RawMessage, params json.RawMessage) (any, *RPCError) {
	var p permissionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "malformed session/request_permission: " + err.Error()}
	}
	var toolID string
	if p.ToolCall != nil {
		toolID, _ = p.ToolCall["toolCallId"].(string)
		if ev, ok := s.mapper.announce(toolID, p.SessionID, p.ToolCall); ok {
			s.emit(ev)
		}
	}
	req := permissionRequest(id, p, s.mapper.tool(toolID))
	ctx, stop := s.turnScoped(ctx)
	defer stop()
	d, err := s.AskPermission(ctx, req)
	if errors.Is(context.Cause(ctx), ErrWithdrawn) {
		return nil, &RPCError{Code: CodeRequestCancelled, Message: "request withdrawn by the agent"}
	}
	if err != nil {
		s.log.Debug("permission request ended without a decision", "request_id", req.ID, "error", err)
	}
	return permissionAnswer(p.Options, d, err), nil
}
