package client

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeRuntime struct {
	w       *event.Writer
	mu      sync.Mutex
	prompts []string
	cancels int
}

// fakeRuntime is a control.Target: a run's runtime as the method table
// serves it.
func (f *fakeRuntime) ID() string { return "" }
func (f *fakeRuntime) Status() any {
	return control.Status{RunID: "run1", TurnState: control.TurnRunning, Phase: "working", LatestSeq: f.w.LatestSeq()}
}
func (f *fakeRuntime) Prompt(_ context.Context, text string, interrupt, _ bool) error {
	if interrupt {
		text = "!" + text
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prompts = append(f.prompts, text)
	return nil
}
func (f *fakeRuntime) Result() any {
	h := f.w.History(0, 0)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Type() == event.TypeSessionEnd {
			return map[string]any{"final_output": h[i]["final_output"]}
		}
	}
	return map[string]any{"final_output": ""}
}
func (f *fakeRuntime) AnswerPermission(string, string, string) error {
	return control.ErrNoPendingPermission
}
func (f *fakeRuntime) Cancel() {
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
}
func (f *fakeRuntime) Events() *event.Writer { return f.w }

func serve(t *testing.T) (*fakeRuntime, *control.Server) {
	t.Helper()
	rt := &fakeRuntime{w: event.NewWriter(nil, event.Stamp{RunID: "run1"}, event.Options{})}
	s := control.NewServer(control.Config{Path: filepath.Join(t.TempDir(), "c.sock"), IdentityToken: "tok"})
	control.RegisterOne(s, rt, "")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return rt, s
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func write(t *testing.T, rt *fakeRuntime, ev event.Event) {
	t.Helper()
	if _, err := rt.w.Write(ev); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

func TestMethods(t *testing.T) {
	ctx := context.Background()
	rt, s := serve(t)
	c := dial(t, s.Path())
	if tok, err := c.Identity(ctx); err != nil || tok != "tok" {
		t.Fatalf("Identity = %q, %v", tok, err)
	}
	write(t, rt, event.Event{"event": "session.end", "stop_reason": "end_turn", "final_output": "done <ok>"})
	st, err := c.Status(ctx)
	if err != nil || st.TurnState != "running" || st.RunID != "run1" || st.LatestSeq != 1 || len(st.Raw) == 0 {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	if out, err := c.Result(ctx); err != nil || out != "done <ok>" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	h, err := c.History(ctx, HistoryOptions{})
	if err != nil || len(h.Events) != 1 || h.Events[0].Name != "session.end" || h.Events[0].Seq != 1 || h.LatestSeq != 1 {
		t.Fatalf("History = %+v, %v", h, err)
	}
	if err := c.Prompt(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	if err := c.InterruptAndPrompt(ctx, "now", false); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	var rpc *RPCError
	if err := c.AnswerPermission(ctx, "p1", "allow", ""); !errors.As(err, &rpc) || rpc.Code != CodeNoPendingPermission {
		t.Fatalf("AnswerPermission = %v", err)
	}
	if err := c.Prompt(ctx, ""); !errors.As(err, &rpc) || rpc.Code != CodeInvalidParams || rpc.Error() != "invalid params (-32602): text is empty" {
		t.Fatalf("empty Prompt = %v", err)
	}
	if err := c.Call(ctx, "list", nil, nil); !errors.As(err, &rpc) || rpc.Code != CodeMethodNotFound {
		t.Fatalf("list = %v", err)
	}
	other := dial(t, s.Path())
	if err := other.Prompt(ctx, "mine?"); !errors.As(err, &rpc) || rpc.Code != CodePermissionDenied {
		t.Fatalf("second connection's Prompt = %v", err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.prompts) != 2 || rt.prompts[0] != "more" || rt.prompts[1] != "!now" || rt.cancels != 1 {
		t.Errorf("runtime saw %q, %d cancels", rt.prompts, rt.cancels)
	}
}

func TestSubscribeReplayAfterSeqThenLive(t *testing.T) {
	ctx := context.Background()
	rt, s := serve(t)
	for range 5 {
		write(t, rt, event.Event{"event": "x"})
	}
	c := dial(t, s.Path())
	sub, err := c.Subscribe(ctx, SubscribeOptions{Replay: true, AfterSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(3); want <= 5; want++ {
		if ev := next(t, sub); ev.Seq != want || ev.Name != "x" {
			t.Fatalf("replay: %s, want seq %d", ev.Raw, want)
		}
	}
	write(t, rt, event.Event{"event": "y"})
	ev := next(t, sub)
	f, err := ev.Fields()
	if ev.Seq != 6 || err != nil || f["event"] != "y" || f["run_id"] != "run1" {
		t.Fatalf("live: %s (%v)", ev.Raw, err)
	}
	if _, err := c.Subscribe(ctx, SubscribeOptions{}); !errors.Is(err, ErrSubscribed) {
		t.Fatalf("second Subscribe = %v", err)
	}
	// Calls keep working on a subscribed connection.
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	// Replay limit: only the latest events.
	c2 := dial(t, s.Path())
	sub2, err := c2.Subscribe(ctx, SubscribeOptions{Replay: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := next(t, sub2), next(t, sub2); a.Seq != 5 || b.Seq != 6 {
		t.Fatalf("replay with limit 2: %d, %d", a.Seq, b.Seq)
	}
}

func TestServerGoneEndsEverything(t *testing.T) {
	ctx := context.Background()
	_, s := serve(t)
	c := dial(t, s.Path())
	sub, err := c.Subscribe(ctx, SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if _, ok := <-sub.C(); ok {
		t.Fatal("an event after the end")
	}
	if err := c.Cancel(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Cancel after the end = %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("Err = %v", c.Err())
	}
}

func TestClientQueueLagsInsteadOfBlocking(t *testing.T) {
	sub := newSubscription()
	defer sub.stop()
	for i := 1; i <= clientQueue+10; i++ {
		sub.push(Event{Name: "x", Seq: int64(i)})
	}
	// The pump may hold one event already taken from the queue.
	first := next(t, sub)
	if first.Name == "x" {
		first = next(t, sub)
	}
	f, _ := first.Fields()
	if first.Name != "subscriber.lagged" || f["source"] != "client" {
		t.Fatalf("first event %q %s", first.Name, first.Raw)
	}
	var last int64
	for last < clientQueue+10 {
		last = next(t, sub).Seq
	}
}

// When Close returns, the server has released the connection's ownership:
// one-call-per-connection tools (avenor control) can mutate back to back.
func TestCloseReleasesOwnershipBeforeReturning(t *testing.T) {
	ctx := context.Background()
	_, s := serve(t)
	for i := range 50 {
		c, err := Dial(ctx, s.Path())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Prompt(ctx, "p"); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}
