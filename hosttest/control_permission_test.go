package hosttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestControlAnswersPermission: a harness connected to the control socket
// before the request gets it (resolver "reserved"), sees it in status, and
// answers it with answer_permission; the decision reaches the plugin and the
// response says source "control".
func TestControlAnswersPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath, sent := w.path("c.sock"), w.path("events.ndjson"), w.path("run.done")
	p := w.start(nil, "--backend", "scripted", "--run-id", "ctl", "--control-socket", sock,
		"--on-event", evPath, "--sentinel-file", sent,
		"--prompt", "child 30\nsleep 500ms\npermission tool=bash question=\"Run?\"\nsay after")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	var st client.Status
	if !waitFor(10*time.Second, func() bool {
		var err error
		st, err = c.Status(ctx)
		return err == nil && st.PendingPermission
	}) {
		t.Fatalf("no pending permission in status: %+v", st)
	}
	if st.Phase != "waiting" || st.PID <= 0 {
		t.Errorf("status during the request: phase %q pid %d", st.Phase, st.PID)
	}
	evs := readEvents(t, evPath)
	req := only(evs, "permission.request")
	if len(req) != 1 || req[0].str("resolver") != "reserved" {
		t.Fatalf("permission.request %v: a connected control client must take it (resolver reserved)", req)
	}
	if err := c.AnswerPermission(ctx, req[0].str("request_id"), "allow", ""); err != nil {
		t.Fatal(err)
	}
	res := p.wait()
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs = readEvents(t, evPath)
	resp := only(evs, "permission.response")
	if len(resp) != 1 || resp[0].str("source") != "control" || resp[0].str("option_id") != "allow" {
		t.Fatalf("permission.response %v", resp)
	}
	if end := lastSessionEnd(t, evs); end.str("final_output") != "permission allow (allow_once)after" {
		t.Fatalf("session.end %v", end)
	}
	checkSentinel(t, sent, sentinelBytes("DONE", sessionOf(t, evs), "end_turn", 0, "ctl"))
}

// TestControlSecondAnswerRefused: a second answer_permission for a request
// the first one decided is an error (-32000) that says it was already
// answered, not {"accepted":true} for an answer nobody applies, and the first
// answer is the one the plugin got.
func TestControlSecondAnswerRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	p := w.start(nil, "--backend", "scripted", "--run-id", "ctl2", "--control-socket", sock, "--on-event", evPath,
		"--prompt", "child 30\nsleep 300ms\npermission tool=bash question=\"Run?\"\nsleep 3s\nsay after")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	if !waitFor(10*time.Second, func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.PendingPermission
	}) {
		t.Fatal("no pending permission in status")
	}
	id := only(readEvents(t, evPath), "permission.request")[0].str("request_id")
	if err := c.AnswerPermission(ctx, id, "allow", ""); err != nil {
		t.Fatal(err)
	}
	err := c.AnswerPermission(ctx, id, "deny", "")
	var rpc *client.RPCError
	want := fmt.Sprintf("permission %q was already answered", id)
	if !errors.As(err, &rpc) || rpc.Code != client.CodeServerError || rpc.Message != want {
		t.Fatalf("second answer_permission = %v, want -32000 %q", err, want)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	resp := only(readEvents(t, evPath), "permission.response")
	if len(resp) != 1 || resp[0].str("option_id") != "allow" {
		t.Fatalf("permission.response %v, want only the first answer's", resp)
	}
}
