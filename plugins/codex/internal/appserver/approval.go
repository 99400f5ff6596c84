package appserver

import (
	"context"
	"encoding/json"
	"github.com/avenor-go/avenor/sdk/jsonrpc"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Codex's approval requests (runtime-protocols.md §3.5).
const (
	methodCommandApproval     = "item/commandExecution/requestApproval"
	methodFileChangeApproval  = "item/fileChange/requestApproval"
	methodPermissionsApproval = "item/permissions/requestApproval"
)

// approvalParams is what the three approval requests carry.
type approvalParams struct {
	ThreadID           string            `json:"threadId"`
	TurnID             string            `json:"turnId"`
	ItemID             string            `json:"itemId"`
	Command            string            `json:"command"`
	Cwd                string            `json:"cwd"`
	Reason             string            `json:"reason"`
	GrantRoot          string            `json:"grantRoot"`
	Permissions        json.RawMessage   `json:"permissions"`
	AvailableDecisions []json.RawMessage `json:"availableDecisions"`
}

// decisionOption is one offered option and the decision it answers.
type decisionOption struct {
	opt      runtime.PermissionOption
	decision json.RawMessage
}

// knownDecisions names the kinds and labels of Codex's decisions. "cancel"
// declines and also interrupts the turn: its kind is the plain "reject", so
// a harness answering "reject once" lands on decline, which lets the turn
// go on, and cancel is chosen only by its id.
var knownDecisions = map[string]runtime.PermissionOption{
	"accept":                        {Kind: "allow_once", Name: "Allow once"},
	"acceptForSession":              {Kind: "allow_always", Name: "Allow for this session"},
	"acceptWithExecpolicyAmendment": {Kind: "allow_always", Name: "Always allow this command"},
	"applyNetworkPolicyAmendment":   {Kind: "allow_always", Name: "Apply the proposed network rule"},
	"decline":                       {Kind: "reject_once", Name: "Decline (the turn goes on)"},
	"cancel":                        {Kind: "reject", Name: "Decline and stop the turn"},
}

// decisionOptions builds the options from availableDecisions (strings, or
// objects keyed by the decision's name), defaulting to accept,
// acceptForSession, decline, cancel. decline is always offered: Codex
// takes it even where it leaves it out of availableDecisions (0.171 lists
// accept, acceptWithExecpolicyAmendment, cancel), and without it a reject
// would have to stop the whole turn.
func decisionOptions(method string, available []json.RawMessage) []decisionOption {
	if method == methodPermissionsApproval {
		available = nil
	}
	if len(available) == 0 {
		for _, d := range []string{"accept", "acceptForSession", "decline", "cancel"} {
			available = append(available, json.RawMessage(`"`+d+`"`))
		}
		if method == methodPermissionsApproval {
			available = available[:3]
		}
	}
	var out []decisionOption
	seen := map[string]bool{}
	add := func(id string, raw json.RawMessage) {
		if seen[id] {
			return
		}
		seen[id] = true
		opt, ok := knownDecisions[id]
		if !ok {
			opt = runtime.PermissionOption{Kind: "unknown", Name: id}
		}
		opt.ID = id
		out = append(out, decisionOption{opt: opt, decision: raw})
	}
	for _, raw := range available {
		var name string
		if json.Unmarshal(raw, &name) == nil {
			add(name, raw)
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
			for k := range obj {
				add(k, raw)
			}
		}
	}
	if !seen["decline"] {
		// Before cancel, so "the first reject" is the one that lets the
		// turn go on.
		var rest []decisionOption
		for i, o := range out {
			if o.opt.ID == "cancel" {
				rest = append(rest, out[i:]...)
				out = out[:i:i]
				break
			}
		}
		add("decline", json.RawMessage(`"decline"`))
		out = append(out, rest...)
	}
	return out
}

// HandleRequest implements jsonrpc.Handler: Codex's requests to the client.
// Approvals go to the host's broker, questions to the host as questions;
// anything else is refused at once
// (-32601) so Codex never waits, and counted as an unknown frame.
func (s *Session) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpc.RPCError) {
	switch method {
	case methodCommandApproval, methodFileChangeApproval, methodPermissionsApproval:
		return s.approval(ctx, method, jsonrpc.IDString(jsonrpc.RequestID(ctx)), params)
	case methodUserInput:
		if s.cfg.Questions {
			return s.userInput(ctx, jsonrpc.IDString(jsonrpc.RequestID(ctx)), params)
		}
	}
	s.passNative(method, params)
	return nil, jsonrpc.MethodNotFound(method)
}

func (s *Session) approval(ctx context.Context, method, requestID string, params json.RawMessage) (any, *jsonrpc.RPCError) {
	var p approvalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.RPCError{Code: jsonrpc.CodeInvalidParams, Message: "avenor could not read " + method + ": " + err.Error()}
	}
	opts := decisionOptions(method, p.AvailableDecisions)
	req := runtime.PermissionRequest{ID: requestID, Fields: map[string]any{"toolCallId": p.ItemID, "native_method": method,
		"threadId": p.ThreadID, "turnId": p.TurnID, "session_id": s.id}}
	for _, o := range opts {
		req.Options = append(req.Options, o.opt)
	}
	switch method {
	case methodCommandApproval:
		req.Tool, req.Question = "bash", p.Command
		req.Fields["command"], req.Fields["cwd"] = p.Command, p.Cwd
	case methodFileChangeApproval:
		req.Tool, req.Question = "edit", "apply file changes"
		if p.GrantRoot != "" {
			req.Fields["grantRoot"] = p.GrantRoot
		}
	default:
		req.Tool, req.Question = "permissions", "grant additional permissions"
		req.Fields["permissions"] = rawJSON(p.Permissions)
	}
	if p.Reason != "" {
		req.Question += " (" + p.Reason + ")"
		req.Fields["reason"] = p.Reason
	}

	// A cancel of the turn ends the wait; so does the connection closing.
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		var stop func() bool
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop = context.AfterFunc(t.rt.Context(), cancel)
		defer func() { stop(); cancel() }()
	}
	s.gate.Flush()
	d, err := s.host.AskPermission(ctx, req)
	chosen := "cancel"
	if err == nil && d.Outcome == runtime.OutcomeSelected {
		chosen = "decline"
		if d.Allowed() {
			chosen = "accept"
		}
		for _, o := range opts {
			if o.opt.ID == d.OptionID {
				chosen = o.opt.ID
			}
		}
	}
	if method == methodPermissionsApproval {
		switch chosen {
		case "accept":
			return map[string]any{"permissions": rawJSON(p.Permissions), "scope": "turn"}, nil
		case "acceptForSession":
			return map[string]any{"permissions": rawJSON(p.Permissions), "scope": "session"}, nil
		}
		return map[string]any{"permissions": map[string]any{}}, nil
	}
	for _, o := range opts {
		if o.opt.ID == chosen {
			return map[string]any{"decision": o.decision}, nil
		}
	}
	return map[string]any{"decision": chosen}, nil
}
