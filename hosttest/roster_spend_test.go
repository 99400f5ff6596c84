package hosttest

import (
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestRosterEntrySpendKeys: a roster entry's spend and context keys apply
// to a direct-mode run (--roster-entry) and spawn (roster_entry), a flag
// over them wins, and a bad value is refused when the roster loads.
func TestRosterEntrySpendKeys(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/roster.json", `{"capped": {"backend": "scripted", "model": "m", "spend_tokens": 50, "context_warn_pct": 90}}`)
	evPath := w.path("run.ndjson")
	res := w.run("--dir", w.work, "--roster-file", "roster.json", "--roster-entry", "capped", "--prompt", spendTurn, "--on-event", evPath)
	if res.code != 5 {
		t.Fatalf("run of the capped entry: want exit 5 at its spend_tokens; got %v", res)
	}
	if end := lastSessionEnd(t, readEvents(t, evPath)); end.str("stop_reason") != "budget_reached" {
		t.Errorf("session.end %v, want budget_reached", end)
	}
	res = w.run("--dir", w.work, "--roster-file", "roster.json", "--roster-entry", "capped", "--prompt", spendTurn, "--spend-tokens", "500")
	if res.code != 0 {
		t.Errorf("the flag over the entry's spend_tokens: want exit 0; got %v", res)
	}

	c := w.startStable("roster-spend", nil).client()
	sp := spawn(t, c, client.SpawnParams{Dir: w.work, RosterFile: "roster.json", RosterEntry: "capped", Prompt: spendTurn})
	rt := waitParked(t, c, sp.RuntimeID)
	checkBudgetReached(t, rt, "tokens")
	sp = spawn(t, c, client.SpawnParams{Dir: w.work, RosterFile: "roster.json", RosterEntry: "capped", Prompt: spendTurn, SpendTokens: client.Int64(500)})
	if rt = waitParked(t, c, sp.RuntimeID); *rt.ExitCode != 0 {
		t.Errorf("spawn with spend_tokens over the entry's: %s, want exit 0", rt.Raw)
	}

	for body, want := range map[string]string{
		`{"x": {"backend": "scripted", "model": "m", "spend_scope": "forest"}}`: `spend_scope`,
		`{"x": {"backend": "scripted", "model": "m", "spend_wall": "soon"}}`:    `spend_wall "soon" is not a duration`,
		`{"x": {"backend": "scripted", "model": "m", "context_warn_pct": 101}}`: `context_warn_pct 101 is out of range`,
		`{"x": {"backend": "scripted", "model": "m", "auto_compact_pct": 0}}`:   `auto_compact_pct 0 is out of range: 1 to 100`,
		`{"x": {"backend": "scripted", "model": "m", "spend_tokens": -1}}`:      `spend_tokens -1 is negative`,
	} {
		w.writeFile("work/bad.json", body)
		res := w.run("--dir", w.work, "--roster-file", "bad.json", "--roster-entry", "x", "--prompt", "say hi")
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Errorf("roster %s: want refused with %q; got %v", body, want, res)
		}
	}
}

// TestRosterEntryDirectOnlyKeysRefusedInPhases: a loop or team phase of a
// roster entry that sets rate-limit or spend keys is refused before
// anything starts — the phase would run without the wait or past the limit
// the entry asks for.
func TestRosterEntryDirectOnlyKeysRefusedInPhases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("work/roster.json", `{
		"patient": {"backend": "scripted", "model": "m", "wait_on_rate_limit": true},
		"capped": {"backend": "scripted", "model": "m", "spend_usd": 1.5}
	}`)
	c := w.startStable("roster-phases", nil).client()
	for entry, want := range map[string]string{
		"patient": `roster entry "patient" sets rate-limit settings, which loop and team phases do not carry yet`,
		"capped":  `roster entry "capped" sets spend limits or context settings, which loop and team phases do not carry yet`,
	} {
		w.writeFile("work/loop-"+entry+".json", `{"max_iterations": 1, "loop": [{"name": "p", "prompt": "say hi", "roster_entry": "`+entry+`"}]}`)
		w.writeFile("work/team-"+entry+".json", `{"team": [{"name": "p", "prompt": "say hi", "roster_entry": "`+entry+`"}]}`)
		for _, file := range []string{"--loop-file", "--team-file"} {
			kind := strings.TrimSuffix(strings.TrimPrefix(file, "--"), "-file")
			res := w.run("--dir", w.work, "--backend", "scripted", "--roster-file", "roster.json", file, kind+"-"+entry+".json")
			if res.code != 1 || !strings.Contains(res.stderr, want) {
				t.Errorf("run %s of entry %s: want refused with %q; got %v", file, entry, want, res)
			}
		}
		_, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, RosterFile: "roster.json", LoopFile: "loop-" + entry + ".json"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("spawn of a loop phase of entry %s: %v, want refused with %q", entry, err, want)
		}
	}
	if l, err := c.List(ctxT(t, 10*time.Second)); err != nil || len(l) != 0 {
		t.Errorf("refused spawns left runtimes: %v, %v", l, err)
	}
}
