package hosttest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestStableWarmPool drives `avenor stable --warm` as a harness would: the
// pool is ready before any spawn (status {} and `avenor control list
// --warm` show it apart from the runtimes), a matching spawn runs in the
// warm session with a log of its own from seq 1, the pool refills, and a
// spawn of another dir starts cold.
func TestStableWarmPool(t *testing.T) {
	w := newWorld(t)
	sup := w.startStable("warm", nil, "--warm", "scripted=2,dir="+w.work)
	c := sup.client()
	members := func() []map[string]any {
		var out []map[string]any
		if err := c.Call(ctxT(t, 5*time.Second), "list", map[string]any{"warm": true}, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if !waitFor(20*time.Second, func() bool { return len(members()) == 2 }) {
		var st map[string]any
		_ = c.Call(ctxT(t, 5*time.Second), "status", map[string]any{}, &st)
		t.Fatalf("no 2 warm members: %v", st["warm"])
	}
	res := w.run("control", "--socket", sup.sock, "list", "--warm")
	if res.code != 0 || strings.Count(res.stdout, `"status": "warm"`) != 2 {
		t.Fatalf("avenor control list --warm: %s", res)
	}
	if list, err := c.List(ctxT(t, 5*time.Second)); err != nil || len(list) != 0 {
		t.Fatalf("list shows warm members as runtimes: %v %v", list, err)
	}
	warmIDs := map[string]bool{}
	for _, m := range members() {
		warmIDs[m["session_id"].(string)] = true
	}

	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say warm hello"})
	rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	if !warmIDs[rt.SessionID] || !strings.Contains(rt.FinalOutput, "warm hello") {
		t.Fatalf("a matching spawn ran session %s (warm: %v): %s", rt.SessionID, warmIDs, rt.Raw)
	}
	evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
	if evs[0].name() != "session.start" || evs[0].str("session_id") != rt.SessionID {
		t.Fatalf("the warm spawn's log starts with %v", evs[0])
	}
	if !waitFor(20*time.Second, func() bool { return len(members()) == 2 }) {
		t.Fatalf("the pool did not refill: %v", members())
	}

	other := t.TempDir()
	cold := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: other, Prompt: "say cold"})
	crt := waitEnded(t, c, cold.RuntimeID, 20*time.Second)
	for _, m := range members() {
		if m["session_id"] == crt.SessionID {
			t.Fatalf("a spawn in another dir took a warm session: %s", crt.Raw)
		}
	}
	var st struct {
		Warm []struct {
			Count, Ready int
			Dir          string
		} `json:"warm"`
	}
	raw, _ := json.Marshal(map[string]any{})
	if err := c.Call(ctxT(t, 5*time.Second), "status", json.RawMessage(raw), &st); err != nil || len(st.Warm) != 1 || st.Warm[0].Count != 2 || st.Warm[0].Dir != w.work {
		t.Fatalf("status warm: %+v %v", st, err)
	}
	if err := c.Shutdown(ctxT(t, 5*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	sup.exited(0, 20*time.Second)
}

// TestStableWarmRefused: a --warm value that does not parse, or a pool
// that does not resolve, stops avenor stable before it listens, naming it.
func TestStableWarmRefused(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct{ arg, want string }{
		{"scripted", "no backend=count"},
		{"scripted=0", "from 1 to 32"},
		{"scripted=1,dir=" + w.work + "/missing", "--warm scripted=1,dir="},
	} {
		res := w.run("stable", "--control-socket", w.tmp+"/r.sock", "--warm", tc.arg)
		if res.code != 1 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("--warm %s: %s", tc.arg, res)
		}
	}
}
