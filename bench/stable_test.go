package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// stableAvenor is the avenor binary for the stable benchmark: binDir's
// (make bench builds it), else one built once here.
var stableAvenor struct {
	once sync.Once
	path string
	err  error
}

func avenorBinary(tb testing.TB) string {
	stableAvenor.once.Do(func() {
		p := filepath.Join(binDir, "avenor")
		if _, err := os.Stat(p); err == nil {
			stableAvenor.path = p
			return
		}
		cmd := exec.Command("go", "build", "-o", p, "./cmd/avenor")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			stableAvenor.err = fmt.Errorf("go build ./cmd/avenor: %v\n%s", err, out)
			return
		}
		stableAvenor.path = p
	})
	if stableAvenor.err != nil {
		tb.Fatal(stableAvenor.err)
	}
	return stableAvenor.path
}

// Bounds of the stable benchmarks.
const (
	// stableReplyWords is the echo reply's length: echo streams one chunk
	// per word 20 ms apart, so 300 words keep every runtime streaming ~6 s,
	// longer than spawning 200 takes on 2 cores (~3–5 s), which is what
	// makes "while all stream" a real moment; the 200 case still ends in
	// well under a minute.
	stableReplyWords = 300
	// stableDeadline bounds one benchmark iteration, spawn to shutdown
	// (the 200 case must finish within 2 min); stablePerRuntime raises it
	// for larger sizes (stableDeadlineFor).
	stableDeadline   = 2 * time.Minute
	stablePerRuntime = 600 * time.Millisecond
	// parkedSettle is how long after the last runtime ended the
	// supervisor's RSS is read again, with every runtime parked.
	parkedSettle = 3 * time.Second
	// stableShutdownWait bounds the supervisor's graceful shutdown
	// (its own --shutdown-timeout is 10 s) and the plugins' exit after it.
	stableShutdownWait = 30 * time.Second
	// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100
	// on every Linux ABI Go supports (the kernel fixes it for userspace).
	clockTicks = 100
)

// supervisorEnvVar names extra KEY=VALUE words (space separated) for the
// supervisor's environment, which is otherwise a fixed minimal one: to
// measure it under a given GOGC, GOMEMLIMIT or GODEBUG=gctrace=1.
const supervisorEnvVar = "AVENOR_BENCH_SUPERVISOR_ENV"

// BenchmarkStableEcho: n echo runtimes spawned at once in one
// `avenor stable`, n = 50, 100, 200, each streaming a 300-word reply (~6 s
// of chunks 20 ms apart, like an agent). It reports:
//   - the supervisor's RSS while all n stream and its peak (VmHWM);
//   - each plugin process's RSS and PSS while all stream (PSS shares the
//     plugin binary's pages among its n copies), mean and max;
//   - CPU (utime+stime) of the supervisor and of all plugins over the
//     window from the first spawn to the last runtime's end, in
//     CPU-seconds and in % of one core;
//   - spawn call → that runtime's first event on an all-runtime
//     subscription, p50 and p99, and how long until all spawns answered.
//
// It asserts correctness, not speed: every spawn is answered, every
// runtime's own event stream ends with session.end{end_turn}, and after a
// graceful shutdown no plugin process is left. The supervisor runs with
// --max-runtimes and --max-tree-budget raised to n: the defaults (16 and
// 64, host/stable) would refuse the 17th spawn with a capacity error.
func BenchmarkStableEcho(b *testing.B) {
	for _, n := range []int{50, 100, 200} {
		b.Run("runtimes="+strconv.Itoa(n), func(b *testing.B) { benchStableN(b, n, true) })
	}
}

// BenchmarkStableSpawnLatency: the same measures with 20 runtimes spawned
// one after the other: spawn-to-first-event without contention.
func BenchmarkStableSpawnLatency(b *testing.B) {
	benchStableN(b, 20, false)
}

