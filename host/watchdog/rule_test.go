package watchdog

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	const timeout, window = 10 * time.Second, 10 * time.Second
	for _, c := range []struct {
		name       string
		age, idle  time.Duration
		timeout    time.Duration
		hasSubtree bool
		want       Verdict
	}{
		{"young and idle", 9 * time.Second, 9 * time.Second, timeout, true, Young},
		{"old and idle over the window", 12 * time.Second, 10 * time.Second, timeout, true, Hung},
		{"old, idle, just short of the window", 12 * time.Second, 9999 * time.Millisecond, timeout, true, Busy},
		{"old and busy", time.Hour, 0, timeout, true, Busy},
		{"old with no subtree", time.Hour, time.Hour, timeout, false, NoSubtree},
		{"young with no subtree", time.Second, time.Second, timeout, false, Young},
		{"tool rule off", time.Hour, time.Hour, 0, true, Young},
		{"exactly at the timeout", timeout, window, timeout, true, Hung},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Judge(c.age, c.idle, c.timeout, window, c.hasSubtree); got != c.want {
				t.Fatalf("Judge = %v, want %v", got, c.want)
			}
		})
	}
}

func TestGained(t *testing.T) {
	a, b := Key{10, 1}, Key{11, 2}
	for _, c := range []struct {
		name      string
		prev, cur map[Key]Usage
		want      bool
	}{
		{"nothing then nothing", nil, map[Key]Usage{}, false},
		{"a process appeared", nil, map[Key]Usage{a: {}}, true},
		{"a process went", map[Key]Usage{a: {}, b: {}}, map[Key]Usage{a: {}}, true},
		{"same usage", map[Key]Usage{a: {5, 7}}, map[Key]Usage{a: {5, 7}}, false},
		{"cpu only", map[Key]Usage{a: {5, 7}}, map[Key]Usage{a: {6, 7}}, true},
		{"io only", map[Key]Usage{a: {5, 7}}, map[Key]Usage{a: {5, 8}}, true},
		{"pid reused by another process", map[Key]Usage{a: {5, 7}}, map[Key]Usage{{10, 9}: {0, 0}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Gained(c.prev, c.cur); got != c.want {
				t.Fatalf("Gained = %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (my (odd) cmd) S 4000 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 123456 1000 10 18446744073709551615"
	p, ok := ParseStat([]byte(line))
	if !ok {
		t.Fatal("not parsed")
	}
	if p.PID != 4242 || p.PPID != 4000 || p.Comm != "my (odd) cmd" || p.CPU != 13 || p.Start != 123456 {
		t.Fatalf("parsed %+v", p)
	}
	if _, ok := ParseStat([]byte("4243 (z) Z 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 0")); ok {
		t.Fatal("a zombie was parsed")
	}
	if _, ok := ParseStat([]byte("garbage")); ok {
		t.Fatal("garbage was parsed")
	}
	io, ok := ParseIO([]byte("rchar: 100\nwchar: 23\nsyscr: 4\n"))
	if !ok || io != 123 {
		t.Fatalf("ParseIO = %d %v", io, ok)
	}
}

func TestSubtree(t *testing.T) {
	all := []Proc{
		{PID: 1, PPID: 0, Start: 0},
		{PID: 100, PPID: 1, Start: 10},   // the plugin (a root)
		{PID: 101, PPID: 100, Start: 20}, // the runtime, started before the tool
		{PID: 200, PPID: 101, Start: 500},
		{PID: 201, PPID: 200, Start: 510}, // a grandchild
		{PID: 300, PPID: 1, Start: 600},   // not ours
	}
	got := Subtree(all, []int{100}, 400)
	if len(got) != 2 || got[0].PID != 200 || got[1].PID != 201 {
		t.Fatalf("Subtree = %+v", got)
	}
	if got := Subtree(all, []int{100}, 0); len(got) != 3 {
		t.Fatalf("Subtree since boot = %+v, want the runtime and the tool's two", got)
	}
}

// fakeClock maps wall times to ticks one for one from t0.
func fakeClock(t0 time.Time) Clock { return Clock{wall: t0, ticks: 1_000_000} }

func TestTrackerFiresOnAnIdleSubtreeOnly(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clock := fakeClock(t0)
	start := clock.Ticks(t0)
	tr := NewTracker(Config{ToolTimeout: 3 * time.Second, ProcRoot: t.TempDir()})
	tr.Start("idle", "sleep 600", t0)
	// bare starts later than the idle one's child: it has no process.
	tr.Start("bare", "edit", t0.Add(5*time.Second))
	var fired []Firing
	for s := 0; s <= 12; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		procs := []Proc{
			{PID: 100, PPID: 1, Start: start - 1000},
			{PID: 200, PPID: 100, Start: start + 10, Comm: "sleep"},
		}
		fired = append(fired, tr.Observe(now, procs, []int{100}, clock)...)
	}
	ids := map[string]bool{}
	for _, f := range fired {
		ids[f.Tool.ID] = true
		if f.IdleFor < 3*time.Second {
			t.Errorf("%s fired after %v idle, before the window", f.Tool.ID, f.IdleFor)
		}
		if len(f.Tool.Procs) != 1 || f.Tool.Procs[0].PID != 200 || f.Tool.Procs[0].CPUMs != 0 {
			t.Errorf("%s evidence subtree = %+v", f.Tool.ID, f.Tool.Procs)
		}
	}
	if ids["bare"] {
		t.Error("a tool call with no subtree fired the tool rule; it belongs to the progress rule")
	}
	if !ids["idle"] || len(fired) != 1 {
		t.Errorf("fired %v, want the idle tool call once", ids)
	}
}

func TestTrackerNeverFiresOnABusySubtree(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clock := fakeClock(t0)
	start := clock.Ticks(t0)
	for _, c := range []struct {
		name string
		step func(s int, p *Proc)
	}{
		{"cpu", func(s int, p *Proc) { p.CPU = uint64(s) }},
		{"io", func(s int, p *Proc) { p.IO = uint64(s * 4096) }},
		{"short-lived processes", func(s int, p *Proc) { p.PID = 200 + s; p.Start = start + uint64(s) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker(Config{ToolTimeout: 2 * time.Second, ProcRoot: t.TempDir()})
			tr.Start("t", "make", t0)
			for s := 0; s < 60; s++ {
				now := t0.Add(time.Duration(s) * time.Second)
				p := Proc{PID: 200, PPID: 100, Start: start + 1}
				c.step(s, &p)
				if f := tr.Observe(now, []Proc{p}, []int{100}, clock); len(f) != 0 {
					t.Fatalf("a busy subtree fired at %ds: %+v", s, f)
				}
				if !tr.ActiveWithin(now, 2*time.Second) {
					t.Fatalf("a busy subtree is not active at %ds", s)
				}
			}
		})
	}
}

func TestTrackerIdleAfterBusyFiresOnceAfterTheWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clock := fakeClock(t0)
	start := clock.Ticks(t0)
	tr := NewTracker(Config{ToolTimeout: 5 * time.Second, ProcRoot: t.TempDir()})
	tr.Start("t", "make", t0)
	var at []int
	for s := 0; s < 30; s++ {
		p := Proc{PID: 200, PPID: 100, Start: start + 1, CPU: uint64(min(s, 10))} // busy for 10 s, then stuck
		if f := tr.Observe(t0.Add(time.Duration(s)*time.Second), []Proc{p}, []int{100}, clock); len(f) > 0 {
			at = append(at, s)
		}
	}
	if len(at) != 1 || at[0] != 15 {
		t.Fatalf("fired at %v, want once at 15 s (last gain at 10 s + a 5 s window)", at)
	}
	tr.End("t")
	if tr.InFlight() != 0 {
		t.Fatal("End kept the tool call")
	}
}

// TestSubtreeOfRealProcesses reads this machine's /proc: a child started
// now is in this process's subtree since now, and gains CPU when busy.
func TestSubtreeOfRealProcesses(t *testing.T) {
	clock, ok := NewClock("/proc")
	if !ok {
		t.Fatal("no /proc/uptime")
	}
	since := clock.Ticks(time.Now().Add(-StartSlack))
	busy := exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done")
	idle := exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{busy, idle} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	}
	find := func() map[int]Proc {
		m := map[int]Proc{}
		for _, p := range Subtree(ReadProcs("/proc"), []int{os.Getpid()}, since) {
			m[p.PID] = p
		}
		return m
	}
	first := find()
	if _, ok := first[idle.Process.Pid]; !ok {
		t.Fatalf("the idle child %d is not in the subtree %v", idle.Process.Pid, first)
	}
	time.Sleep(500 * time.Millisecond)
	second := find()
	if second[idle.Process.Pid].CPU != first[idle.Process.Pid].CPU {
		t.Error("sleep gained CPU")
	}
	if b, ok := second[busy.Process.Pid]; ok && b.CPU <= first[busy.Process.Pid].CPU {
		t.Errorf("the busy child gained no CPU: %d then %d", first[busy.Process.Pid].CPU, b.CPU)
	}
	if got := Cmdline("/proc", idle.Process.Pid); got != "sleep 30" {
		t.Errorf("Cmdline = %q", got)
	}
}
