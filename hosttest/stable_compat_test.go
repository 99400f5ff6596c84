package hosttest

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Four compatibility points: how `avenor stable` answers a harness written for the
// original — error codes (docs/control-protocol.md#errors), list statuses (docs/control-protocol.md#list), status {} (docs/control-protocol.md#status) and
// wait_for_capacity (docs/control-protocol.md#methods).

// rawCall sends one JSON-RPC line on a fresh connection and returns the
// response line decoded.
func rawCall(t *testing.T, sock, line string) map[string]any {
	t.Helper()
	nc, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := bufio.NewReader(nc).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s answered %q: %v", line, resp, err)
	}
	return m
}

// rawError returns a response's error code and message.
func rawError(t *testing.T, req string, resp map[string]any) (int, string) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Fatalf("%s: want an error, got %v", req, resp)
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

// TestStableHandlerErrorsAreServerErrors (docs/control-protocol.md#errors): a method
// whose own logic fails — an unknown runtime_id, a spawn without any of
// prompt / prompt_file / loop_file / team_file, a refused combination, a
// file it cannot use — answers -32000 with the error text as message.
// -32602 stays for params that do not decode or miss a required key,
// -32601 for unknown methods.
func TestStableHandlerErrorsAreServerErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("errs", nil)
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi"})
	waitEnded(t, c, sp.RuntimeID, 15*time.Second)

	// call sends params as given on the owner's connection.
	call := func(method, params string) *client.RPCError {
		t.Helper()
		var p any
		if params != "" {
			p = json.RawMessage(params)
		}
		err := c.Call(ctxT(t, 30*time.Second), method, p, nil)
		if err == nil {
			t.Fatalf("%s %s succeeded", method, params)
		}
		return rpcError(t, err)
	}
	for _, tc := range []struct{ method, params, msg string }{
		{"status", `{"runtime_id":"rt_9"}`, `runtime "rt_9" not found`},
		{"result", `{"runtime_id":"rt_9"}`, `runtime "rt_9" not found`},
		{"history", `{"runtime_id":"rt_9"}`, `runtime "rt_9" not found`},
		{"subscribe", `{"runtime_id":"rt_9","replay":true}`, `runtime "rt_9" not found`},
		{"cancel", `{"runtime_id":"rt_9"}`, `runtime "rt_9" not found`},
		{"prompt", `{"runtime_id":"rt_9","text":"x"}`, `runtime "rt_9" not found`},
		{"interrupt_and_prompt", `{"runtime_id":"rt_9","text":"x","keep_queue":false}`, `runtime "rt_9" not found`},
		{"answer_permission", `{"runtime_id":"rt_9","request_id":"p","option_id":"o"}`, `runtime "rt_9" not found`},
		{"send_to_parent", `{"runtime_id":"rt_9","message":"m"}`, `runtime "rt_9" not found`},
		{"spawn", `{"backend":"scripted"}`, "prompt, prompt_file, loop_file, or team_file is required"},
		{"spawn", `{"backend":"scripted","prompt":"x","prompt_file":"y"}`, "prompt and prompt_file are mutually exclusive"},
		{"spawn", `{"backend":"scripted","loop_file":"` + w.path("missing.json") + `"}`, "load loop config"},
		{"spawn", `{"backend":"scripted","prompt_file":"` + w.path("missing.md") + `"}`, "prompt_file: "},
		{"spawn", `{"backend":"scripted","prompt":"x","dir":"` + w.path("nodir") + `"}`, "is not a directory"},
		{"send_to_parent", `{"runtime_id":"` + sp.RuntimeID + `","message":"m"}`, "has no parent"},
	} {
		re := call(tc.method, tc.params)
		if re.Code != -32000 || !strings.Contains(re.Message, tc.msg) {
			t.Errorf("%s %s: got %d %q, want -32000 with %q in the message", tc.method, tc.params, re.Code, re.Message, tc.msg)
		}
	}
	// The unknown runtime's message is exactly the original's text.
	resp := rawCall(t, s.sock, `{"jsonrpc":"2.0","id":20,"method":"status","params":{"runtime_id":"rt_9"}}`)
	if _, msg := rawError(t, "status rt_9", resp); msg != `runtime "rt_9" not found` {
		t.Errorf("status rt_9 message %q, want %q", msg, `runtime "rt_9" not found`)
	}

	for _, tc := range []struct {
		method, params string
		code           int
	}{
		{"status", `{"runtime_id":5}`, -32602},
		{"status", `[1]`, -32602},
		{"prompt", `{"runtime_id":"rt_1"}`, -32602},
		{"history", `{}`, -32602},
		{"spawn", `{"prompt":5}`, -32602},
		{"spawn", `{"prompt":"x","timeout":"soon"}`, -32602},
		{"no_such_method", ``, -32601},
	} {
		if re := call(tc.method, tc.params); re.Code != tc.code {
			t.Errorf("%s %s: got %d %q, want %d", tc.method, tc.params, re.Code, re.Message, tc.code)
		}
	}
	// The CLI prints the server's text.
	r := w.run("control", "--socket", s.sock, "status", "rt_9")
	if r.code != 1 || !strings.Contains(r.stderr, `avenor control: status: runtime "rt_9" not found (-32000)`) {
		t.Errorf("avenor control status rt_9: %s", r)
	}
}

