package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Three runtimes with different labels: list, status, per-runtime replay,
// a follow-up prompt that resumes a parked runtime's session, a cancel, and
// a graceful shutdown that leaves a tombstone.
func TestStableSpawnListPromptCancelShutdown(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()

	a := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "alpha", Prompt: "announce\nchunks 3 every=50ms"})
	b := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "beta", Prompt: "sleep 30s"})
	g := spawn(t, c, client.SpawnParams{Backend: "echo", Label: "gamma", Prompt: "hello"})
	for i, sp := range []client.Spawned{a, b, g} {
		if want := []string{"rt_1", "rt_2", "rt_3"}[i]; sp.RuntimeID != want || sp.SessionID == "" || sp.RunID == "" {
			t.Fatalf("spawn %d: %s", i+1, sp.Raw)
		}
		if !strings.HasPrefix(sp.OnEvent, w.tmp+"/avenor-stable/") || !strings.HasSuffix(sp.OnEvent, "/"+sp.RuntimeID+"/events.ndjson") ||
			!strings.HasSuffix(sp.SentinelFile, "/"+sp.RuntimeID+"/sentinel.env") {
			t.Fatalf("default artifacts: %s", sp.Raw)
		}
	}

	list, err := c.List(ctxT(t, 5*time.Second))
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %v %+v", err, list)
	}
	var fields map[string]any
	if err := json.Unmarshal(list[0].Raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runtime_id", "session_id", "run_id", "label", "agent", "model", "backend", "dir", "status",
		"phase", "phase_label", "parent_id", "children", "latest_seq", "usage", "exit_code", "on_event", "event_path",
		"sentinel_file", "final_output", "final_output_truncated", "pending_permission", "permission", "started_at", "stop_reason"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("list entry has no %q: %s", k, list[0].Raw)
		}
	}
	for i, label := range []string{"alpha", "beta", "gamma"} {
		if list[i].Label != label || list[i].Dir != w.work {
			t.Errorf("entry %d: label %q dir %q", i, list[i].Label, list[i].Dir)
		}
	}

	ra := waitEnded(t, c, "rt_1", 15*time.Second)
	if ra.ExitCode == nil || *ra.ExitCode != 0 || ra.StopReason != "end_turn" || !strings.Contains(ra.FinalOutput, "turn 1") {
		t.Fatalf("rt_1 after its run: %s", ra.Raw)
	}
	waitEnded(t, c, "rt_3", 15*time.Second)
	if rb := runtimeOf(t, c, "rt_2"); rb.Status != "running" || rb.ExitCode != nil {
		t.Fatalf("rt_2 should still run: %s", rb.Raw)
	}
	checkSentinel(t, a.SentinelFile, sentinelBytes("DONE", a.SessionID, "end_turn", 0, a.RunID))

	// Replay of one runtime: its events only, seq 1.. in order.
	rc := s.client()
	sub, err := rc.Subscribe(ctxT(t, 5*time.Second), client.SubscribeOptions{RuntimeID: "rt_1", Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= ra.LatestSeq; want++ {
		select {
		case ev := <-sub.C():
			if ev.Seq != want || ev.RuntimeID != "rt_1" {
				t.Fatalf("replayed %s, want seq %d of rt_1", ev.Raw, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("replay stopped before seq %d", want)
		}
	}
	h, err := c.History(ctxT(t, 5*time.Second), client.HistoryOptions{RuntimeID: "rt_3", Limit: 2})
	if err != nil || h.RuntimeID != "rt_3" || len(h.Events) != 2 || h.Events[1].Name != "session.end" {
		t.Fatalf("history rt_3: %v %+v", err, h)
	}
	if _, err := c.History(ctxT(t, 5*time.Second), client.HistoryOptions{}); rpcError(t, err).Code != client.CodeInvalidParams {
		t.Fatalf("history without runtime_id: %v", err)
	}

	// A follow-up resumes the parked session: the scripted backend counts turn 2.
	if err := c.Prompt(ctxT(t, 10*time.Second), "announce", "rt_1"); err != nil {
		t.Fatal(err)
	}
	ra = waitRuntime(t, c, "rt_1", 15*time.Second, "ended after its follow-up", func(rt client.Runtime) bool {
		return rt.Parked && strings.Contains(rt.FinalOutput, "turn 2")
	})
	if ra.SessionID != a.SessionID || *ra.ExitCode != 0 {
		t.Fatalf("rt_1 after the follow-up: %s", ra.Raw)
	}
	evs := checkStream(t, a.OnEvent, "rt_1")
	if n := len(only(evs, "session.end")); n != 2 {
		t.Fatalf("%d session.end in rt_1's log: %v", n, names(evs))
	}
	for _, ev := range evs {
		if ev.str("session_id") != a.SessionID || ev.str("run_label") != "alpha" || ev.str("run_id") != a.RunID {
			t.Fatalf("rt_1 event %v", ev)
		}
	}

	// Cancel one runtime: it alone ends cancelled.
	if err := c.Cancel(ctxT(t, 5*time.Second), "rt_2"); err != nil {
		t.Fatal(err)
	}
	rb := waitEnded(t, c, "rt_2", 15*time.Second)
	if *rb.ExitCode != 130 || rb.StopReason != "cancelled" {
		t.Fatalf("rt_2 after cancel: %s", rb.Raw)
	}
	checkSentinel(t, b.SentinelFile, sentinelBytes("KILLED", b.SessionID, "cancelled", 130, b.RunID))
	checkStream(t, b.OnEvent, "rt_2")
	checkStream(t, g.OnEvent, "rt_3")

	if err := c.Shutdown(ctxT(t, 5*time.Second), "graceful"); err != nil {
		t.Fatal(err)
	}
	s.exited(0, 20*time.Second)
	s.tombstone("shutdown")
	if _, err := os.Stat(s.sock); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there: %v", err)
	}
}

// A graceful shutdown cancels running runtimes and waits for them; kill
// ends them at once. Either way every runtime process is gone.
func TestStableShutdownModes(t *testing.T) {
	for _, mode := range []string{"graceful", "kill"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t)
			s := w.startStable("sup", nil)
			c := s.client()
			var sps []client.Spawned
			for i := 0; i < 2; i++ {
				sps = append(sps, spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "child 30\nsleep 30s"}))
			}
			var pids []int
			for _, sp := range sps {
				rt := waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "running its child", func(rt client.Runtime) bool { return rt.PID > 0 })
				pids = append(pids, rt.PID, rt.PluginPID)
			}
			start := time.Now()
			if err := c.Shutdown(ctxT(t, 5*time.Second), mode); err != nil {
				t.Fatal(err)
			}
			s.exited(0, 20*time.Second)
			if mode == "kill" && time.Since(start) > 4*time.Second {
				t.Errorf("kill shutdown took %v", time.Since(start))
			}
			s.tombstone("shutdown")
			for _, pid := range pids {
				requireGone(t, "a runtime or plugin process", pid, 5*time.Second)
			}
			for _, sp := range sps {
				checkSentinel(t, sp.SentinelFile, sentinelBytes("KILLED", sp.SessionID, "cancelled", 130, sp.RunID))
				evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
				if end := lastSessionEnd(t, evs); end.str("stop_reason") != "cancelled" {
					t.Errorf("%s ended %v", sp.RuntimeID, end)
				}
			}
		})
	}
}