func benchStableN(b *testing.B, n int, concurrent bool) {
	bin := avenorBinary(b)
	reply := strings.Repeat("word ", stableReplyWords)
	for i := 0; i < b.N; i++ {
		res := stableIteration(b, bin, n, reply, concurrent)
		if b.Failed() {
			return
		}
		if res.running < n*9/10 {
			b.Fatalf("only %d of %d runtimes were running when sampled: the reply is too short to overlap the spawns", res.running, n)
		}
		b.ReportMetric(res.hostRSS, "host-RSS-MB")
		b.ReportMetric(res.hostPeak, "host-peak-RSS-MB")
		b.ReportMetric(res.pluginRSS, "plugin-RSS-MB")
		b.ReportMetric(res.pluginMaxRSS, "plugin-max-RSS-MB")
		b.ReportMetric(res.pluginPSS, "plugin-PSS-MB")
		b.ReportMetric(res.hostCPU, "host-CPU-s")
		b.ReportMetric(res.pluginCPU, "plugins-CPU-s")
		b.ReportMetric(100*res.hostCPU/res.window, "host-CPU-%core")
		b.ReportMetric(100*res.pluginCPU/res.window, "plugins-CPU-%core")
		b.ReportMetric(res.window, "window-s")
		b.ReportMetric(res.p50, "spawn-first-event-p50-ms")
		b.ReportMetric(res.p99, "spawn-first-event-p99-ms")
		b.ReportMetric(res.spawnAll, "spawn-all-s")
		b.ReportMetric(float64(res.lagged), "lagged-notices")
	}
}

// stableIteration starts one `avenor stable` admitting n runtimes and runs
// benchStable against it; whatever happens, the supervisor is killed and
// its directory removed, and on failure its stderr is shown.
func stableIteration(b *testing.B, bin string, n int, reply string, concurrent bool) stableResult {
	root, err := os.MkdirTemp("", "avb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	sock := filepath.Join(root, "s.sock")
	cmd := exec.Command(bin, "stable", "--control-socket", sock, "--max-runtimes", strconv.Itoa(n), "--max-tree-budget", strconv.Itoa(n))
	cmd.Dir = root
	cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root, "XDG_CONFIG_HOME=" + root + "/c", "XDG_STATE_HOME=" + root + "/s",
		"XDG_DATA_HOME=" + root + "/d", "AVENOR_PLUGIN_PATH=" + binDir, "PATH=/usr/bin:/bin"}
	cmd.Env = append(cmd.Env, strings.Fields(os.Getenv(supervisorEnvVar))...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sup := &supervisorProc{exited: make(chan struct{})}
	go func() { sup.err = cmd.Wait(); close(sup.exited) }()
	// benchStable shuts the supervisor down; the kill is for when it
	// stopped early (b.Fatal unwinds through here too).
	defer func() {
		// Its plugins outlive a killed supervisor (they linger for a
		// successor to recover them): they are killed with it.
		children := childrenOf(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-sup.exited
		for _, id := range children {
			if cur, ok := procIdentity(id.pid); ok && cur == id {
				_ = syscall.Kill(id.pid, syscall.SIGKILL)
			}
		}
		if b.Failed() {
			b.Logf("avenor stable stderr:\n%s", stableTail(stderr.String(), 4000))
		}
	}()
	return benchStable(b, sock, cmd.Process.Pid, n, reply, concurrent, sup)
}

// supervisorProc is the running `avenor stable`: exited is closed once it
// has ended, with err its Wait error.
type supervisorProc struct {
	exited chan struct{}
	err    error
}

type stableResult struct {
	hostRSS, hostPeak, pluginRSS, pluginMaxRSS, pluginPSS float64
	hostParked                                            float64 // RSS parkedSettle after all ended
	running                                               int     // runtimes running when hostRSS was read
	hostCPU, pluginCPU, window                            float64 // CPU-seconds, and the window's wall seconds
	p50, p99, spawnAll                                    float64
	// p99ToFork is spawn call → the plugin process's start (the
	// supervisor's part), p99FromFork that start → the first event (the
	// plugin's own start, its handshake and session, and the stream):
	// their sum bounds p99 (p99 of a sum is at most the sum of p99s).
	p99ToFork, p99FromFork float64
	lagged                 int
}

// pluginStarts maps each listed runtime's run_label to the wall time its
// plugin process started (/proc start time, 10 ms resolution).
func pluginStarts(list []client.Runtime) map[string]time.Time {
	boot, ok := bootTime()
	out := map[string]time.Time{}
	if !ok {
		return out
	}
	for _, rt := range list {
		if rt.PluginPID == 0 {
			continue
		}
		if st, err := readProcStat(rt.PluginPID); err == nil {
			out[rt.Label] = boot.Add(time.Duration(st.start) * time.Second / clockTicks)
		}
	}
	return out
}

// bootTime is the wall time of the machine's boot, from /proc/uptime (to
// 10 ms: /proc/stat's btime is whole seconds).
func bootTime() (time.Time, bool) {
	now := time.Now()
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return time.Time{}, false
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}, false
	}
	return now.Add(-time.Duration(up * float64(time.Second))), true
}