// TestStableParkedListsIdle (docs/control-protocol.md#list): a runtime parked after
// its turn, waiting for a follow-up, lists as idle (parked:true beside it);
// during a turn it is running; a loop runtime whose loop has ended can take
// no prompt and is ended. avenor await still reports the parked turn's END.
func TestStableParkedListsIdle(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	loopCfg := w.writeConfig("loop.json", map[string]any{"pre": []phase{{"name": "only", "prompt": `say "once\n"`}}})
	s := w.startStable("idle", nil)
	c := s.client()

	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say first\nsleep 1500ms", Label: "idler"})
	if rt := runtimeOf(t, c, sp.RuntimeID); rt.Status != "running" || rt.Parked {
		t.Fatalf("during its turn: %s", rt.Raw)
	}
	rt := waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "parked", func(rt client.Runtime) bool { return rt.Parked })
	if rt.Status != "idle" || rt.ExitCode == nil || *rt.ExitCode != 0 || rt.StopReason != "end_turn" {
		t.Fatalf("parked runtime: status %q, want idle: %s", rt.Status, rt.Raw)
	}
	list, err := c.List(ctxT(t, 5*time.Second))
	if err != nil || len(list) != 1 || list[0].Status != "idle" || !list[0].Parked {
		t.Fatalf("list: %v %+v", err, list)
	}
	// avenor await on the parked runtime: its turn is over, END done.
	if r := w.run("await", "idler", "--socket", s.sock); r.code != 0 || r.stdout != "END done "+sp.RuntimeID+"\n" {
		t.Errorf("await on a parked runtime: %s", r)
	}
	// An idle runtime takes a follow-up: running again, then idle.
	if err := c.Prompt(ctxT(t, 10*time.Second), "say second\nsleep 1s", sp.RuntimeID); err != nil {
		t.Fatal(err)
	}
	if rt := runtimeOf(t, c, sp.RuntimeID); rt.Status != "running" {
		t.Fatalf("during the follow-up: %s", rt.Raw)
	}
	waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "idle again", func(rt client.Runtime) bool { return rt.Status == "idle" })

	// A loop that has ended takes no prompt: ended.
	res, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "dir": w.work, "loop_file": loopCfg})
	if err != nil {
		t.Fatal(err)
	}
	id := res["runtime_id"].(string)
	lrt := waitRuntime(t, c, id, 20*time.Second, "parked", func(rt client.Runtime) bool { return rt.Parked })
	if lrt.Status != "ended" {
		t.Fatalf("ended loop: status %q, want ended: %s", lrt.Status, lrt.Raw)
	}
	if err := c.Prompt(ctxT(t, 5*time.Second), "again", id); err == nil {
		t.Fatal("a prompt to an ended loop was accepted")
	}
}