// The same idempotency key with the same params answers the first spawn's
// result; with other params it is refused.
func TestStableIdempotentSpawn(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	p := client.SpawnParams{Backend: "echo", Prompt: "hi", Label: "once", IdempotencyKey: "job-42", Timeout: 600}
	first := spawn(t, c, p)
	p.Timeout = "10m" // the same timeout, written as a duration
	again := spawn(t, c, p)
	if string(first.Raw) != string(again.Raw) {
		t.Fatalf("same key, same params:\n%s\n%s", first.Raw, again.Raw)
	}
	p.Prompt = "something else"
	_, err := c.Spawn(ctxT(t, 10*time.Second), p)
	if re := rpcError(t, err); re.Message != "idempotency key reused with different parameters" {
		t.Fatalf("different params: %v", err)
	}
	list, _ := c.List(ctxT(t, 5*time.Second))
	if len(list) != 1 {
		t.Fatalf("%d runtimes", len(list))
	}
}

// A plugin SIGKILLed mid-turn ends its runtime alone: error, an avenor.error
// naming the plugin, no orphaned runtime process; the other runtimes finish
// and the socket keeps answering.
func TestStableCrashIsolation(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	victim := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "victim", Prompt: "child 30\nchunks 100 every=100ms"})
	var others []client.Spawned
	for i := 0; i < 2; i++ {
		others = append(others, spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "chunks 20 every=100ms"}))
	}
	rt := waitRuntime(t, c, victim.RuntimeID, 10*time.Second, "running its child", func(rt client.Runtime) bool { return rt.PID > 0 && rt.PluginPID > 0 })
	if err := syscall.Kill(rt.PluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ended := waitEnded(t, c, victim.RuntimeID, 15*time.Second)
	if *ended.ExitCode != 1 || ended.StopReason != "error" {
		t.Fatalf("victim: %s", ended.Raw)
	}
	requireGone(t, "the victim's runtime process", rt.PID, 5*time.Second)
	evs := checkStream(t, victim.OnEvent, victim.RuntimeID)
	found := false
	for _, ev := range only(evs, "avenor.error") {
		if ev.str("source") == "backend" && strings.Contains(ev.str("message"), "avenor-plugin-scripted") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no avenor.error naming the plugin: %v", only(evs, "avenor.error"))
	}
	for _, o := range others {
		r := waitEnded(t, c, o.RuntimeID, 20*time.Second)
		if *r.ExitCode != 0 || r.StopReason != "end_turn" {
			t.Fatalf("%s: %s", o.RuntimeID, r.Raw)
		}
		checkStream(t, o.OnEvent, o.RuntimeID)
	}
	if list, err := s.client().List(ctxT(t, 5*time.Second)); err != nil || len(list) != 3 {
		t.Fatalf("the socket after the crash: %v %d", err, len(list))
	}
}

