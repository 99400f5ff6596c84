//go:build reliability

package hosttest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/stable"
)

// restartTrials is how many kill/restart trials TestReliabilityRestartKill
// runs: RELIABILITY_RESTART_TRIALS, 10 by default (CI).
func restartTrials() int { return envInt("RELIABILITY_RESTART_TRIALS", 10) }

// restartRuntimes is how many runtimes are mid-turn at each kill.
const restartRuntimes = 20

// TestReliabilityRestartKill: SIGKILL `avenor stable` at a random moment
// while 20 scripted runtimes are mid-turn, then start it again on the same
// socket. Nothing may be lost: every runtime is listed again under its id
// and its turn completes as if nothing happened (every chunk once, in
// order, stop reason end_turn), every log's seq runs from 1 without a gap
// or a duplicate with exactly one session.end for its one turn, every
// sentinel says DONE, and no plugin or runtime of the dead supervisor
// outlives the shutdown. It reports the re-attach time (restart to every
// runtime listed, its plugin re-attached) p50/p95 and how many runtimes
// were mid-turn.
func TestReliabilityRestartKill(t *testing.T) {
	rng, _ := seededRNG(t)
	n := restartTrials()
	var took []time.Duration
	midTurn := 0
	for i := range n {
		delay := time.Duration(rng.IntN(600)) * time.Millisecond
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			d, m := restartTrial(t, delay)
			took = append(took, d)
			midTurn += m
		})
		if t.Failed() {
			break
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	if len(took) > 0 {
		p := func(q float64) time.Duration { return took[min(len(took)-1, int(q*float64(len(took))))] }
		t.Logf("%d trials × %d runtimes, %d of them re-attached mid-turn, 0 lost: re-attach after restart p50 %v p95 %v (max %v)",
			len(took), restartRuntimes, midTurn, p(0.50), p(0.95), took[len(took)-1])
	}
}