// TestStableStatusSnapshot (docs/control-protocol.md#status): status {} on a
// supervisor is the one-shot snapshot of its default runtime — the root
// runtime spawned last — with the supervisor's summary beside it; without
// a runtime, the summary alone.
func TestStableStatusSnapshot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("snap", nil)
	c := s.client()
	status := func() map[string]any {
		t.Helper()
		var m map[string]any
		if err := c.Call(ctxT(t, 5*time.Second), "status", nil, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	empty := status()
	if empty["supervisor"] != true || empty["runtimes"] != float64(0) || empty["supervisor_run_id"] == "" || empty["run_id"] != empty["supervisor_run_id"] {
		t.Fatalf("status {} without a runtime: %v", empty)
	}
	if _, ok := empty["turn_state"]; ok {
		t.Fatalf("status {} without a runtime has a snapshot: %v", empty)
	}

	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say first\nsleep 3s", Label: "snapper"})
	rt := runtimeOf(t, c, sp.RuntimeID)
	st := status()
	for _, k := range []string{"session_id", "run_id", "run_label", "phase", "phase_label", "last_event", "retry_attempt",
		"max_retries", "pending_permission", "permission", "started_at", "updated_at", "turn_state"} {
		if _, ok := st[k]; !ok {
			t.Errorf("status {} lacks %q (docs/control-protocol.md#status): %v", k, st)
		}
	}
	if st["runtime_id"] != sp.RuntimeID || st["session_id"] != sp.SessionID || st["run_id"] != rt.RunID || st["run_label"] != "snapper" ||
		st["turn_state"] != "running" || st["pending_permission"] != false || st["permission"] != nil {
		t.Fatalf("status {} of a running runtime: %v", st)
	}
	if st["supervisor"] != true || st["runtimes"] != float64(1) || st["supervisor_run_id"] == rt.RunID || st["supervisor_run_id"] == "" {
		t.Fatalf("status {} lost the supervisor summary: %v", st)
	}
	var ref client.Status
	if err := json.Unmarshal(mustJSON(t, st), &ref); err != nil || ref.TurnState != "running" || ref.SessionID != sp.SessionID {
		t.Fatalf("status {} does not decode as the one-shot snapshot: %v %+v", err, ref)
	}

	// A child (parent_id names a runtime here) does not take the default.
	child := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say child", ParentID: sp.RuntimeID})
	waitEnded(t, c, child.RuntimeID, 15*time.Second)
	if st := status(); st["runtime_id"] != sp.RuntimeID {
		t.Fatalf("status {} after a child spawn follows %v, want %s", st["runtime_id"], sp.RuntimeID)
	}
	// The next root runtime does: the one the harness spawned last.
	next := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say next"})
	waitEnded(t, c, next.RuntimeID, 15*time.Second)
	st = status()
	if st["runtime_id"] != next.RuntimeID || st["session_id"] != next.SessionID || st["runtimes"] != float64(3) {
		t.Fatalf("status {} after a second root spawn: %v", st)
	}
	if ts := st["turn_state"]; ts != "ended" && ts != "idle" {
		t.Fatalf("status {} of a parked runtime: turn_state %v", ts)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStableWaitForCapacity (docs/control-protocol.md#wait_for_capacity): wait_for_capacity
// answers at once while a spawn would be admitted, times out (saying so)
// while --max-runtimes is full, and wakes when a slot is given back — in
// this supervisor or, through the tree budget, in another of its tree. The
// Go client and `avenor control wait-for-capacity` reach it.
func TestStableWaitForCapacity(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("cap", nil, "--max-runtimes", "1", "--max-tree-budget", "1")
	c := s.client()

	free, err := c.WaitForCapacity(ctxT(t, 10*time.Second), "5s")
	if err != nil || !free.Available || free.TimedOut || free.Active != 0 || free.Capacity != 1 || free.TreeCapacity != 1 {
		t.Fatalf("wait_for_capacity with a free slot: %v %+v", err, free)
	}

	spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "sleep 2s"})
	from := time.Now()
	full, err := c.WaitForCapacity(ctxT(t, 10*time.Second), 0.3)
	if d := time.Since(from); err != nil || full.Available || !full.TimedOut || full.Active != 1 || full.Capacity != 1 || d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("wait_for_capacity 0.3 s while full: %v %+v after %v", err, full, d)
	}
	r := w.run("control", "--socket", s.sock, "wait-for-capacity", "--timeout", "200ms")
	if r.code != 124 || !strings.Contains(r.stdout, `"timed_out": true`) || !strings.Contains(r.stdout, `"available": false`) {
		t.Errorf("avenor control wait-for-capacity while full: %s", r)
	}

	// The slot comes back when rt_1's 2 s turn ends: the wait wakes then.
	got, err := c.WaitForCapacity(ctxT(t, 40*time.Second), "30s")
	if d := time.Since(from); err != nil || !got.Available || got.TimedOut || got.Active != 0 || d > 10*time.Second {
		t.Fatalf("wait_for_capacity across the end of rt_1: %v %+v after %v", err, got, d)
	}
	if r := w.run("control", "--socket", s.sock, "wait-for-capacity", "--timeout", "5"); r.code != 0 || !strings.Contains(r.stdout, `"available": true`) {
		t.Errorf("avenor control wait-for-capacity with a free slot: %s", r)
	}

	// Bad timeouts are refused, naming the bound.
	for _, bad := range []any{"soon", -1, "2h"} {
		if _, err := c.WaitForCapacity(ctxT(t, 5*time.Second), bad); err == nil || rpcError(t, err).Code != client.CodeInvalidParams {
			t.Errorf("wait_for_capacity timeout %v: %v, want -32602", bad, err)
		}
	}

	// The tree budget: a nested supervisor waits for a slot its root holds.
	tb, err := c.TreeBudget(ctxT(t, 5*time.Second))
	if err != nil || tb.Path == "" {
		t.Fatalf("tree_budget: %v %+v", err, tb)
	}
	nested := w.startStable("capnested", []string{"AVENOR_TREE_BUDGET=" + tb.Path})
	nc := nested.client()
	spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "sleep 2s"})
	tree, err := nc.WaitForCapacity(ctxT(t, 10*time.Second), 0.2)
	if err != nil || tree.Available || !tree.TimedOut || tree.Active != 0 || tree.TreeActive != 1 || tree.TreeCapacity != 1 {
		t.Fatalf("nested wait_for_capacity in a full tree: %v %+v", err, tree)
	}
	from = time.Now()
	tree, err = nc.WaitForCapacity(ctxT(t, 40*time.Second), "30s")
	if d := time.Since(from); err != nil || !tree.Available || tree.TreeActive != 0 || d > 10*time.Second {
		t.Fatalf("nested wait_for_capacity across the root's runtime end: %v %+v after %v", err, tree, d)
	}
	nested.signal(syscall.SIGTERM)
	nested.wait()
}