// --max-runtimes 2: the third spawn gets the typed capacity error; parked
// runtimes do not count, so once one ends a spawn succeeds.
func TestStableMaxRuntimes(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil, "--max-runtimes", "2")
	c := s.client()
	spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "sleep 1s"})
	spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "sleep 30s"})
	_, err := c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
	re := rpcError(t, err)
	capErr, ok := client.AsCapacity(err)
	if re.Message != "max runtimes (2) reached" || !ok || capErr != (client.Capacity{Source: "local", Retryable: true, Limit: 2, Active: 2}) {
		t.Fatalf("third spawn: %v (data %s)", err, re.Data)
	}
	waitEnded(t, c, "rt_1", 15*time.Second)
	third := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
	if third.RuntimeID != "rt_3" {
		t.Fatalf("third spawn: %s", third.Raw)
	}
	// A follow-up of the parked rt_1 needs a slot too: rt_2 and rt_3 hold them
	// until rt_3 ends.
	waitEnded(t, c, "rt_3", 15*time.Second)
	if err := c.Prompt(ctxT(t, 10*time.Second), "say again", "rt_1"); err != nil {
		t.Fatalf("follow-up with a free slot: %v", err)
	}
}

// Tombstones: idle (no runtime, no client for --idle-timeout), signal.
func TestStableTombstones(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		w := newWorld(t)
		s := w.startStable("sup", nil, "--idle-timeout", "500ms")
		c := s.client()
		spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "sleep 1s"})
		c.Close()
		start := time.Now()
		s.exited(0, 15*time.Second)
		if time.Since(start) < 1200*time.Millisecond {
			t.Errorf("exited idle after %v, while a runtime ran", time.Since(start))
		}
		s.tombstone("idle")
	})
	t.Run("signal", func(t *testing.T) {
		w := newWorld(t)
		s := w.startStable("sup", nil)
		sp := spawn(t, s.client(), client.SpawnParams{Backend: "scripted", Prompt: "sleep 30s"})
		s.signal(syscall.SIGTERM)
		s.exited(0, 20*time.Second)
		s.tombstone("signal")
		checkSentinel(t, sp.SentinelFile, sentinelBytes("KILLED", sp.SessionID, "cancelled", 130, sp.RunID))
	})
	t.Run("start_failed", func(t *testing.T) {
		w := newWorld(t)
		first := w.startStable("sup", nil)
		r := w.run("stable", "--control-socket", first.sock)
		if r.code != 1 || !strings.Contains(r.stderr, "already in use") {
			t.Fatalf("second supervisor on a live socket: %v", r)
		}
		if b, _ := os.ReadFile(first.sock + ".dead"); !strings.HasPrefix(string(b), "STOPPED reason=start_failed ") {
			t.Fatalf("tombstone %q", b)
		}
	})
	t.Run("empty socket flag", func(t *testing.T) {
		w := newWorld(t)
		r := w.run("stable", "--control-socket", "")
		if r.code != 1 || r.stderr != "avenor stable: --control-socket is required\n" {
			t.Fatalf("%v", r)
		}
	})
}

