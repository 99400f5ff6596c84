package agentproc

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// treeModes are the two ways Start owns a CLI's tree: a cgroup of its own
// (where this machine allows one), and the process group plus TreeEnv.
func treeModes(t *testing.T) []string {
	modes := []string{"no-cgroup"}
	if cg, err := NewCgroup("avenor-test"); err == nil {
		_ = cg.Remove(time.Second)
		modes = append(modes, "cgroup")
	} else {
		t.Logf("cgroup mode not tested here: %v", err)
	}
	return modes
}

func setTreeMode(t *testing.T, mode string) {
	if mode == "no-cgroup" {
		t.Setenv(CgroupsEnv, "off")
	}
}

// startEscaper starts a CLI that starts `sleep` in a session of its own (as
// opencode and codex start their shell tools) and prints its pid.
func startEscaper(t *testing.T) (*Process, int) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	p := startSh(t, Spec{}, `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 300`)
	l := nextLine(t, p)
	pid, err := strconv.Atoi(string(l.Data))
	if err != nil {
		t.Fatalf("escaper pid: %q: %v", l.Data, err)
	}
	// setsid has run once the sleep's session is its own.
	if !waitUntil(5*time.Second, func() bool { sid, _ := unixGetsid(pid); return sid == pid }) {
		t.Fatalf("the escaper (pid %d) never got a session of its own", pid)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return p, pid
}

func unixGetsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// gone reports whether pid has exited (a zombie has: only its reaping is
// left, which init does).
func gone(pid int) bool {
	st, ok := readStat(pid)
	return !ok || st.state == 'Z'
}

func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestStopKillsDescendantInOwnSession: a child that called setsid is out of
// the CLI's process group; Stop must kill it anyway.
func TestStopKillsDescendantInOwnSession(t *testing.T) {
	for _, mode := range treeModes(t) {
		t.Run(mode, func(t *testing.T) {
			setTreeMode(t, mode)
			p, escaper := startEscaper(t)
			if err := p.Stop(100 * time.Millisecond); err == nil {
				t.Errorf("Stop = nil, want ErrTerminated: the CLI was sleeping")
			}
			if !waitUntil(5*time.Second, func() bool { return gone(escaper) }) {
				t.Fatalf("the CLI's child in its own session (pid %d) outlived Stop", escaper)
			}
		})
	}
}

// TestCLIDeathKillsDescendantInOwnSession: when the CLI dies by itself
// (here SIGKILL) mid-tool, the tool it left behind dies too, without Stop.
func TestCLIDeathKillsDescendantInOwnSession(t *testing.T) {
	for _, mode := range treeModes(t) {
		t.Run(mode, func(t *testing.T) {
			setTreeMode(t, mode)
			p, escaper := startEscaper(t)
			if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done not closed after the CLI was killed")
			}
			if !waitUntil(5*time.Second, func() bool { return gone(escaper) }) {
				t.Fatalf("the CLI's child in its own session (pid %d) outlived the CLI", escaper)
			}
		})
	}
}

// TestCgroupHoldsTheTree: with cgroups usable, the CLI and what it starts
// live in a cgroup of their own, removed once the tree is gone.
func TestCgroupHoldsTheTree(t *testing.T) {
	if cg, err := NewCgroup("avenor-test"); err != nil {
		t.Skipf("no usable cgroup here: %v", err)
	} else {
		_ = cg.Remove(time.Second)
	}
	p, escaper := startEscaper(t)
	cgOf := func(pid int) string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "0::"); ok {
				return v
			}
		}
		return ""
	}
	cli, esc := cgOf(p.PID()), cgOf(escaper)
	if !strings.Contains(cli, "/avenor-rt-") || esc != cli {
		t.Fatalf("CLI in cgroup %q, its escaped child in %q: want both in the same avenor-rt- cgroup", cli, esc)
	}
	dir := p.cg.Path()
	p.Stop(0)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still exists after Stop (%v)", dir, err)
	}
}