func restartTrial(t *testing.T, delay time.Duration) (took time.Duration, midTurn int) {
	w := newWorld(t)
	s := w.startStable("st", nil, "--linger", "30s", "--max-runtimes", "32")
	c := s.client()
	type spawned struct {
		client.Spawned
		plugin, child int
	}
	var rts []spawned
	chunks := map[string]int{}
	for i := range restartRuntimes {
		nc := 40 + i
		script := fmt.Sprintf("child 60\nchunks %d every=20ms", nc)
		if i%4 == 0 {
			nc, script = 3, "chunks 3"
		}
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: script})
		rts = append(rts, spawned{Spawned: sp})
		chunks[sp.RuntimeID] = nc
	}
	for i := range rts {
		rt := runtimeOf(t, c, rts[i].RuntimeID)
		rts[i].plugin, rts[i].child = rt.PluginPID, rt.PID
	}
	time.Sleep(delay)
	s.signal(syscall.SIGKILL)
	s.wait()

	start := time.Now()
	s2 := w.startStable("st", nil, "--linger", "30s", "--max-runtimes", "32")
	c2 := s2.client()
	var list []client.Runtime
	if !waitFor(30*time.Second, func() bool {
		l, err := c2.List(ctxT(t, 5*time.Second))
		list = l
		return err == nil && len(l) >= restartRuntimes
	}) {
		t.Fatalf("after the restart %d of %d runtimes are listed: %s", len(list), restartRuntimes, tail(s2.stderr.String(), 2000))
	}
	// Re-attached: every runtime that was mid-turn has its plugin again.
	for _, sp := range rts {
		waitRuntime(t, c2, sp.RuntimeID, 30*time.Second, "re-attached or parked", func(rt client.Runtime) bool {
			return rt.Parked || rt.Status == "ended" || rt.PluginPID > 0
		})
	}
	took = time.Since(start)
	for _, sp := range rts {
		rt := waitEnded(t, c2, sp.RuntimeID, 30*time.Second)
		evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
		ends := only(evs, "session.end")
		if len(ends) != 1 {
			t.Errorf("%s: %d session.end for one turn", sp.RuntimeID, len(ends))
		}
		stop := ends[len(ends)-1].str("stop_reason")
		sent := readFile(t, sp.SentinelFile)
		if !strings.Contains(sent, "STOP_REASON="+stop+"\n") {
			t.Errorf("%s: sentinel %q does not agree with the log's session.end (%s)", sp.RuntimeID, sent, stop)
		}
		reattached := len(only(evs, "avenor.supervisor.reattached"))
		if os.Getenv("RESTART_DEBUG") != "" {
			t.Logf("%s: stop %s, reattached %d, %d events, status %s", sp.RuntimeID, stop, reattached, len(evs), rt.Status)
		}
		if ends[len(ends)-1]["seq"] != evs[len(evs)-1]["seq"] {
			t.Errorf("%s: session.end is not the last event", sp.RuntimeID)
		}
		if reattached > 1 {
			t.Errorf("%s: re-attached %d times", sp.RuntimeID, reattached)
		}
		if reattached == 1 {
			midTurn++
		}
		if stop != "end_turn" || !strings.HasPrefix(sent, "DONE\n") {
			t.Errorf("%s: the turn was lost: stop %q, sentinel %q, re-attached %d; supervisor stderr: %s",
				sp.RuntimeID, stop, sent, reattached, tail(s2.stderr.String(), 1500))
			continue
		}
		var got []string
		for _, ev := range only(evs, "agent.message_chunk") {
			got = append(got, strings.TrimSpace(fmt.Sprint(ev["content"].(map[string]any)["text"])))
		}
		var want []string
		for k := 1; k <= chunks[sp.RuntimeID]; k++ {
			want = append(want, fmt.Sprintf("chunk %d", k))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: chunks %v, want 1..%d each once in order", sp.RuntimeID, got, chunks[sp.RuntimeID])
		}
		if out := ends[0].str("final_output"); out != strings.Join(want, "\n")+"\n" {
			t.Errorf("%s: final output %q is not the whole turn's", sp.RuntimeID, out)
		}
	}
	if err := c2.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s2.exited(0, 20*time.Second)
	for _, sp := range rts {
		for _, pid := range []int{sp.plugin, sp.child} {
			if pid > 0 {
				requireGone(t, "plugin or runtime of the killed supervisor after the shutdown", pid, 10*time.Second)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(stable.StateDirFor(filepath.Join(w.state, "avenor"), s2.sock), stable.StateFileName)); err == nil {
		t.Errorf("the state file is still there after a clean shutdown")
	}
	return took, midTurn
}

// TestReliabilityRestartNoRestart: a supervisor SIGKILLed mid-turn and not
// started again leaves nothing behind once its plugins' linger window has
// passed: every plugin and runtime is gone within linger + 5 s.
func TestReliabilityRestartNoRestart(t *testing.T) {
	const linger = 3 * time.Second
	w := newWorld(t)
	s := w.startStable("st", nil, "--linger", linger.String())
	c := s.client()
	var pids []int
	for range 4 {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "child 120\nchunks 2000 every=20ms"})
		rt := waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "with a runtime child",
			func(rt client.Runtime) bool { return rt.PID > 0 && rt.PluginPID > 0 })
		pids = append(pids, rt.PluginPID, rt.PID)
	}
	s.signal(syscall.SIGKILL)
	s.wait()
	killed := time.Now()
	// Within the window they linger: that is the point.
	time.Sleep(linger / 2)
	alive := 0
	for _, pid := range pids {
		if !processGone(pid) {
			alive++
		}
	}
	if alive == 0 {
		t.Errorf("no plugin or runtime lingered after the supervisor died (linger %v)", linger)
	}
	for _, pid := range pids {
		requireGone(t, "plugin or runtime of a supervisor that never came back", pid, linger+5*time.Second-time.Since(killed))
	}
}

// TestReliabilityRestartStateRefused: a state file that is corrupt or of
// another version stops the supervisor before anything starts, naming the
// file and the fix; nothing is recovered or started twice.
func TestReliabilityRestartStateRefused(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"corrupt", `{"schema":"avenor.stable.state","version":1,"runtimes":[{"id":`, "is corrupt"},
		{"other version", `{"schema":"avenor.stable.state","version":99,"runtimes":[]}`, "has state version 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			sock := filepath.Join(w.tmp, "st.sock")
			dir := stable.StateDirFor(filepath.Join(w.state, "avenor"), sock)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{filepath.Join(w.state, "avenor"), filepath.Join(w.state, "avenor", "stable")} {
				_ = os.Chmod(d, 0o700)
			}
			path := filepath.Join(dir, stable.StateFileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			p := w.start(nil, "stable", "--control-socket", sock)
			r := p.wait()
			if r.code != 1 {
				t.Fatalf("avenor stable over a refused state file: exit %d, want 1: %s", r.code, r.stderr)
			}
			for _, want := range []string{path, tc.want, "move it away"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the refusal does not say %q: %s", want, r.stderr)
				}
			}
			if got := childrenOf(p.pid(), "avenor-plugin"); len(got) != 0 {
				t.Errorf("plugins started under a refused state: %v", got)
			}
			data, _ := os.ReadFile(path)
			if string(data) != tc.content {
				t.Errorf("the refused state file was changed")
			}
		})
	}
}