// A parked runtime is reaped after --parked-timeout, its kept plugin with it.
func TestStableParkedTimeout(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil, "--parked-timeout", "700ms")
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
	rt := waitEnded(t, c, sp.RuntimeID, 10*time.Second)
	if !rt.Parked || rt.PluginPID == 0 {
		t.Fatalf("parked: %s", rt.Raw)
	}
	if !waitFor(10*time.Second, func() bool {
		_, err := c.Runtime(ctxT(t, 5*time.Second), sp.RuntimeID)
		return err != nil
	}) {
		t.Fatal("the parked runtime was not reaped")
	}
	if err := c.Prompt(ctxT(t, 5*time.Second), "again", sp.RuntimeID); rpcError(t, err).Code != client.CodeServerError {
		t.Fatalf("prompt of a reaped runtime: %v", err)
	}
	requireGone(t, "the reaped runtime's plugin", rt.PluginPID, 5*time.Second)
	checkStream(t, sp.OnEvent, sp.RuntimeID)
}

// A parked runtime whose kept plugin was SIGKILLed answers its next
// follow-up through a fresh plugin that resumes the session.
func TestStableParkedPluginKilledResumes(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "announce"})
	rt := waitEnded(t, c, sp.RuntimeID, 10*time.Second)
	if rt.PluginPID == 0 {
		t.Fatalf("no kept plugin: %s", rt.Raw)
	}
	if err := syscall.Kill(rt.PluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "without its plugin", func(r client.Runtime) bool { return r.PluginPID == 0 })
	if err := c.Prompt(ctxT(t, 10*time.Second), "announce", sp.RuntimeID); err != nil {
		t.Fatal(err)
	}
	rt2 := waitRuntime(t, c, sp.RuntimeID, 15*time.Second, "ended after the follow-up", func(r client.Runtime) bool {
		return r.Parked && strings.Contains(r.FinalOutput, "turn 2")
	})
	if rt2.SessionID != sp.SessionID || *rt2.ExitCode != 0 || rt2.PluginPID == rt.PluginPID || rt2.PluginPID == 0 {
		t.Fatalf("after the follow-up: %s (first plugin %d)", rt2.Raw, rt.PluginPID)
	}
	checkStream(t, sp.OnEvent, sp.RuntimeID)
}