// TestKillMarkedSparesOthers: only processes carrying the token die.
func TestKillMarkedSparesOthers(t *testing.T) {
	token, other := NewTreeToken(), NewTreeToken()
	start := func(tok string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = WithTreeToken(os.Environ(), tok)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	mine, theirs := start(token), start(other)
	if n := KillMarked(token); n != 1 {
		t.Errorf("KillMarked killed %d processes, want 1", n)
	}
	if err := mine.Wait(); err == nil {
		t.Errorf("the marked sleep exited cleanly, want killed")
	}
	if gone(theirs.Process.Pid) {
		t.Errorf("KillMarked killed a process carrying another token")
	}
	if KillMarked("") != 0 {
		t.Errorf("KillMarked(\"\") killed something")
	}
}

// TestKillDescendantsAfterReparenting: as a subreaper, this process inherits
// the orphan of a child that died, and KillDescendants finds and reaps it.
func TestKillDescendantsAfterReparenting(t *testing.T) {
	// The subreaper bit is per process and inherited by nothing: it only
	// changes where orphans of this test binary's children go.
	if err := BecomeSubreaper(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = unixPrctlSubreaper(0) }()
	out, err := exec.Command("/bin/sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!`).Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if !waitUntil(5*time.Second, func() bool { st, ok := readStat(orphan); return ok && st.ppid == os.Getpid() }) {
		t.Fatalf("the orphan (pid %d) was not reparented to this subreaper", orphan)
	}
	if n := KillDescendants(os.Getpid()); n < 1 {
		t.Errorf("KillDescendants killed %d processes, want the orphan", n)
	}
	if _, ok := readStat(orphan); ok {
		t.Errorf("the orphan (pid %d) is still in /proc: not killed, or left a zombie", orphan)
	}
}

func TestWithTreeToken(t *testing.T) {
	env := WithTreeToken([]string{"A=1", TreeEnv + "=outer", "B=2", TreeEnv + "=x y"}, "mine")
	want := []string{"A=1", "B=2", TreeEnv + "=x y mine"}
	if strings.Join(env, "|") != strings.Join(want, "|") {
		t.Errorf("WithTreeToken = %q, want %q", env, want)
	}
	if got := OwnTreeToken(env); got != "mine" {
		t.Errorf("OwnTreeToken = %q, want mine", got)
	}
	if !hasTreeToken([]byte("A=1\x00"+TreeEnv+"=x mine\x00"), "mine") || hasTreeToken([]byte(TreeEnv+"=minex"), "mine") {
		t.Errorf("hasTreeToken matches wrongly")
	}
}

func unixPrctlSubreaper(v uintptr) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, 36, v, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// TestCgroupSweepsStale: a cgroup left by a creator that was SIGKILLed (a
// dead pid in its name), with a runtime's cgroup still inside it, is removed
// by the next NewCgroup of the same prefix; a live creator's is kept.
func TestCgroupSweepsStale(t *testing.T) {
	probe, err := NewCgroup("avenor-sweeptest")
	if err != nil {
		t.Skipf("no usable cgroup here: %v", err)
	}
	own := strings.TrimSuffix(probe.Path(), "/"+filepathBase(probe.Path()))
	_ = probe.Remove(time.Second)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s/avenor-sweeptest-%d-1", own, dead.Process.Pid)
	live := fmt.Sprintf("%s/avenor-sweeptest-%d-99", own, os.Getpid())
	for _, d := range []string{stale, stale + "/avenor-rt-1-1", live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer removeTree(live)
	defer removeTree(stale)
	forgetSweeps() // the probe swept just now
	cg, err := NewCgroup("avenor-sweeptest")
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove(time.Second)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale cgroup %s was not removed (%v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live creator's cgroup %s was removed: %v", live, err)
	}
}

// forgetSweeps makes the next NewCgroup of every prefix sweep.
func forgetSweeps() {
	sweepsMu.Lock()
	defer sweepsMu.Unlock()
	clear(sweeps)
}

// TestCgroupSweepAtMostEvery: a process sweeps a directory for a prefix at
// its first NewCgroup and then at most once per SweepEvery — a stale
// cgroup that appears in between waits for the next sweep — not at every
// NewCgroup, which read a directory of hundreds of cgroups per plugin
// launch.
func TestCgroupSweepAtMostEvery(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	sweepNow = func() time.Time { return now }
	defer func() { sweepNow = time.Now }()
	forgetSweeps()
	first, err := NewCgroup("avenor-sweepevery")
	if err != nil {
		t.Skipf("no usable cgroup here: %v", err)
	}
	defer first.Remove(time.Second)
	own := strings.TrimSuffix(first.Path(), "/"+filepathBase(first.Path()))
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s/avenor-sweepevery-%d-1", own, dead.Process.Pid)
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer removeTree(stale)
	for _, step := range []struct {
		after time.Duration
		gone  bool
	}{{0, false}, {SweepEvery - time.Second, false}, {SweepEvery, true}} {
		now = time.Unix(1_000_000, 0).Add(step.after)
		cg, err := NewCgroup("avenor-sweepevery")
		if err != nil {
			t.Fatal(err)
		}
		_ = cg.Remove(time.Second)
		_, err = os.Stat(stale)
		if gone := os.IsNotExist(err); gone != step.gone {
			t.Fatalf("%v after the first sweep: stale cgroup removed %v, want %v", step.after, gone, step.gone)
		}
	}
}

func filepathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// TestDescendantsWalkMatchesScan: the walk down the kernel's children lists
// finds the same descendants — grandchildren in a session of their own
// included, the root left out — as the scan of every process's parent it
// replaces, and KillDescendants of the root ends them all.
func TestDescendantsWalkMatchesScan(t *testing.T) {
	if _, ok := children(os.Getpid()); !ok {
		t.Skip("this kernel keeps no children lists")
	}
	root := exec.Command("/bin/sh", "-c", `sleep 300 & setsid sleep 300 & (sleep 300 & wait) & wait`)
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Process.Kill(); _ = root.Wait() }()
	pid := root.Process.Pid
	// three sleeps and the subshell's own sleep, the subshell: four
	// living below the root once sh has forked them all.
	if !waitUntil(5*time.Second, func() bool { return len(scanDescendants(pid)) == 4 }) {
		t.Fatalf("the tree did not grow: %v", scanDescendants(pid))
	}
	walk, scan := descendants(pid), scanDescendants(pid)
	slices.Sort(walk)
	slices.Sort(scan)
	if !slices.Equal(walk, scan) {
		t.Errorf("walk found %v, scan %v", walk, scan)
	}
	if n := KillDescendants(pid); n != 4 {
		t.Errorf("KillDescendants killed %d, want 4", n)
	}
	for _, p := range walk {
		if st, ok := readStat(p); ok && st.state != 'Z' {
			t.Errorf("descendant %d still runs", p)
		}
	}
}

// BenchmarkNewCgroupBeside200: a cgroup created (and removed) beside 200
// of this process's own, as a supervisor launches its 201st plugin;
// sweep-each-launch is the cost before SweepEvery, the baseline.
func BenchmarkNewCgroupBeside200(b *testing.B) {
	var held []*Cgroup
	defer func() {
		for _, cg := range held {
			_ = cg.Remove(time.Second)
		}
	}()
	for range 200 {
		cg, err := NewCgroup("avenor-benchcg")
		if err != nil {
			b.Skipf("no usable cgroup here: %v", err)
		}
		held = append(held, cg)
	}
	for _, mode := range []struct {
		name   string
		forget bool
	}{{"sweep-each-launch", true}, {"sweep-every", false}} {
		b.Run(mode.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if mode.forget {
					forgetSweeps()
				}
				cg, err := NewCgroup("avenor-benchcg")
				if err != nil {
					b.Fatal(err)
				}
				_ = cg.Remove(time.Second)
			}
		})
	}
}
