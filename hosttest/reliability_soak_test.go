//go:build reliability

package hosttest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// soakRuns and soakSpawns bound the soak in CI; the full run is
// RELIABILITY_SOAK_RUNS=1000 RELIABILITY_SOAK_SPAWNS=200.
func soakRuns() int   { return envInt("RELIABILITY_SOAK_RUNS", 100) }
func soakSpawns() int { return envInt("RELIABILITY_SOAK_SPAWNS", 40) }

// TestSoakSequentialRuns: many `avenor run` on echo, one after another, in
// one world: each succeeds, and nothing is left behind — no process of the
// world, no socket or file in its TMPDIR.
func TestSoakSequentialRuns(t *testing.T) {
	w := newWorld(t)
	n := soakRuns()
	evPath, sent := w.path("events.ndjson"), w.path("run.done")
	start := time.Now()
	for i := 0; i < n; i++ {
		res := w.run("--backend", "echo", "--dir", w.work, "--prompt", "soak "+strconv.Itoa(i),
			"--on-event", evPath, "--sentinel-file", sent)
		if res.code != 0 {
			t.Fatalf("run %d of %d: %v", i+1, n, res)
		}
		if i == 0 || i == n-1 {
			evs := readEvents(t, evPath)
			checkSeq(t, evs)
			lastSessionEnd(t, evs)
		}
	}
	t.Logf("%d sequential echo runs in %v (%v each)", n, time.Since(start).Round(time.Millisecond),
		(time.Since(start) / time.Duration(n)).Round(time.Millisecond))
	if left := worldProcesses(w); len(left) > 0 {
		t.Errorf("processes of the world left after %d runs: %v", n, left)
	}
	if left := listTree(t, w.tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR after %d runs: %v", n, left)
	}
}

// TestSoakStableSpawns: many spawns on one `avenor stable`, a few at a time,
// each parked then reaped: once they are all gone, the supervisor's fds,
// RSS and plugin processes are back near where they started.
func TestSoakStableSpawns(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("soak", nil, "--parked-timeout", "500ms")
	c := s.client()
	// Warm up: the first spawns grow pools and caches once.
	for i := 0; i < 3; i++ {
		sp := spawn(t, c, client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "warm"})
		waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	}
	settle(t, s)
	fd0, rss0 := fdCount(s.pid()), rssKB(s.pid())
	n := soakSpawns()
	const batch = 4
	for i := 0; i < n; i += batch {
		var ids []string
		for j := i; j < i+batch && j < n; j++ {
			sp := spawn(t, c, client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "soak " + strconv.Itoa(j)})
			ids = append(ids, sp.RuntimeID)
		}
		for _, id := range ids {
			waitEnded(t, c, id, 30*time.Second)
		}
	}
	settle(t, s)
	fd1, rss1 := fdCount(s.pid()), rssKB(s.pid())
	t.Logf("after %d spawns: supervisor fds %d → %d, RSS %d → %d kB", n, fd0, fd1, rss0, rss1)
	if fd1 > fd0+2 {
		t.Errorf("supervisor fds grew from %d to %d over %d spawns: %v", fd0, fd1, n, fdTargets(s.pid()))
	}
	// RSS settles in steps (heap growth, GC); a leak of a runtime's worth
	// per spawn would show as several MB over 40.
	if rss1 > rss0+rss0/2+8192 {
		t.Errorf("supervisor RSS grew from %d to %d kB over %d spawns", rss0, rss1, n)
	}
	if err := c.Shutdown(ctxT(t, 10*time.Second), "graceful"); err != nil {
		t.Fatal(err)
	}
	s.exited(0, 20*time.Second)
	if left := worldProcesses(w); len(left) > 0 {
		t.Errorf("processes of the world left after the supervisor stopped: %v", left)
	}
}

// settle waits until the supervisor has no plugin process left (every
// runtime reaped) and its fd count holds still.
func settle(t *testing.T, s *supervisor) {
	t.Helper()
	if !waitFor(15*time.Second, func() bool {
		for _, pid := range childrenOf(s.pid(), "avenor-plugin-") {
			if procState(pid) != "Z" {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("plugins still running 15s after their runtimes ended: %v", childrenOf(s.pid(), "avenor-plugin-"))
	}
	prev := -1
	waitFor(5*time.Second, func() bool {
		n := fdCount(s.pid())
		same := n == prev
		prev = n
		time.Sleep(200 * time.Millisecond)
		return same
	})
}

func fdCount(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

func fdTargets(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join(dir, e.Name()))
		out = append(out, e.Name()+"→"+l)
	}
	return out
}

// rssKB is VmRSS from /proc/<pid>/status.
func rssKB(pid int) int { return statusKB(pid, "VmRSS:") }

// statusKB is a field of /proc/<pid>/status in KB, 0 when unread.
func statusKB(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// worldProcesses lists the live (not zombie) processes whose environment
// holds the world's TMPDIR: whatever avenor, its plugins or their runtimes
// left running.
func worldProcesses(w *world) []string {
	marker := []byte("TMPDIR=" + w.tmp + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, marker) || procState(pid) == "Z" {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// listTree lists every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	return out
}
