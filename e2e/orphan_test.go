//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// orphanTrialsEnv sets how many trials TestOrphan runs per runtime and kill
// target and mode (default 1): `make e2e` runs one each, a measurement runs more.
const orphanTrialsEnv = "AVENOR_E2E_ORPHAN_TRIALS"

// orphanGrace is how long the process tree may outlive a kill.
const orphanGrace = 5 * time.Second

// TestOrphan kills the plugin, the runtime CLI or the host while the real
// runtime's shell tool runs `sleep`, and checks that nothing avenor started
// is left 5 s later. opencode and codex start their shell tools in a new
// session, out of the runtime's process group, so only owning the whole tree
// (a cgroup, or a subreaper and a walk of /proc) reaches them.
func TestOrphan(t *testing.T) {
	trials := 1
	if v := os.Getenv(orphanTrialsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of trials", orphanTrialsEnv, v)
		}
		trials = n
	}
	codex.bin = func() string { return codexBin(t) }
	orphans, total := 0, 0
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		for _, rt := range []*runtimeSpec{opencode, codex} {
			t.Run(mode+"/"+rt.backend, func(t *testing.T) {
				if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-"+rt.name)); err != nil {
					t.Fatalf("the %s plugin is not built: %v", rt.name, err)
				}
				for _, target := range []string{"plugin", "cli", "host"} {
					t.Run("kill-"+target, func(t *testing.T) {
						for i := range trials {
							total++
							orphans += orphanTrial(t, rt, mode, target, i)
						}
					})
				}
			})
		}
	}
	t.Logf("orphan count over %d real-runtime kill trials: %d", total, orphans)
}

// orphanTrial runs one trial and returns how many processes outlived the
// kill by more than orphanGrace (they are killed then).
//
// Mode "no-cgroup" sets AVENOR_CGROUPS=off: the tree is then owned through
// the process group, the plugin as subreaper and the AVENOR_PROCTREE marker.
func orphanTrial(t *testing.T, rt *runtimeSpec, mode, target string, trial int) int {
	t.Helper()
	// A sleep no other process on the machine runs, so the test knows its
	// own tool.
	sleep := fmt.Sprintf("sleep 60.%d%03d", os.Getpid()%1000, trial)
	w := newWorld(t, rt, fakellm.Config{Script: fakellm.ShellThenText(sleep, "DONE")})
	if mode == "no-cgroup" {
		w.env = append(w.env, "AVENOR_CGROUPS=off")
	}
	run := w.startAvenor(fmt.Sprintf("orphan-%s-%d", target, trial), "--prompt", "Run "+sleep+" using the shell.", "--auto-approve")
	host := run.p.cmd.Process.Pid

	var tool int
	if !waitFor(2*time.Minute, func() bool {
		for id, cmdline := range descendants(host) {
			if cmdline == sleep {
				tool = id.pid
			}
		}
		return tool != 0 || run.p.ended()
	}) || tool == 0 {
		t.Fatalf("the shell tool %q never ran under avenor (pid %d)\n%v", sleep, host, run.p.wait())
	}

	victim := host
	switch target {
	case "plugin", "cli":
		plugin := childMatching(host, "avenor-plugin-"+rt.name)
		if plugin == 0 {
			t.Fatalf("no avenor-plugin-%s child of avenor (pid %d)", rt.name, host)
		}
		victim = plugin
		if target == "cli" {
			// The runtime CLI is the plugin's child that the tool descends from.
			victim = ancestorBelow(tool, plugin)
			if victim == 0 {
				t.Fatalf("the tool (pid %d) does not descend from the plugin (pid %d)", tool, plugin)
			}
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", victim))
	t.Logf("trial %d: SIGKILL %s (pid %d: %s) while the tool (pid %d) runs", trial, target, victim,
		strings.ReplaceAll(strings.TrimSpace(string(cmdline)), "\x00", " "), tool)
	// Let the sampler see the whole tree once more.
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s (pid %d): %v", target, victim, err)
	}
	killed := time.Now()

	run.p.mu.Lock()
	seen := make(map[procID]string, len(run.p.seen))
	for id, c := range run.p.seen {
		seen[id] = c
	}
	run.p.mu.Unlock()
	alive := func() []procID {
		var out []procID
		for id := range seen {
			if id.pid != victim && procAlive(id) {
				out = append(out, id)
			}
		}
		return out
	}
	gone := waitFor(orphanGrace, func() bool { return len(alive()) == 0 })
	left := alive()
	if gone {
		t.Logf("trial %d: the tree was gone %v after the kill", trial, time.Since(killed).Round(time.Millisecond))
	}
	for _, id := range left {
		t.Errorf("trial %d (kill %s): process %d outlived the kill by %v: %s", trial, target, id.pid, orphanGrace, seen[id])
		_ = syscall.Kill(id.pid, syscall.SIGKILL)
	}
	if target != "host" {
		if !waitFor(30*time.Second, run.p.ended) {
			t.Errorf("trial %d: avenor still runs 30 s after its %s was killed", trial, target)
		}
	}
	run.p.cancel()
	run.p.wait()
	return len(left)
}

// childMatching is the first child of pid whose command line contains s.
func childMatching(pid int, s string) int {
	for id, cmdline := range descendants(pid) {
		if ppid, _, _, ok := statOf(id.pid); ok && ppid == pid && strings.Contains(cmdline, s) {
			return id.pid
		}
	}
	return 0
}

// ancestorBelow is the ancestor of pid (or pid itself) whose parent is top,
// 0 when pid does not descend from top.
func ancestorBelow(pid, top int) int {
	for hops := 0; pid > 1 && hops < 64; hops++ {
		ppid, _, _, ok := statOf(pid)
		if !ok {
			return 0
		}
		if ppid == top {
			return pid
		}
		pid = ppid
	}
	return 0
}