// The tree budget: a nested supervisor joins the root's tree through
// AVENOR_TREE_BUDGET and is refused with source "tree" when the tree is
// full; a SIGKILLed supervisor's reservations are reaped.
func TestStableTreeBudget(t *testing.T) {
	w := newWorld(t)
	root := w.startStable("root", nil, "--max-tree-budget", "2")
	rc := root.client()
	tb, err := rc.TreeBudget(ctxT(t, 5*time.Second))
	if err != nil || tb.Mode != "active" || tb.Capacity != 2 || tb.Path == "" || !strings.HasPrefix(tb.Path, w.home+"/.avenor/sockets/tree-budget-") {
		t.Fatalf("tree_budget: %v %+v", err, tb)
	}
	// The runtime's environment names the tree's file, so a supervisor it
	// starts joins the tree.
	env := spawn(t, rc, client.SpawnParams{Backend: "scripted", Prompt: "shell echo tree=$AVENOR_TREE_BUDGET"})
	if r := waitEnded(t, rc, env.RuntimeID, 10*time.Second); !strings.Contains(r.FinalOutput, "tree="+tb.Path) {
		t.Fatalf("the runtime's AVENOR_TREE_BUDGET: %s", r.Raw)
	}
	spawn(t, rc, client.SpawnParams{Backend: "scripted", Prompt: "sleep 30s"})

	nested := w.startStable("nested", []string{"AVENOR_TREE_BUDGET=" + tb.Path})
	nc := nested.client()
	ntb, err := nc.TreeBudget(ctxT(t, 5*time.Second))
	if err != nil || ntb.RootID != tb.RootID || ntb.Active != 1 || ntb.Capacity != 2 {
		t.Fatalf("nested tree_budget: %v %+v (root %+v)", err, ntb, tb)
	}
	spawn(t, nc, client.SpawnParams{Backend: "scripted", Prompt: "sleep 30s"})
	for _, c := range []*client.Client{nc, rc} {
		_, err := c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
		if capErr, ok := client.AsCapacity(err); !ok || capErr != (client.Capacity{Source: "tree", Retryable: true, Limit: 2, Active: 2}) {
			t.Fatalf("spawn in a full tree: %v", err)
		}
	}

	nested.signal(syscall.SIGKILL)
	nested.wait()
	sp := spawn(t, rc, client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
	if sp.RuntimeID != "rt_3" {
		t.Fatalf("spawn after the nested supervisor died: %s", sp.Raw)
	}
	if tb, _ = rc.TreeBudget(ctxT(t, 5*time.Second)); tb.Active > 2 {
		t.Fatalf("tree after reaping: %+v", tb)
	}
}

// Load: 100 echo runtimes spawned at once all finish; every log has
// contiguous seq ending in session.end.
func TestStableLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("100 plugin processes")
	}
	const n = 100
	w := newWorld(t)
	s := w.startStable("sup", nil, "--max-runtimes", "100", "--max-tree-budget", "100")
	c := s.client()
	start := time.Now()
	var wg sync.WaitGroup
	spawned := make([]client.Spawned, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			spawned[i], errs[i] = c.Spawn(ctx, client.SpawnParams{Backend: "echo", Prompt: strings.Repeat("stream me ", 5)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("spawn %d: %v", i, err)
		}
	}
	for _, sp := range spawned {
		r := waitEnded(t, c, sp.RuntimeID, 40*time.Second)
		if *r.ExitCode != 0 {
			t.Fatalf("%s: %s", sp.RuntimeID, r.Raw)
		}
	}
	t.Logf("%d echo runtimes spawned and finished in %v", n, time.Since(start))
	for _, sp := range spawned {
		evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
		if len(only(evs, "agent.message_chunk")) < 2 {
			t.Fatalf("%s streamed %v", sp.RuntimeID, names(evs))
		}
	}
}

// max_retries: a runtime whose plugin died is retried in a fresh plugin
// that resumes the session.
func TestStableRetryAfterCrash(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("sup", nil)
	c := s.client()
	// The first attempt kills its own plugin; the second finds the marker.
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", MaxRetries: client.Int(1),
		Prompt: "shell test -f marker && echo second || { touch marker; kill -9 $PPID; }"})
	rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	if *rt.ExitCode != 0 || !strings.Contains(rt.FinalOutput, "second") {
		t.Fatalf("after the retry: %s", rt.Raw)
	}
	evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
	retries := only(evs, "avenor.retry")
	starts := only(evs, "session.start")
	if len(retries) != 1 || len(starts) != 2 || starts[1].str("session_id") != sp.SessionID {
		t.Fatalf("events %v", names(evs))
	}
	if a, _ := retries[0].num("attempt"); a != 2 {
		t.Fatalf("retry %v", retries[0])
	}
}
