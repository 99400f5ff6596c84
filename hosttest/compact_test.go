package hosttest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Auto-compaction (docs/unattended.md#context-use) with the scripted
// backend, whose compaction keeps a quarter of the context use its last
// turn reported and takes the rest off every later turn's.

// compactTurn reports 850 of a 1,000-token window.
const compactTurn = "say hi\nusage in=850 out=10 window=1000"

// TestAutoCompactAtTheBoundary: a turn at or past --auto-compact-pct is
// followed, at its boundary (after its avenor.context, before its
// session.end), by one compaction and avenor.context.compacted; the parked
// runtime's next turn runs on the compacted session (its context use
// lower), and below the threshold nothing compacts.
func TestAutoCompactAtTheBoundary(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("compact", nil).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: compactTurn, AutoCompactPct: client.Int(80)})
	rt := waitParked(t, c, sp.RuntimeID)
	if *rt.ExitCode != 0 {
		t.Fatalf("first turn: %s", rt.Raw)
	}
	evs := readEvents(t, rt.EventPath)
	names := make([]string, 0, len(evs))
	for _, ev := range evs {
		names = append(names, ev.name())
	}
	ci, ki, ei := slices.Index(names, "avenor.context"), slices.Index(names, "avenor.context.compacted"), slices.Index(names, "session.end")
	if ci < 0 || ki < 0 || ei < 0 || ci >= ki || ki >= ei {
		t.Fatalf("events %v: want avenor.context, then avenor.context.compacted, then session.end", names)
	}
	comp := evs[ki]
	for field, want := range map[string]float64{"before_tokens": 850, "after_tokens": 212, "window_tokens": 1000} {
		if v, _ := comp.num(field); v != want {
			t.Errorf("avenor.context.compacted %s = %v, want %v (%v)", field, comp[field], want, comp)
		}
	}

	rt = promptParked(t, c, sp.RuntimeID, "say again\nusage in=900 out=10 window=1000")
	evs = readEvents(t, rt.EventPath)
	ctx := only(evs, "avenor.context")
	if len(ctx) != 2 {
		t.Fatalf("avenor.context %v, want one per turn", ctx)
	}
	if u, _ := ctx[1].num("used_tokens"); u != 262 {
		t.Errorf("the next turn's used_tokens %v, want 262 (900 less the 638 the compaction dropped)", ctx[1]["used_tokens"])
	}
	if n := len(only(evs, "avenor.context.compacted")); n != 1 {
		t.Errorf("%d compactions, want 1 (the second turn is at 26.2%%, under 80)", n)
	}
	if rt.SessionID != sp.SessionID && sp.SessionID != "" {
		t.Errorf("session changed: %s", rt.Raw)
	}

	// avenor control spawn's --auto-compact-pct reaches the spawn (a
	// supervisor of its own: the one above has its owning connection).
	s2 := w.startStable("compact-cli", nil)
	c2 := s2.client()
	r := w.run("control", "spawn", "--socket", s2.sock, "--backend", "scripted", "--dir", w.work, "--prompt", compactTurn, "--auto-compact-pct", "80")
	var csp client.Spawned
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &csp) != nil {
		t.Fatalf("avenor control spawn --auto-compact-pct 80: %v", r)
	}
	if n := len(only(readEvents(t, waitParked(t, c2, csp.RuntimeID).EventPath), "avenor.context.compacted")); n != 1 {
		t.Errorf("control spawn --auto-compact-pct 80: %d compactions, want 1", n)
	}

	// Not crossed: avenor.context (implied), no compaction.
	evPath := w.path("under.ndjson")
	if res := w.run("--backend", "scripted", "--prompt", compactTurn, "--auto-compact-pct", "90", "--on-event", evPath); res.code != 0 {
		t.Fatalf("run under the threshold: %v", res)
	}
	evs = readEvents(t, evPath)
	if len(only(evs, "avenor.context")) != 1 || len(only(evs, "avenor.context.compacted")) != 0 || len(only(evs, "avenor.warning")) != 0 {
		t.Errorf("under the threshold: want one avenor.context, no compaction and no warning; got %v", evs)
	}
	// Crossed on avenor run: one compaction, exit 0.
	evPath = w.path("over.ndjson")
	if res := w.run("--backend", "scripted", "--prompt", compactTurn, "--auto-compact-pct", "85", "--on-event", evPath); res.code != 0 {
		t.Fatalf("run at the threshold: %v", res)
	}
	if n := len(only(readEvents(t, evPath), "avenor.context.compacted")); n != 1 {
		t.Errorf("run at 85%% with --auto-compact-pct 85: %d compactions, want 1", n)
	}
}

