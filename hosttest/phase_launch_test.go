package hosttest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestPhaseOwnPermissionMode: a team phase's own permission_mode overrides
// the run's: under --auto-approve the phase in plan has its write rejected
// by the mode, the phase without one has it approved; a roster entry's
// mode applies to the phase that names it, and the phase's session.start
// records its own mode.
func TestPhaseOwnPermissionMode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("roster.json", `{"planner":{"backend":"scripted","model":"m","permission_mode":"plan"}}`)
	cfg := w.writeConfig("team.json", map[string]any{"roster_file": "roster.json", "team": []phase{
		{"name": "reader", "prompt": "permission tool=Write", "permission_mode": "plan"},
		{"name": "writer", "prompt": "permission tool=Write"},
		{"name": "entry", "prompt": "permission tool=Bash", "roster_entry": "planner"},
	}})
	run := w.workflow("deadbeefcafe20aa", "--team-file", cfg, "--auto-approve")
	if run.res.code != 0 {
		t.Fatalf("run: %v", run.res)
	}
	var modes, sources []string
	for _, s := range only(run.evs, "session.start") {
		modes = append(modes, s.str("permission_mode"))
	}
	for _, ev := range only(run.evs, "permission.response") {
		sources = append(sources, ev.str("source")+":"+ev.str("kind"))
	}
	// Team members run in parallel: compare as sets.
	if strings.Join(sortStrings(modes), ",") != ",plan,plan" {
		t.Errorf("session.start modes %q; want plan for the phase and the roster entry, none for the other", modes)
	}
	if strings.Join(sortStrings(sources), ",") != "avenor:allow,mode:reject,mode:reject" {
		t.Errorf("decisions %q; want two rejected by the mode and one approved by --auto-approve", sources)
	}
}

// TestPhaseLaunchRefusedUpFront: a phase whose backend does not declare
// its own mode refuses the whole run before any phase starts: exit 1, a
// FAILED sentinel, no session.
func TestPhaseLaunchRefusedUpFront(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("loop.json", map[string]any{"pre": []phase{
		{"name": "first", "prompt": "say hi"},
		{"name": "second", "prompt": "say hi", "permission_mode": "plan"},
	}})
	evPath, sent := w.path("events.ndjson"), w.path("run.done")
	res := w.run("--backend", "echo", "--dir", w.work, "--loop-file", cfg, "--on-event", evPath, "--sentinel-file", sent, "--run-id", "b")
	msg := `a phase's own launch settings: backend "echo" does not support --permission-mode (no mode is supported); nothing was started`
	if res.code != 1 || !strings.Contains(res.stderr, "avenor: "+msg+"\n") {
		t.Fatalf("want exit 1 and %q; got %v", msg, res)
	}
	checkSentinel(t, sent, validationSentinel(msg, "b"))
	if evs := readEventsQuiet(evPath); len(only(evs, "session.start")) != 0 {
		t.Errorf("a phase started: %v", names(evs))
	}
}

// TestStablePhaseOwnMode: a stable spawn of a team whose phase sets its
// own mode runs that phase under it.
func TestStablePhaseOwnMode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := w.writeConfig("work/team.json", map[string]any{"team": []phase{
		{"name": "reader", "prompt": "permission tool=Write", "permission_mode": "plan"},
	}})
	c := w.startStable("phasemode", nil).client()
	id, err := spawnLaunch(t, c, map[string]any{"backend": "scripted", "dir": w.work, "team_file": cfg, "auto_approve": true})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitEnded(t, c, id, 30*time.Second)
	if got := decisions(readEvents(t, rt.EventPath)); got != "mode:reject" {
		t.Errorf("decisions %s; want the phase's write rejected by its own mode", got)
	}
	_, err = spawnLaunch(t, c, map[string]any{"backend": "echo", "dir": w.work, "team_file": cfg})
	if err == nil || !strings.Contains(err.Error(), `backend "echo" does not support permission_mode`) {
		t.Errorf("a team phase's mode on echo: %v; want the spawn refused", err)
	}
	var raw json.RawMessage
	if err := c.Call(ctxT(t, 10*time.Second), "list", nil, &raw); err != nil || strings.Count(string(raw), "runtime_id") != 1 {
		t.Errorf("list after the refusal: %s (%v); want the one runtime", raw, err)
	}
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestRosterEntryLaunchDirect: in direct mode a roster entry's
// permission_mode and allowed_tools apply to the run (avenor run
// --roster-entry, a spawn's roster_entry); the command line's flag
// overrides the entry's.
func TestRosterEntryLaunchDirect(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	roster := w.writeFile("work/roster.json", `{"planner":{"backend":"scripted","model":"m","permission_mode":"plan","allowed_tools":["Read"]}}`)
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"the entry's mode", nil, "mode:reject"},
		{"the flag over the entry's", []string{"--permission-mode", "full-access"}, "mode:allow"},
	} {
		evPath := w.path(strings.ReplaceAll(tc.name, " ", "_") + ".ndjson")
		args := append([]string{"--dir", w.work, "--roster-file", roster, "--roster-entry", "planner", "--prompt", "permission tool=Write",
			"--auto-approve", "--on-event", evPath}, tc.extra...)
		if res := w.run(args...); res.code != 0 {
			t.Fatalf("%s: %v", tc.name, res)
		}
		evs := readEvents(t, evPath)
		if got := decisions(evs); got != tc.want {
			t.Errorf("%s: decisions %s, want %s", tc.name, got, tc.want)
		}
		if tools, _ := json.Marshal(only(evs, "session.start")[0]["allowed_tools"]); string(tools) != `["Read"]` {
			t.Errorf("%s: session.start allowed_tools %s, want the entry's [\"Read\"]", tc.name, tools)
		}
	}
	c := w.startStable("rosterdirect", nil).client()
	id, err := spawnLaunch(t, c, map[string]any{"dir": w.work, "roster_file": "roster.json", "roster_entry": "planner",
		"prompt": "permission tool=Write", "auto_approve": true})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	rt := waitEnded(t, c, id, 30*time.Second)
	if got := decisions(readEvents(t, rt.EventPath)); got != "mode:reject" {
		t.Errorf("spawn with the roster entry: decisions %s, want mode:reject", got)
	}
}
