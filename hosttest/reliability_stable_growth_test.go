//go:build reliability

package hosttest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/stable"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
)

// What a supervisor holds must grow with the work it does,
// not with the runtimes it has seen.

// livePlugins counts the supervisor's plugin processes that still run.
func livePlugins(s *supervisor) int {
	n := 0
	for _, pid := range childrenOf(s.pid(), "avenor-plugin-") {
		if st := procState(pid); st != "" && st != "Z" {
			n++
		}
	}
	return n
}

// fdKinds counts a process's open fds by what they are: the file's base
// name, or the kind of a pipe, socket or anon inode.
func fdKinds(pid int) map[string]int {
	out := map[string]int{}
	for _, l := range fdTargets(pid) {
		_, target, _ := strings.Cut(l, "→")
		if i := strings.IndexByte(target, ':'); i > 0 && !strings.HasPrefix(target, "/") {
			target = target[:i]
		} else {
			target = filepath.Base(target)
		}
		out[target]++
	}
	return out
}

// TestReliabilityStableParkedFDsBounded: 300 sequential spawns that all stay
// parked (no parked timeout) leave the supervisor's fd count where a few
// spawns left it: a parked runtime holds no file open for its log (it used
// to, 14 → 341 fds, and under `ulimit -n 256` spawns failed from #213).
// Every runtime's log is still whole, and a follow-up of the first one
// appends to its log after its earlier lines.
func TestReliabilityStableParkedFDsBounded(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("fds", nil, "--parked-timeout", "0")
	c := s.client()
	const n = 300
	var first client.Spawned
	fdAt := 0
	for i := 0; i < n; i++ {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say spawn " + strconv.Itoa(i)})
		waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		if i == 0 {
			first = sp
		}
		if i == 2*stable.DefaultMaxKeptPlugins {
			// By now the kept plugins are at their bound: what grows after
			// this grows per parked runtime.
			fdAt = fdCount(s.pid())
		}
	}
	fdEnd := fdCount(s.pid())
	t.Logf("supervisor fds after %d parked spawns: %d (after %d: %d)", n, fdEnd, 2*stable.DefaultMaxKeptPlugins+1, fdAt)
	if fdEnd > fdAt+16 {
		t.Fatalf("supervisor fds grew from %d to %d over %d parked runtimes; open: %v", fdAt, fdEnd, n, fdKinds(s.pid()))
	}
	if err := c.Prompt(ctxT(t, 10*time.Second), "say again", first.RuntimeID); err != nil {
		t.Fatalf("follow-up of the first parked runtime: %v", err)
	}
	waitRuntime(t, c, first.RuntimeID, 20*time.Second, "ended after its follow-up", func(r client.Runtime) bool {
		return r.Parked && strings.Contains(r.FinalOutput, "again")
	})
	evs := checkStream(t, first.OnEvent, first.RuntimeID)
	if got := len(only(evs, "session.end")); got != 2 {
		t.Fatalf("the first runtime's log holds %d session.end, want 2 (one per run): %v", got, names(evs))
	}
	if got := fdCount(s.pid()); got > fdAt+16 {
		t.Errorf("supervisor fds %d after the follow-up parked again (were %d)", got, fdAt)
	}
}

