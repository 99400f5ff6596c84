package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/avenor-go/avenor/client"
)

// rpcRequest is a routed control call (fleet socket → node): the method
// and its params as the fleet socket received them, runtime_id a fleet id.
type rpcRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// rpcResponse is the node's answer: the supervisor's result, or its
// JSON-RPC error unchanged.
type rpcResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object as it crosses the fleet.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// toRPCError keeps a supervisor's error as it was; anything else is a
// server error with its text.
func toRPCError(err error) *rpcError {
	var re *client.RPCError
	if errors.As(err, &re) {
		return &rpcError{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	return &rpcError{Code: -32000, Message: err.Error()}
}

func notFound(id, where string) *rpcError {
	d, _ := json.Marshal(map[string]any{"runtime_id": id, "detail": "no runtime of the fleet has that id " + where + "; avenor control list shows the runtimes"})
	return &rpcError{Code: -32000, Message: fmt.Sprintf("runtime %q not found", id), Data: d}
}

// serveRPC answers one routed call by forwarding it to the supervisor.
func (n *node) serveRPC(ctx context.Context, m *nats.Msg) {
	var req rpcRequest
	var resp rpcResponse
	if err := json.Unmarshal(m.Data, &req); err != nil {
		resp.Error = &rpcError{Code: -32600, Message: "invalid request"}
	} else {
		cctx, cancel := context.WithTimeout(ctx, RPCTimeout)
		resp.Result, resp.Error = n.forward(cctx, req)
		cancel()
	}
	b, _ := json.Marshal(resp)
	_ = m.Respond(b)
}

func (n *node) forward(ctx context.Context, req rpcRequest) (json.RawMessage, *rpcError) {
	switch req.Method {
	case "list":
		list, err := n.ctl.List(ctx)
		if err != nil {
			return nil, toRPCError(err)
		}
		out := []json.RawMessage{}
		for _, rt := range list {
			n.mu.Lock()
			o := n.byLocal[rt.RuntimeID]
			n.mu.Unlock()
			if o != nil {
				out = append(out, n.rewriteEntry(rt.Raw, o))
			}
		}
		b, _ := json.Marshal(out)
		return b, nil
	case "shutdown":
		var raw json.RawMessage
		if err := n.ctl.Call(ctx, "shutdown", req.Params, &raw); err != nil {
			return nil, toRPCError(err)
		}
		return raw, nil
	}
	params, err := decodeObject(req.Params)
	if err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid params"}
	}
	id, _ := params["runtime_id"].(string)
	n.mu.Lock()
	o := n.byFleet[id]
	n.mu.Unlock()
	if o == nil {
		return nil, notFound(id, "on node "+n.cfg.Node)
	}
	params["runtime_id"] = o.e.Local
	if req.Method == "answer_permission" {
		// The id the fleet showed for a re-raised permission is the one
		// the harness answers; the supervisor knows the new one.
		if a := n.alias(o); a.local != "" && params["request_id"] == a.fleet {
			params["request_id"] = a.local
		}
	}
	var raw json.RawMessage
	if err := n.ctl.Call(ctx, req.Method, params, &raw); err != nil {
		return nil, toRPCError(err)
	}
	switch req.Method {
	case "status":
		raw = n.rewriteEntry(raw, o)
	case "history":
		raw = n.rewriteHistory(raw, o)
	}
	return raw, nil
}

// rewriteHistory gives history's events their fleet id and seq.
func (n *node) rewriteHistory(raw json.RawMessage, o *owned) json.RawMessage {
	var h struct {
		Events    []json.RawMessage `json:"events"`
		LatestSeq int64             `json:"latest_seq"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return raw
	}
	evs := make([]json.RawMessage, 0, len(h.Events))
	for _, ev := range h.Events {
		if b, _, err := fleetEvent(ev, o, n.alias(o)); err == nil {
			evs = append(evs, b)
		}
	}
	b, _ := json.Marshal(map[string]any{"runtime_id": o.e.RuntimeID, "events": evs, "latest_seq": h.LatestSeq + o.e.Base})
	return b
}

// alias is o's request alias (see owned.carry).
func (n *node) alias(o *owned) requestAlias {
	n.mu.Lock()
	defer n.mu.Unlock()
	return requestAlias{fleet: o.permFleet, local: o.permLocal}
}

// rewriteEntry gives a supervisor's runtime entry its fleet id and node,
// and its pending permission the fleet's runtime id, seq and request id.
func (n *node) rewriteEntry(raw json.RawMessage, o *owned) json.RawMessage {
	m, err := decodeObject(raw)
	if err != nil {
		return raw
	}
	m["runtime_id"], m["node"] = o.e.RuntimeID, n.cfg.Node
	if p, ok := m["permission"].(map[string]any); ok {
		fleetFields(p, o.e.RuntimeID, o.e.Base, n.alias(o))
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}
