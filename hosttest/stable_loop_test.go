package hosttest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// spawnRaw spawns with params the client's SpawnParams do not have
// (loop_file, team_file, roster_file, roster_entry).
func spawnRaw(t *testing.T, c *client.Client, params map[string]any) (map[string]any, error) {
	t.Helper()
	var res map[string]any
	err := c.Call(ctxT(t, 30*time.Second), "spawn", params, &res)
	return res, err
}

// checkLoopStream checks a loop runtime's NDJSON log: seq 1..n without
// gaps, every event stamped with the runtime id.
func checkLoopStream(t *testing.T, path, runtimeID string) []event {
	t.Helper()
	evs := readEvents(t, path)
	for i, ev := range evs {
		if seq, _ := ev.num("seq"); seq != float64(i+1) || ev.str("runtime_id") != runtimeID {
			t.Fatalf("%s: event %d (%s): seq %v runtime_id %q", path, i+1, ev.name(), ev["seq"], ev.str("runtime_id"))
		}
	}
	return evs
}

// A stable spawn with loop_file (docs/control-protocol.md#spawn): session_id "" in the
// result, the whole loop is the runtime's run — its events in the
// runtime's log, DONE in its sentinel — a follow-up prompt on the ended
// loop is refused, and cancel ends a running loop KILLED.
func TestStableSpawnLoop(t *testing.T) {
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{
		"max_iterations": 5,
		"pre":            []phase{{"name": "build", "prompt": `say "built\n"`}},
		"loop": []phase{
			{"name": "test", "prompt": `{{if eq .Iteration 2}}say "[loop: exit | tests green]\n"{{else}}say "2 failures\n"{{end}}`},
			{"name": "fix", "prompt": `say "fixed\n"`},
		},
	})
	slow := w.writeConfig("slow.json", map[string]any{"loop": []phase{{"name": "wait", "prompt": "sleep 30s"}}})
	s := w.startStable("sup", nil)
	c := s.client()

	res, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "loop_file": cfg, "label": "looper"})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res["runtime_id"].(string)
	if sid, ok := res["session_id"].(string); id != "rt_1" || !ok || sid != "" {
		t.Fatalf("loop spawn: %v", res)
	}
	rt := waitEnded(t, c, id, 20*time.Second)
	if rt.ExitCode == nil || *rt.ExitCode != 0 || rt.StopReason != "end_turn" || rt.Label != "looper" {
		t.Fatalf("%s after its loop: %s", id, rt.Raw)
	}
	var entry map[string]any
	if err := json.Unmarshal(rt.Raw, &entry); err != nil || entry["loop_file"] != cfg {
		t.Fatalf("entry: %v %s", err, rt.Raw)
	}
	evs := checkLoopStream(t, res["on_event"].(string), id)
	want := []string{"loop.start", "phase.start build pre 0", "phase.end build pre 0",
		"phase.start test loop 1", "phase.end test loop 1", "phase.start fix loop 1", "phase.end fix loop 1",
		"phase.start test loop 2", "phase.end test loop 2", "loop.end"}
	if got := lifecycle(evs); !slices.Equal(got, want) {
		t.Fatalf("lifecycle:\n got %q\nwant %q", got, want)
	}
	if end := lastOf(t, evs, "avenor.loop.end"); end.str("exit_reason") != "marker" || evs[len(evs)-1].name() != "avenor.loop.end" {
		t.Fatalf("loop end %v; last event %s", end, evs[len(evs)-1].name())
	}
	session := lastOf(t, evs, "avenor.phase.end").str("session_id")
	checkSentinel(t, res["sentinel_file"].(string), sentinelBytes("DONE", session, "end_turn", 0, res["run_id"].(string)))

	// The ended loop takes no follow-up.
	if err := c.Prompt(ctxT(t, 5*time.Second), "more", id); err == nil || !strings.Contains(err.Error(), "spawn a new runtime") {
		t.Fatalf("prompt to an ended loop: %v", err)
	}

	// Cancel acts on the whole loop.
	res2, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "loop_file": slow})
	if err != nil {
		t.Fatal(err)
	}
	id2 := res2["runtime_id"].(string)
	waitRuntime(t, c, id2, 10*time.Second, "in its phase", func(rt client.Runtime) bool { return rt.SessionID == "" && rt.Status == "running" })
	if !waitFor(10*time.Second, func() bool {
		return len(only(readEvents(t, res2["on_event"].(string)), "session.start")) > 0
	}) {
		t.Fatalf("%s's phase never started", id2)
	}
	if err := c.Cancel(ctxT(t, 5*time.Second), id2); err != nil {
		t.Fatal(err)
	}
	rt2 := waitEnded(t, c, id2, 15*time.Second)
	if *rt2.ExitCode != 130 || rt2.StopReason != "cancelled" {
		t.Fatalf("%s after cancel: %s", id2, rt2.Raw)
	}
	if got := readFile(t, res2["sentinel_file"].(string)); !strings.HasPrefix(got, "KILLED\n") {
		t.Fatalf("cancelled loop's sentinel %q", got)
	}

	// A kill shutdown SIGKILLs the plugin of a loop's phase in flight, even
	// one that ignores cancel.
	defer func() {
		stuck := w.writeConfig("stuck.json", map[string]any{"loop": []phase{{"name": "stuck", "prompt": "ignore-cancel\nsleep 40s"}}})
		res3, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "loop_file": stuck})
		if err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool {
			return len(only(readEvents(t, res3["on_event"].(string)), "session.start")) > 0
		}) {
			t.Fatal("the stuck phase never started")
		}
		from := time.Now()
		if err := c.Shutdown(ctxT(t, 5*time.Second), "kill"); err != nil {
			t.Fatal(err)
		}
		s.exited(0, 15*time.Second)
		if d := time.Since(from); d > 4*time.Second {
			t.Errorf("kill shutdown took %v", d)
		}
		s.tombstone("shutdown")
		if got := readFile(t, res3["sentinel_file"].(string)); !strings.HasPrefix(got, "KILLED\n") && !strings.HasPrefix(got, "FAILED\n") {
			t.Errorf("killed loop's sentinel %q", got)
		}
	}()

	// Errors: a bad config and the docs/run.md#validation combinations.
	for _, bad := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"backend": "scripted", "loop_file": w.path("missing.json")}, "load loop config"},
		{map[string]any{"loop_file": cfg, "team_file": cfg}, "loop_file and team_file are mutually exclusive"},
		{map[string]any{"loop_file": cfg, "session_id": "x"}, "loop_file and session_id are mutually exclusive"},
	} {
		if _, err := spawnRaw(t, c, bad.params); err == nil || rpcError(t, err).Code != client.CodeServerError || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("spawn %v: %v, want %q", bad.params, err, bad.msg)
		}
	}
}

