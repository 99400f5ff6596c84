package hosttest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// avenor await on attention: a pending permission request exits 20 with
// its ATTENTION line, found by label.
func TestAwaitAttention(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "gate", Prompt: `permission tool=bash question="may I run make?"`})
	r := w.run("await", "gate", "--socket", s.sock)
	if r.code != 20 || r.stdout != "ATTENTION permission rt_1 may I run make?\n" {
		t.Fatalf("%v", r)
	}
	r = w.run("await", "gate", "--socket", s.sock, "--format", "json")
	var line map[string]any
	if r.code != 20 || json.Unmarshal([]byte(r.stdout), &line) != nil || line["event"] != "attention" || line["kind"] != "permission" ||
		line["runtime_id"] != "rt_1" || line["summary"] != "may I run make?" {
		t.Fatalf("json: %v", r)
	}
	// --until done does not stop at the gate.
	r = w.run("await", "gate", "--socket", s.sock, "--until", "done", "--timeout", "500ms")
	if r.code != 124 || r.stderr != "avenor await: timeout elapsed\n" {
		t.Fatalf("--until done at a gate: %v", r)
	}
}

// avenor await on done: END lines and exit codes by the runtime's exit
// code; --print-output; the socket found in ~/.avenor/sockets.
func TestAwaitDone(t *testing.T) {
	w := newWorld(t)
	sockDir := filepath.Join(w.home, ".avenor", "sockets")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := w.startStable("sup", nil)
	// The default search path: ~/.avenor/sockets/*.sock.
	if err := os.Symlink(s.sock, filepath.Join(sockDir, "sup.sock")); err != nil {
		t.Fatal(err)
	}
	c := s.client()
	ok := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "job", Prompt: "chunks 5 every=100ms text=part"})
	r := w.run("await", "job", "--until", "done", "--print-output")
	if r.code != 0 || r.stdout != "END done rt_1\n---\npartpartpartpartpart\n" {
		t.Fatalf("done: %v", r)
	}
	r = w.run("await", ok.RunID, "--format", "json", "--print-output")
	if r.code != 0 || r.stdout != `{"event":"end","phase":"done","runtime_id":"rt_1"}`+"\n"+`{"final_output":"partpartpartpartpart"}`+"\n" {
		t.Fatalf("json by run id: %v", r)
	}

	spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "bad", Prompt: "sleep 300ms\nstop refusal"})
	if r = w.run("await", "bad", "--socket", s.sock); r.code != 10 || r.stdout != "END failed rt_2 refusal\n" {
		t.Fatalf("failed: %v", r)
	}
	spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "slow", Prompt: "sleep 30s", Timeout: "300ms"})
	if r = w.run("await", "slow", "--socket", s.sock); r.code != 11 || r.stdout != "END timeout rt_3 timeout\n" {
		t.Fatalf("timeout: %v", r)
	}
	spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "doomed", Prompt: "sleep 30s"})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = c.Cancel(ctxT(t, 5*time.Second), "rt_4")
	}()
	if r = w.run("await", "doomed", "--socket", s.sock); r.code != 12 || r.stdout != "END killed rt_4 cancelled\n" {
		t.Fatalf("killed: %v", r)
	}

	// A label reused: the newest runtime wins, the collision is logged.
	spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "job", Prompt: "say second"})
	r = w.run("await", "job", "--socket", s.sock, "--print-output")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "END done rt_5\n") ||
		!strings.Contains(r.stderr, "avenor await: label collision: losing run_id "+ok.RunID+" to winner run_id ") {
		t.Fatalf("collision: %v", r)
	}

	// Usage and connection errors exit 2.
	for _, args := range [][]string{
		{"await"}, {"await", "job", "--until", "soon"}, {"await", "job", "--format", "xml"},
		{"await", "nobody", "--socket", s.sock}, {"await", "job", "--socket", filepath.Join(w.tmp, "none.sock")},
	} {
		if r := w.run(args...); r.code != 2 || !strings.HasPrefix(r.stderr, "avenor await: ") {
			t.Errorf("%v: %v", args, r)
		}
	}
}

// The supervisor going away while await waits: exit 2, connection lost.
func TestAwaitConnectionLost(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	spawn(t, s.client(), client.SpawnParams{Backend: "scripted", Label: "long", Prompt: "sleep 30s"})
	p := w.start(nil, "await", "long", "--socket", s.sock, "--until", "done")
	time.Sleep(300 * time.Millisecond)
	s.signal(9)
	r := p.wait()
	if r.code != 2 || r.stderr != "avenor await: supervisor connection lost\n" {
		t.Fatalf("%v", r)
	}
}

// client.Await with a Stop (avenor mcp's wait_for): Stop is the only
// judge. The runtime's events have the status read again, so Await ends at
// the first status Stop takes, running or not; an ended runtime Stop
// refuses is waited on until ctx ends.
func TestAwaitStop(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "chunks 5 every=200ms text=part"})
	out, err := c.Await(ctxT(t, 20*time.Second), sp.RuntimeID, client.AwaitOptions{
		Stop: func(rt client.Runtime) bool { return rt.LatestSeq >= 3 }})
	if err != nil || out.Runtime.LatestSeq < 3 || out.Phase != "" || out.Attention != "" || out.RuntimeID != sp.RuntimeID {
		t.Fatalf("Await until latest_seq 3: %+v, %v", out, err)
	}
	waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	sawEnd := false
	// A connection subscribes once: the second Await has its own.
	_, err = s.client().Await(ctxT(t, 1500*time.Millisecond), sp.RuntimeID, client.AwaitOptions{
		Stop: func(rt client.Runtime) bool {
			sawEnd = sawEnd || rt.Status == "ended" || rt.Parked
			return false
		}})
	if !errors.Is(err, context.DeadlineExceeded) || !sawEnd {
		t.Fatalf("Await with a Stop refusing an ended runtime: %v (saw it ended: %v); want the deadline", err, sawEnd)
	}
}