// TestReliabilityStableParkedInProcessBounded: 40 spawns of a backend whose
// sessions live in their plugin (resume scope in_process) under
// --max-runtimes 2 used to leave 40 plugin processes running. Parked
// runtimes still do not count against --max-runtimes (docs/stable.md), but
// their kept plugins are bounded: at most --max-runtimes executing plus
// DefaultMaxKeptPlugins kept. The newest ones still continue in their
// plugin; the oldest, whose plugin was stopped for room, refuse a follow-up
// naming why.
func TestReliabilityStableParkedInProcessBounded(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("inproc", []string{scripted.ResumeScopeEnv + "=in_process"}, "--max-runtimes", "2", "--parked-timeout", "0")
	c := s.client()
	const n = 40
	bound := 2 + stable.DefaultMaxKeptPlugins
	var ids []string
	most := 0
	for i := 0; i < n; i++ {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "announce"})
		ids = append(ids, sp.RuntimeID)
		waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		if got := livePlugins(s); got > most {
			most = got
		}
		if most > bound {
			t.Fatalf("%d plugin processes alive after %d in_process spawns under --max-runtimes 2, want at most %d", most, i+1, bound)
		}
	}
	t.Logf("at most %d plugin processes alive over %d in_process spawns (bound %d)", most, n, bound)
	newest := ids[n-1]
	if err := c.Prompt(ctxT(t, 10*time.Second), "announce", newest); err != nil {
		t.Fatalf("follow-up of the newest parked runtime: %v", err)
	}
	waitRuntime(t, c, newest, 20*time.Second, "ended after its follow-up", func(r client.Runtime) bool {
		return r.Parked && strings.Contains(r.FinalOutput, "turn 2")
	})
	oldest := runtimeOf(t, c, ids[0])
	if oldest.PluginPID != 0 {
		t.Fatalf("the oldest parked runtime still keeps plugin %d: %s", oldest.PluginPID, oldest.Raw)
	}
	err := c.Prompt(ctxT(t, 10*time.Second), "announce", ids[0])
	if err == nil {
		t.Fatal("a follow-up of a runtime whose in_process plugin was stopped was accepted")
	}
	for _, want := range []string{"session lost", "stopped", "parked", "spawn a new runtime"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

// TestReliabilityStableTeamMembersAdmitted: a team's members are runtimes
// too. A 120-member team under --max-runtimes 2 --max-tree-budget 4 used to
// start all 120 plugins at once; its members now run at most --max-runtimes
// at a time, and the team still completes every member.
func TestReliabilityStableTeamMembersAdmitted(t *testing.T) {
	w := newWorld(t)
	const members, limit = 120, 2
	team := make([]phase, members)
	for i := range team {
		team[i] = phase{"name": fmt.Sprintf("m%d", i), "prompt": "sleep 50ms\nsay done " + strconv.Itoa(i)}
	}
	cfg := w.writeConfig("team.json", map[string]any{"team": team})
	s := w.startStable("team", nil, "--max-runtimes", strconv.Itoa(limit), "--max-tree-budget", "4")
	c := s.client()

	var most atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if n := int64(livePlugins(s)); n > most.Load() {
				most.Store(n)
				if n > limit {
					// The old code starts all 120: stop it before it does.
					_ = s.cmd.Process.Kill()
					return
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	res, err := spawnRaw(t, c, map[string]any{"backend": "scripted", "team_file": cfg, "dir": w.work})
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	id, _ := res["runtime_id"].(string)
	ended := waitFor(3*time.Minute, func() bool {
		if most.Load() > limit {
			return true
		}
		rt, err := c.Runtime(ctxT(t, 5*time.Second), id)
		return err == nil && rt.Parked
	})
	close(stop)
	wg.Wait()
	if got := most.Load(); got > limit {
		t.Fatalf("%d plugin processes alive at once for a %d-member team under --max-runtimes %d", got, members, limit)
	}
	if !ended {
		t.Fatalf("the team did not end within 3m: %s", runtimeOf(t, c, id).Raw)
	}
	t.Logf("a %d-member team ran with at most %d plugins alive", members, most.Load())
	rt := runtimeOf(t, c, id)
	if rt.ExitCode == nil || *rt.ExitCode != 0 {
		t.Fatalf("the team did not end cleanly: %s", rt.Raw)
	}
	evs := checkLoopStream(t, res["on_event"].(string), id)
	end := lastOf(t, evs, "avenor.team.end")
	if got, _ := end.num("members_completed"); got != members {
		t.Fatalf("team end %v, want %d members completed", end, members)
	}
}

// TestReliabilityStableIdempotencyEvicts: the idempotency store keeps
// IdempotencyCapacity keys; past it the oldest finished key is forgotten
// instead of every new key being refused for 24 h. Key 1,100 is accepted,
// a recent key still answers its stored result, and the first key, evicted,
// spawns afresh.
func TestReliabilityStableIdempotencyEvicts(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("idem", nil, "--parked-timeout", "200ms")
	c := s.client()
	const n = 1100
	ids := make([]string, n+1)
	var wg sync.WaitGroup
	var failed atomic.Int64
	next := atomic.Int64{}
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n || failed.Load() > 0 {
					return
				}
				sp, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "idem",
					IdempotencyKey: "key-" + strconv.Itoa(i)})
				if err != nil {
					if failed.Add(1) == 1 {
						t.Errorf("spawn with key %d of %d: %v", i, n, err)
					}
					return
				}
				ids[i] = sp.RuntimeID
				// One runtime at a time per client: the test is about keys,
				// not --max-runtimes.
				if !waitFor(30*time.Second, func() bool {
					rt, err := c.Runtime(ctxT(t, 5*time.Second), sp.RuntimeID)
					return err != nil || rt.Parked || rt.Status == "ended" // reaped is gone
				}) {
					failed.Add(1)
					t.Errorf("spawn with key %d: %s did not end", i, sp.RuntimeID)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	again := func(i int) client.Spawned {
		t.Helper()
		sp, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "idem",
			IdempotencyKey: "key-" + strconv.Itoa(i)})
		if err != nil {
			t.Fatalf("spawn again with key %d: %v", i, err)
		}
		return sp
	}
	if sp := again(n); sp.RuntimeID != ids[n] {
		t.Errorf("key %d again: runtime %s, want the stored %s", n, sp.RuntimeID, ids[n])
	}
	if sp := again(n - 10); sp.RuntimeID != ids[n-10] {
		t.Errorf("key %d again: runtime %s, want the stored %s", n-10, sp.RuntimeID, ids[n-10])
	}
	if sp := again(1); sp.RuntimeID == ids[1] {
		t.Errorf("key 1 again answered its stored runtime %s: it should have been evicted (capacity %d)", sp.RuntimeID, stable.IdempotencyCapacity)
	}
}