// A roster-selected stable spawn (docs/control-protocol.md#spawn, docs/loop.md#rosters direct mode): the
// entry is the runtime's backend, model and default thinking; the loop's
// phases pick entries from the spawn's roster_file; the rules hold.
func TestStableSpawnRoster(t *testing.T) {
	w := newWorld(t)
	w.writeFile("work/roster.json", `{"quick": {"backend": "scripted", "model": "tiny", "thinking": "low"}, "talk": {"backend": "echo", "agent": "chat"}}`)
	w.writeConfig("work/loop.json", map[string]any{"pre": []phase{
		{"name": "default", "prompt": `say "run-level\n"`},
		{"name": "picked", "prompt": "hello", "roster_entry": "talk"},
	}})
	s := w.startStable("sup", nil)
	c := s.client()

	res, err := spawnRaw(t, c, map[string]any{"roster_file": "roster.json", "roster_entry": "quick", "prompt": `say "hi\n"`})
	if err != nil {
		t.Fatal(err)
	}
	id := res["runtime_id"].(string)
	if res["effective_backend"] != "scripted" || res["effective_model"] != "tiny" || res["roster_entry"] != "quick" || res["session_id"] == "" {
		t.Fatalf("roster spawn: %v", res)
	}
	rt := waitEnded(t, c, id, 15*time.Second)
	var entry map[string]any
	_ = json.Unmarshal(rt.Raw, &entry)
	if rt.Backend != "scripted" || rt.Model != "tiny" || entry["thinking"] != "low" || *rt.ExitCode != 0 {
		t.Fatalf("roster runtime: %s", rt.Raw)
	}
	if st := only(readEvents(t, res["on_event"].(string)), "session.start"); len(st) != 1 || st[0].str("model") != "tiny" {
		t.Fatalf("session.start: %v", st)
	}

	// A loop with the spawn's roster_file as its phases' roster.
	res, err = spawnRaw(t, c, map[string]any{"backend": "scripted", "loop_file": "loop.json", "roster_file": "roster.json"})
	if err != nil {
		t.Fatal(err)
	}
	rt = waitEnded(t, c, res["runtime_id"].(string), 20*time.Second)
	if *rt.ExitCode != 0 {
		t.Fatalf("roster loop: %s", rt.Raw)
	}
	var got []string
	for _, s := range only(readEvents(t, res["on_event"].(string)), "session.start") {
		got = append(got, s.str("backend"))
	}
	if !slices.Equal(got, []string{"scripted", "echo"}) {
		t.Fatalf("roster loop sessions %q", got)
	}

	for _, bad := range []struct {
		params map[string]any
		msg    string
	}{
		{map[string]any{"roster_entry": "quick", "prompt": "x"}, "roster_entry requires roster_file"},
		{map[string]any{"roster_file": "roster.json", "prompt": "x"}, "roster_file requires roster_entry"},
		{map[string]any{"roster_file": "roster.json", "roster_entry": "quick", "model": "m", "prompt": "x"}, "roster_entry and model are mutually exclusive"},
		{map[string]any{"roster_file": "roster.json", "roster_entry": "quick", "loop_file": "loop.json"}, "roster_entry cannot be used with loop_file or team_file"},
		{map[string]any{"roster_file": "roster.json", "roster_entry": "nobody", "prompt": "x"}, `roster entry "nobody" not found`},
	} {
		if _, err := spawnRaw(t, c, bad.params); err == nil || rpcError(t, err).Code != client.CodeServerError || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("spawn %v: %v, want %q", bad.params, err, bad.msg)
		}
	}
}