// TestReliabilityRestartPermission: a permission request pending when the
// supervisor is SIGKILLed is pending again after the restart, with the same
// request_id, and answerable through the control socket, the file handler
// (a response file beside the request) or `avenor answer`; the decision
// reaches the runtime once and the turn completes.
func TestReliabilityRestartPermission(t *testing.T) {
	for _, via := range []string{"control", "file", "answer"} {
		t.Run(via, func(t *testing.T) {
			w := newWorld(t)
			s := w.startStable("st", nil, "--linger", "30s")
			c := s.client()
			sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work,
				Prompt: "say before\npermission tool=bash question=\"Run?\"\nsay after"})
			waitForLog(t, sp.OnEvent, `"event":"permission.request"`, 10*time.Second)
			first := only(readEvents(t, sp.OnEvent), "permission.request")[0].str("request_id")
			s.signal(syscall.SIGKILL)
			s.wait()

			s2 := w.startStable("st", nil, "--linger", "30s")
			permBase := sp.SentinelFile + ".perm"
			var c2 *client.Client
			switch via {
			case "control":
				c2 = s2.client()
				rt := waitRuntime(t, c2, sp.RuntimeID, 15*time.Second, "with its permission pending again",
					func(rt client.Runtime) bool { return rt.PendingPermission })
				if !strings.Contains(string(rt.Permission), `"`+first+`"`) {
					t.Fatalf("pending again as %s, want request_id %s", rt.Permission, first)
				}
				if err := c2.AnswerPermission(ctxT(t, 5*time.Second), first, "allow", "", sp.RuntimeID); err != nil {
					t.Fatalf("answer_permission after the restart: %v", err)
				}
			// With no control client connected the file handler takes the
			// request (a connected one would, by precedence).
			case "file":
				waitReq(t, s2, sp.OnEvent, permBase+".req", first)
				if err := os.WriteFile(permBase+".req.response", []byte(`{"request_id":"`+first+`","option_id":"allow"}`), 0o600); err != nil {
					t.Fatal(err)
				}
			case "answer":
				waitReq(t, s2, sp.OnEvent, permBase+".req", first)
				if r := w.run("answer", "--option", "allow", permBase); r.code != 0 {
					t.Fatalf("avenor answer after the restart: %v", r)
				}
			}
			if c2 == nil {
				c2 = s2.client()
			}
			end := waitEnded(t, c2, sp.RuntimeID, 20*time.Second)
			evs := checkStream(t, sp.OnEvent, sp.RuntimeID)
			resp := only(evs, "permission.response")
			if len(resp) != 1 || resp[0].str("request_id") != first || resp[0].str("option_id") != "allow" {
				t.Fatalf("want one permission.response allowing %s, got %v", first, resp)
			}
			afters := 0
			for _, ev := range only(evs, "agent.message_chunk") {
				if strings.Contains(fmt.Sprint(ev["content"]), "after") {
					afters++
				}
			}
			if afters != 1 || end.StopReason != "end_turn" || len(only(evs, "session.end")) != 1 {
				t.Fatalf("the turn did not complete once after the answer: %d \"after\" chunks, stop %q, %d session.end",
					afters, end.StopReason, len(only(evs, "session.end")))
			}
			if len(only(evs, "avenor.supervisor.reattached")) != 1 {
				t.Errorf("no avenor.supervisor.reattached in the log")
			}
			if err := c2.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			s2.exited(0, 20*time.Second)
		})
	}
}

// waitReq waits for the file handler's request file to name id.
func waitReq(t *testing.T, s *supervisor, log, path, id string) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), id)
	}) {
		b, _ := os.ReadFile(path)
		t.Fatalf("no %s in %s within 10s (it holds %q); log:\n%s\nsupervisor: %s", id, path, b, readFile(t, log), tail(s.stderr.String(), 2000))
	}
}
