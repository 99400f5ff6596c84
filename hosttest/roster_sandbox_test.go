package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestRosterEntrySandbox: a roster entry's sandbox keys put a direct-mode
// run (avenor run --roster-entry) and spawn (roster_entry) inside the
// boundary — a tool's write beyond --dir denied with an event — and a
// flag or param over them wins; a loop phase naming such an entry is
// refused before anything starts, never run outside the boundary.
func TestRosterEntrySandbox(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	outside := beyondTmp(t)
	w.writeFile("work/roster.json", `{"boxed": {"backend": "scripted", "model": "m", "sandbox": "workspace"}}`)
	script := "toolsh touch " + outside + "/out.txt\n"

	evPath := w.path("run.ndjson")
	res := w.run("--dir", w.work, "--roster-file", "roster.json", "--roster-entry", "boxed", "--prompt", script, "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	if d := only(evs, "avenor.sandbox.denied"); len(d) != 1 || d[0].str("path") != outside+"/out.txt" {
		t.Errorf("run: denied %v; want the write beyond --dir", d)
	}
	if start := only(evs, "session.start")[0]; start["sandbox"] == nil {
		t.Errorf("run: session.start %v names no sandbox", start)
	}

	c := w.startStable("roster-sandbox", nil).client()
	sp := spawn(t, c, client.SpawnParams{Dir: w.work, RosterFile: "roster.json", RosterEntry: "boxed", Prompt: script})
	rt := waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	if d := only(readEvents(t, rt.EventPath), "avenor.sandbox.denied"); len(d) != 1 {
		t.Errorf("spawn: denied %v; want the write beyond its dir", d)
	}
	// The params over the entry's: off.
	sp = spawn(t, c, client.SpawnParams{Dir: w.work, RosterFile: "roster.json", RosterEntry: "boxed", Prompt: script, Sandbox: "off"})
	rt = waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err != nil {
		t.Errorf("spawn with sandbox off over the entry's: the write did not land: %v", err)
	}

	w.writeFile("work/loop.json", `{"max_iterations": 1, "loop": [{"name": "p", "prompt": "say hi", "roster_entry": "boxed"}]}`)
	res = w.run("--dir", w.work, "--backend", "scripted", "--roster-file", "roster.json", "--loop-file", "loop.json")
	if res.code != 1 || !strings.Contains(res.stderr, `roster entry "boxed" sets a sandbox, which loop and team phases do not carry yet`) {
		t.Errorf("a loop phase of a sandboxed entry: want it refused; got %v", res)
	}
}