// benchStable drives one supervisor: spawn n, measure, check every
// runtime's end, shut it down gracefully and check no plugin outlives it.
func benchStable(b *testing.B, sock string, hostPID, n int, reply string, concurrent bool, sup *supervisorProc) stableResult {
	deadline := stableDeadlineFor(n, strings.Count(reply, " "))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var watcher *client.Client
	for watcher == nil {
		c, err := client.Dial(ctx, sock)
		if err == nil {
			watcher = c
			break
		}
		if ctx.Err() != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer watcher.Close()
	sub, err := watcher.Subscribe(ctx, client.SubscribeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	first := map[string]time.Time{} // run_label → first event seen
	seen := map[string]bool{}       // runtime ids whose label is known
	lagged := 0
	firstDone := make(chan struct{})
	go func() {
		for ev := range sub.C() {
			if ev.Name == "subscriber.lagged" {
				mu.Lock()
				lagged++
				mu.Unlock()
				continue
			}
			// Decode a runtime's label once: at 200 streams the test
			// process would otherwise compete with the supervisor for
			// the 2 cores decoding every chunk.
			mu.Lock()
			known := seen[ev.RuntimeID]
			mu.Unlock()
			if known {
				continue
			}
			var e struct {
				Label string `json:"run_label"`
			}
			_ = ev.Decode(&e)
			now := time.Now()
			mu.Lock()
			if e.Label != "" {
				seen[ev.RuntimeID] = true
				if _, ok := first[e.Label]; !ok {
					first[e.Label] = now
					if len(first) == n {
						close(firstDone)
					}
				}
			}
			mu.Unlock()
		}
	}()
	owner, err := client.Dial(ctx, sock)
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Close()

	cpu0, err := treeCPU(hostPID)
	if err != nil {
		b.Fatal(err)
	}
	starts := make([]time.Time, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		spawnOne := func() {
			defer wg.Done()
			starts[i] = time.Now()
			sp, err := owner.Spawn(ctx, client.SpawnParams{Backend: "echo", Label: "b" + strconv.Itoa(i), Prompt: reply})
			if err != nil {
				if c, ok := client.AsCapacity(err); ok {
					b.Errorf("spawn %d refused for capacity (%+v): the benchmark's --max-runtimes/--max-tree-budget do not admit %d", i, c, n)
					return
				}
				b.Errorf("spawn %d: %v", i, err)
				return
			}
			ids[i] = sp.RuntimeID
		}
		if concurrent {
			go spawnOne()
		} else {
			spawnOne()
		}
	}
	wg.Wait()
	spawnAll := time.Since(t0)
	if b.Failed() {
		b.FailNow()
	}
	select {
	case <-firstDone:
	case <-ctx.Done():
		mu.Lock()
		got := len(first)
		mu.Unlock()
		b.Fatalf("only %d of %d runtimes sent an event within %v", got, n, deadline)
	}

	// All n stream now: sample the processes.
	list, err := owner.List(ctx)
	if err != nil {
		b.Fatal(err)
	}
	forked := pluginStarts(list) // run_label → its plugin process's start
	plugins := map[procID]bool{} // every plugin process seen, for the leftover check
	var rss, pss, maxRSS float64
	running := 0
	for _, rt := range list {
		if rt.PluginPID == 0 {
			continue
		}
		if id, ok := procIdentity(rt.PluginPID); ok {
			plugins[id] = true
		}
		if rt.Status != "running" {
			continue
		}
		r, p := memOf(rt.PluginPID)
		rss += r
		pss += p
		maxRSS = max(maxRSS, r)
		running++
	}
	hostRSS, _ := memOf(hostPID)

	// Wait for every runtime to end, noting each plugin process on the way.
	var ended []client.Runtime
	for {
		list, err := owner.List(ctx)
		if err != nil {
			b.Fatalf("list while waiting for the runtimes to end: %v", err)
		}
		done := 0
		for _, rt := range list {
			if rt.PluginPID != 0 {
				if id, ok := procIdentity(rt.PluginPID); ok {
					plugins[id] = true
				}
			}
			if rt.ExitCode != nil {
				done++
			}
		}
		if done == n {
			ended = list
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d runtimes ended within %v", done, n, deadline)
		case <-time.After(100 * time.Millisecond):
		}
	}
	window := time.Since(t0)
	cpu1, err := treeCPU(hostPID)
	if err != nil {
		b.Fatal(err)
	}
	hostPeak := peakRSS(hostPID)
	// Said before the checks, so that a failed iteration still shows them.
	b.Logf("%d runtimes: supervisor RSS %.1f MB while all streamed, peak %.1f MB", n, hostRSS, hostPeak)
	checkStableEnds(b, ended, ids)
	// Every runtime is parked now (its turn ended, its session kept for a
	// follow-up): what the supervisor holds for them once the stream's
	// backlog is gone and the collector has had its time.
	time.Sleep(parkedSettle)
	hostParked, _ := memOf(hostPID)

	// A graceful shutdown, then no plugin may be left.
	if err := owner.Shutdown(ctx, "graceful"); err != nil {
		b.Fatalf("shutdown: %v", err)
	}
	select {
	case <-sup.exited:
		if sup.err != nil {
			b.Errorf("avenor stable exited with %v after a graceful shutdown", sup.err)
		}
	case <-time.After(stableShutdownWait):
		b.Fatalf("avenor stable still runs %v after a graceful shutdown", stableShutdownWait)
	}
	checkNoPlugins(b, plugins)

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	lat := make([]float64, 0, n)
	var toFork, fromFork []float64
	mu.Lock()
	for i := 0; i < n; i++ {
		label := "b" + strconv.Itoa(i)
		lat = append(lat, ms(first[label].Sub(starts[i])))
		if f, ok := forked[label]; ok {
			toFork = append(toFork, ms(f.Sub(starts[i])))
			fromFork = append(fromFork, ms(first[label].Sub(f)))
		}
	}
	nLagged := lagged
	mu.Unlock()
	sort.Float64s(lat)
	sort.Float64s(toFork)
	sort.Float64s(fromFork)
	return stableResult{
		hostRSS: hostRSS, hostPeak: hostPeak, hostParked: hostParked,
		running:   running,
		pluginRSS: rss / float64(max(running, 1)), pluginMaxRSS: maxRSS, pluginPSS: pss / float64(max(running, 1)),
		hostCPU: cpu1.host - cpu0.host, pluginCPU: cpu1.children - cpu0.children, window: window.Seconds(),
		p50: stablePercentile(lat, 0.50), p99: stablePercentile(lat, 0.99), spawnAll: spawnAll.Seconds(), lagged: nLagged,
		p99ToFork: stablePercentile(toFork, 0.99), p99FromFork: stablePercentile(fromFork, 0.99),
	}
}

// stableDeadlineFor bounds one iteration with n runtimes streaming a
// reply of words: stableDeadline, or stablePerRuntime each when that is
// longer (400 runtimes: 4 min), and the reply's streaming (echoWordPace a
// word) on top of stableDeadline when that is longer still.
func stableDeadlineFor(n, words int) time.Duration {
	return max(stableDeadline, time.Duration(n)*stablePerRuntime, stableDeadline+time.Duration(words)*echoWordPace)
}

// echoWordPace is the echo backend's pause between two chunks.
const echoWordPace = 20 * time.Millisecond

// checkStableEnds checks that every spawned runtime ended its turn and
// that its own event stream (the NDJSON file, which drops nothing, unlike
// a lagging subscriber) ends with session.end{end_turn}.
func checkStableEnds(b *testing.B, list []client.Runtime, ids []string) {
	b.Helper()
	byID := map[string]client.Runtime{}
	for _, rt := range list {
		byID[rt.RuntimeID] = rt
	}
	bad := 0
	for _, id := range ids {
		rt, ok := byID[id]
		var err error
		switch {
		case !ok:
			err = errors.New("missing from list")
		case rt.StopReason != "end_turn" || rt.ExitCode == nil || *rt.ExitCode != 0:
			err = fmt.Errorf("stop_reason %q exit %v, want end_turn and 0", rt.StopReason, rt.ExitCode)
		default:
			err = lastEventIsEnd(rt.EventPath)
		}
		if err != nil {
			bad++
			if bad <= 5 {
				b.Errorf("runtime %s: %v", id, err)
			}
		}
	}
	if bad > 5 {
		b.Errorf("… %d runtimes in all did not end cleanly", bad)
	}
}

// lastEventIsEnd reads an event log's last line: session.end{end_turn}.
func lastEventIsEnd(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading its event log: %w", err)
	}
	data = bytes.TrimRight(data, "\n")
	last := data[bytes.LastIndexByte(data, '\n')+1:]
	var e struct {
		Event      string `json:"event"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(last, &e); err != nil {
		return fmt.Errorf("event log %s: last line is not JSON: %v", path, err)
	}
	if e.Event != "session.end" || e.StopReason != "end_turn" {
		return fmt.Errorf("event log %s ends with %s{stop_reason:%q}, want session.end{end_turn}", path, e.Event, e.StopReason)
	}
	return nil
}

// checkNoPlugins fails the benchmark for every plugin process that is
// still alive (a zombie counts as gone) once the supervisor has exited, and
// kills it.
func checkNoPlugins(b *testing.B, plugins map[procID]bool) {
	b.Helper()
	if len(plugins) == 0 {
		b.Error("no plugin process was ever seen: the sampling is broken")
		return
	}
	var alive []procID
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive = alive[:0]
		for id := range plugins {
			if cur, ok := procIdentity(id.pid); ok && cur == id {
				alive = append(alive, id)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range alive {
		b.Errorf("plugin process %d outlived the supervisor's graceful shutdown", id.pid)
		_ = syscall.Kill(id.pid, syscall.SIGKILL)
	}
}

// childrenOf lists the living children of a process.
func childrenOf(pid int) []procID {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procID
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(child); err == nil && st.ppid == pid && st.state != "Z" && st.state != "X" {
			out = append(out, procID{child, st.start})
		}
	}
	return out
}

// procID is a pid with its start time, so that a reused pid is not taken
// for the process seen before.
type procID struct {
	pid   int
	start uint64
}

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	state                        string
	ppid                         int
	utime, stime, cutime, cstime uint64 // clock ticks
	start                        uint64
}

// parseProcStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("no ')' in %q", s)
	}
	f := strings.Fields(s[i+1:])
	// After ')': state(3) ppid(4) … utime(14) stime(15) cutime(16)
	// cstime(17) … starttime(22), here at index n-3.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("%d fields after the command name, want at least 20: %q", len(f), s)
	}
	num := func(k int) (uint64, error) {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("field %d %q is not a count: %q", k+3, f[k], s)
		}
		return uint64(v), nil
	}
	var st procStat
	st.state = f[0]
	ppid, err := num(1)
	if err != nil {
		return procStat{}, err
	}
	st.ppid = int(ppid)
	for k, dst := range map[int]*uint64{11: &st.utime, 12: &st.stime, 13: &st.cutime, 14: &st.cstime, 19: &st.start} {
		if *dst, err = num(k); err != nil {
			return procStat{}, err
		}
	}
	return st, nil
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

// procIdentity is the pid with its start time, if the process is alive
// (not a zombie).
func procIdentity(pid int) (procID, bool) {
	st, err := readProcStat(pid)
	if err != nil || st.state == "Z" || st.state == "X" {
		return procID{}, false
	}
	return procID{pid, st.start}, true
}

// cpuSample is CPU-seconds used so far by a supervisor itself and by its
// children, reaped (its cutime+cstime) and living (their own utime+stime).
type cpuSample struct{ host, children float64 }

// treeCPU samples the supervisor's and its children's CPU. A child reaped
// between reading the supervisor and scanning its children would be missed,
// so the sample is retried until the supervisor's cutime held still.
func treeCPU(hostPID int) (cpuSample, error) {
	for try := 0; ; try++ {
		before, err := readProcStat(hostPID)
		if err != nil {
			return cpuSample{}, fmt.Errorf("reading the supervisor's /proc stat: %w", err)
		}
		living := uint64(0)
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return cpuSample{}, err
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			st, err := readProcStat(pid)
			if err != nil || st.ppid != hostPID {
				continue
			}
			living += st.utime + st.stime
		}
		after, err := readProcStat(hostPID)
		if err != nil {
			return cpuSample{}, err
		}
		if after.cutime+after.cstime == before.cutime+before.cstime || try == 4 {
			return cpuSample{
				host:     float64(after.utime+after.stime) / clockTicks,
				children: float64(after.cutime+after.cstime+living) / clockTicks,
			}, nil
		}
	}
}

// percentile is the nearest-rank p-quantile of sorted values.
func stablePercentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// memOf reads a process's RSS and PSS in MB from /proc/<pid>/smaps_rollup.
func memOf(pid int) (rss, pss float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "Rss:":
			rss = kb / 1024
		case "Pss:":
			pss = kb / 1024
		}
	}
	return rss, pss
}

// peakRSS is a process's peak resident set (VmHWM) in MB.
func peakRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func stableTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func TestParseProcStat(t *testing.T) {
	// Field layout of proc(5); the values are distinct so a shifted index shows.
	const rest = " S 41 42 42 0 -1 4194560 10 0 0 0 1234 567 89 10 20 0 7 0 998877 1000 100"
	for _, tc := range []struct {
		name, in string
		want     procStat
		wantErr  bool
	}{
		{name: "plain", in: "123 (avenor)" + rest,
			want: procStat{state: "S", ppid: 41, utime: 1234, stime: 567, cutime: 89, cstime: 10, start: 998877}},
		{name: "spaces and parens in the command", in: "123 (avenor (x) y)" + rest,
			want: procStat{state: "S", ppid: 41, utime: 1234, stime: 567, cutime: 89, cstime: 10, start: 998877}},
		{name: "zombie", in: "9 (avenor-plugin-echo) Z" + rest[2:],
			want: procStat{state: "Z", ppid: 41, utime: 1234, stime: 567, cutime: 89, cstime: 10, start: 998877}},
		{name: "truncated", in: "123 (avenor) S 41 42", wantErr: true},
		{name: "no command", in: "123 avenor S 41", wantErr: true},
		{name: "not a number", in: "123 (avenor) S x" + rest[4:], wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseProcStat(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("parseProcStat(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestStablePercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		values []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []float64{7}, 0.99, 7},
		{"p50 of 100", hundred, 0.50, 50},
		{"p99 of 100", hundred, 0.99, 99},
		{"p99 of 200 is the 198th", append(append([]float64{}, hundred...), hundred...), 0.99, 99},
		{"p100", hundred, 1, 100},
		{"p0", hundred, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := append([]float64(nil), tc.values...)
			sort.Float64s(v)
			if got := stablePercentile(v, tc.p); got != tc.want {
				t.Errorf("stablePercentile(p=%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}
