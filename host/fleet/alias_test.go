package fleet

import (
	"encoding/json"
	"testing"
)

// TestMovedPermissionKeepsItsID: a backend that raises the resumed turn's
// permission under a new id (claude, codex) shows the fleet the id raised
// before the move, in the event stream and in status, and the answer by
// that id goes to the new request.
func TestMovedPermissionKeepsItsID(t *testing.T) {
	n := &node{cfg: NodeConfig{Node: "n1"}}
	o := &owned{e: Entry{RuntimeID: "n2/rt_1", Local: "rt_4", Base: 6}, carry: "perm_1"}

	// Events before the re-raise pass unchanged.
	_, seq, err := fleetEvent([]byte(`{"event":"agent.message_chunk","seq":2,"runtime_id":"rt_4"}`), o, n.aliasOf(o, []byte(`{"event":"agent.message_chunk","seq":2}`)))
	if err != nil || seq != 8 {
		t.Fatalf("seq %d, %v", seq, err)
	}
	req := []byte(`{"event":"permission.request","seq":3,"runtime_id":"rt_4","request_id":"toolu_77"}`)
	b, seq, err := fleetEvent(req, o, n.aliasOf(o, req))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		RuntimeID string `json:"runtime_id"`
		RequestID string `json:"request_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(b, &ev)
	if ev.RequestID != "perm_1" || ev.RuntimeID != "n2/rt_1" || ev.Seq != 9 || seq != 9 {
		t.Errorf("re-raised request in the fleet stream: %s", b)
	}
	// Only the first request after the move is the re-raised one.
	next := []byte(`{"event":"permission.request","seq":5,"request_id":"toolu_78"}`)
	b, _, _ = fleetEvent(next, o, n.aliasOf(o, next))
	_ = json.Unmarshal(b, &ev)
	if ev.RequestID != "toolu_78" {
		t.Errorf("a later request was rewritten: %s", b)
	}
	resp := []byte(`{"event":"permission.response","seq":4,"request_id":"toolu_77"}`)
	b, _, _ = fleetEvent(resp, o, n.aliasOf(o, resp))
	_ = json.Unmarshal(b, &ev)
	if ev.RequestID != "perm_1" {
		t.Errorf("the response to the re-raised request: %s", b)
	}
	// Status: the pending permission under the fleet's id, runtime and seq.
	st := n.rewriteEntry(json.RawMessage(`{"runtime_id":"rt_4","pending_permission":true,"permission":{"event":"permission.request","seq":3,"runtime_id":"rt_4","request_id":"toolu_77"}}`), o)
	var s struct {
		RuntimeID  string `json:"runtime_id"`
		Node       string `json:"node"`
		Permission struct {
			RuntimeID string `json:"runtime_id"`
			RequestID string `json:"request_id"`
			Seq       int64  `json:"seq"`
		} `json:"permission"`
	}
	_ = json.Unmarshal(st, &s)
	if s.RuntimeID != "n2/rt_1" || s.Node != "n1" || s.Permission.RuntimeID != "n2/rt_1" || s.Permission.RequestID != "perm_1" || s.Permission.Seq != 9 {
		t.Errorf("status: %s", st)
	}
	if a := n.alias(o); a.fleet != "perm_1" || a.local != "toolu_77" {
		t.Errorf("answer_permission maps %+v, want perm_1 → toolu_77", a)
	}
}