// TestAutoCompactBadInput: --auto-compact-pct 0, 101, not a number, with
// a loop file, or on a backend without the compaction capability is
// refused before anything starts, on avenor run and on a stable spawn.
func TestAutoCompactBadInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	loopFile := w.writeFile("loop.json", `{"max_iterations": 1, "loop": [{"name": "p", "prompt": "say hi"}]}`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero", []string{"--backend", "scripted", "--auto-compact-pct", "0"}, 1, "--auto-compact-pct 0 is out of range: 1 to 100"},
		{"too big", []string{"--backend", "scripted", "--auto-compact-pct", "101"}, 1, "--auto-compact-pct 101 is out of range"},
		{"not a number", []string{"--backend", "scripted", "--auto-compact-pct", "most"}, 2, "invalid argument \"most\""},
		{"backend cannot", []string{"--backend", "echo", "--auto-compact-pct", "50"}, 1, "backend echo cannot compact its context (capability compaction)"},
		{"loop", []string{"--backend", "scripted", "--auto-compact-pct", "50", "--loop-file", loopFile}, 1, "--auto-compact-pct is not available for a loop or team run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evPath, sentPath := w.path(tc.name+".ndjson"), w.path(tc.name+".done")
			if !slices.Contains(tc.args, "--loop-file") {
				tc.args = append(tc.args, "--prompt", "say hi")
			}
			res := w.run(append(tc.args, "--on-event", evPath, "--sentinel-file", sentPath)...)
			if res.code != tc.code || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("want exit %d saying %q; got %v", tc.code, tc.want, res)
			}
			if tc.code == 1 {
				if s := readFile(t, sentPath); !strings.HasPrefix(s, "FAILED\n") {
					t.Errorf("sentinel %q, want FAILED", s)
				}
			}
			for _, ev := range readEventsIfAny(t, evPath) {
				if ev.name() == "session.start" || ev.name() == "avenor.turn.start" {
					t.Errorf("%s was written: something started", ev.name())
				}
			}
		})
	}

	c := w.startStable("st", nil).client()
	for _, n := range []int{0, 101} {
		_, err := c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi", AutoCompactPct: client.Int(n)})
		if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(err.Error(), "auto_compact_pct") {
			t.Errorf("spawn with auto_compact_pct %d: %v, want -32602 naming it", n, err)
		}
	}
	_, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "hi", AutoCompactPct: client.Int(50)})
	var re *client.RPCError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "backend echo cannot compact its context") || !strings.Contains(re.Message, "nothing was started") {
		t.Errorf("spawn on echo with auto_compact_pct: %v, want refused, nothing started", err)
	}
	_, err = c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, LoopFile: loopFile, AutoCompactPct: client.Int(50)})
	if err == nil || !strings.Contains(err.Error(), "auto_compact_pct is not available for a loop or team run") {
		t.Errorf("spawn of a loop with auto_compact_pct: %v, want refused", err)
	}
	if l, err := c.List(ctxT(t, 10*time.Second)); err != nil || len(l) != 0 {
		t.Errorf("refused spawns left runtimes: %v, %v", l, err)
	}
}

// TestAutoCompactFailureWarns: a compaction the runtime fails is an
// avenor.warning {source: context}, no avenor.context.compacted, and the
// run ends as its turn did.
func TestAutoCompactFailureWarns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("done")
	res := w.runEnv([]string{"SCRIPTED_COMPACT=fail"}, "--backend", "scripted", "--prompt", compactTurn, "--auto-compact-pct", "50", "--on-event", evPath, "--sentinel-file", sentPath)
	if res.code != 0 || !strings.HasPrefix(readFile(t, sentPath), "DONE\n") {
		t.Fatalf("want exit 0, DONE; got %v", res)
	}
	evs := readEvents(t, evPath)
	if n := len(only(evs, "avenor.context.compacted")); n != 0 {
		t.Errorf("%d avenor.context.compacted after a failed compaction", n)
	}
	warns := only(evs, "avenor.warning")
	if len(warns) != 1 || warns[0].str("source") != "context" || !strings.Contains(warns[0].str("message"), "could not compact its context") ||
		!strings.Contains(warns[0].str("message"), "compaction failed") {
		t.Errorf("avenor.warning %v, want one from context naming the runtime's failure", warns)
	}
	if end := lastSessionEnd(t, evs); end.str("stop_reason") != "end_turn" || end.str("final_output") != "hi" {
		t.Errorf("session.end %v, want the turn's own end_turn and answer", end)
	}
}
