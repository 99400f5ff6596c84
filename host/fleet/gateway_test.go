package fleet

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// TestGatewayResendsLostReads: a node's reply lost in flight (as with a NATS
// server that goes away mid-request) costs a read-only call one
// ReadAttemptTimeout, not the whole RPCTimeout; a mutating call is never
// sent twice.
func TestGatewayResendsLostReads(t *testing.T) {
	s, auth := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, _, err := Connect(ctx, s.ClientURL(), "test", auth)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var seen atomic.Int32
	sub, err := nc.Subscribe(rpcSubject("n1"), func(m *nats.Msg) {
		if seen.Add(1) == 1 {
			return // the first reply is lost
		}
		b, _ := json.Marshal(rpcResponse{Result: json.RawMessage(`{"status":"running"}`)})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	g := &Gateway{cfg: GatewayConfig{NC: nc}, log: hclog.NewNullLogger()}

	rctx, rcancel := context.WithTimeout(ctx, 2*ReadAttemptTimeout+time.Second)
	raw, err := g.call(rctx, "n1", "status", map[string]any{"runtime_id": "rt_1"})
	rcancel()
	if err != nil || string(raw) != `{"status":"running"}` {
		t.Fatalf("status with its first reply lost: %s, %v", raw, err)
	}
	if n := seen.Load(); n != 2 {
		t.Fatalf("status sent %d times, want 2", n)
	}

	seen.Store(0)
	cctx, ccancel := context.WithTimeout(ctx, ReadAttemptTimeout+time.Second)
	_, err = g.call(cctx, "n1", "cancel", map[string]any{"runtime_id": "rt_1"})
	ccancel()
	if err == nil {
		t.Fatal("cancel whose reply was lost succeeded")
	}
	if n := seen.Load(); n != 1 {
		t.Fatalf("cancel sent %d times, want 1 (a mutating call is never repeated)", n)
	}
}

// TestGatewayFindsALostSpawnAnswer: a spawn whose answer on the inbox was
// lost (published while the requester's connection was away) is answered
// from the replies bucket within the first check, not the spawn timeout.
func TestGatewayFindsALostSpawnAnswer(t *testing.T) {
	ctx, nc, js := devConnect(t)
	st, err := Setup(ctx, js, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{cfg: GatewayConfig{NC: nc, Stores: st}, log: hclog.NewNullLogger()}
	sub, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	want := `{"result":{"runtime_id":"n1/rt_7"}}`
	if _, err := st.Replies.Put(ctx, replyKey(42), []byte(want)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := g.awaitAnswer(ctx, sub, 42, nc.Stats().Reconnects)
	if err != nil || string(got) != want {
		t.Fatalf("awaitAnswer = %s, %v; want %s", got, err, want)
	}
	if took := time.Since(start); took > ReplyCheckFirst+2*time.Second {
		t.Fatalf("the kept answer took %v, want within %v", took, ReplyCheckFirst+2*time.Second)
	}
	// No answer anywhere: the wait ends with its context.
	wctx, wcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer wcancel()
	if _, err := g.awaitAnswer(wctx, sub, 43, nc.Stats().Reconnects); err == nil {
		t.Fatal("awaitAnswer without an answer returned one")
	}
}
