package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkStable100Echo: 100 echo runtimes spawned at once in one `avenor
// stable`, each streaming a long reply (~6 s of chunks paced 20 ms apart,
// like an agent). While all 100 run it samples the supervisor's RSS and
// every plugin process's RSS and PSS (PSS shares the plugin binary's pages
// among its 100 copies); it reports the latency from each spawn call to
// that runtime's first event on an all-runtime subscription.
func BenchmarkStable100Echo(b *testing.B) {
	benchStableN(b, 100, true)
}

// BenchmarkStableSpawnLatency: the same measures with 20 runtimes spawned
// one after the other: spawn-to-first-event without contention.
func BenchmarkStableSpawnLatency(b *testing.B) {
	benchStableN(b, 20, false)
}

func benchStableN(b *testing.B, n int, concurrent bool) {
	bin := avenorBinary(b)
	reply := strings.Repeat("word ", 300)
	for i := 0; i < b.N; i++ {
		root, err := os.MkdirTemp("", "avb")
		if err != nil {
			b.Fatal(err)
		}
		sock := filepath.Join(root, "s.sock")
		cmd := exec.Command(bin, "stable", "--control-socket", sock, "--max-runtimes", strconv.Itoa(n), "--max-tree-budget", strconv.Itoa(n))
		cmd.Dir = root
		cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root, "XDG_CONFIG_HOME=" + root + "/c", "XDG_STATE_HOME=" + root + "/s",
			"XDG_DATA_HOME=" + root + "/d", "AVENOR_PLUGIN_PATH=" + binDir, "PATH=/usr/bin:/bin"}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		res := benchStable(b, sock, cmd.Process.Pid, n, reply, concurrent)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(root)
		b.ReportMetric(res.hostRSS, "host-RSS-MB")
		b.ReportMetric(res.pluginRSS, "plugin-RSS-MB")
		b.ReportMetric(res.pluginPSS, "plugin-PSS-MB")
		b.ReportMetric(res.p50, "spawn-first-event-p50-ms")
		b.ReportMetric(res.p99, "spawn-first-event-p99-ms")
		b.ReportMetric(res.spawnAll, "spawn-all-s")
	}
}

type stableResult struct {
	hostRSS, pluginRSS, pluginPSS, p50, p99, spawnAll float64
}

func benchStable(b *testing.B, sock string, hostPID, n int, reply string, concurrent bool) stableResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	firstDone := make(chan struct{})
	go func() {
		for ev := range sub.C() {
			var e struct {
				Label string `json:"run_label"`
			}
			_ = ev.Decode(&e)
			mu.Lock()
			if _, ok := first[e.Label]; !ok && e.Label != "" {
				first[e.Label] = time.Now()
				if len(first) == n {
					close(firstDone)
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
				b.Error(err)
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
	select {
	case <-firstDone:
	case <-ctx.Done():
		b.Fatal("not every runtime sent an event")
	}

	// All 100 stream now: sample the processes.
	list, err := owner.List(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var rss, pss float64
	plugins := 0
	for _, rt := range list {
		if rt.Status != "running" || rt.PluginPID == 0 {
			continue
		}
		r, p := memOf(rt.PluginPID)
		rss += r
		pss += p
		plugins++
	}
	if plugins < n*9/10 {
		b.Fatalf("only %d of %d runtimes were running when sampled", plugins, n)
	}
	hostRSS, _ := memOf(hostPID)

	lat := make([]float64, 0, n)
	mu.Lock()
	for i := 0; i < n; i++ {
		lat = append(lat, float64(first["b"+strconv.Itoa(i)].Sub(starts[i]).Microseconds())/1000)
	}
	mu.Unlock()
	sort.Float64s(lat)
	return stableResult{
		hostRSS: hostRSS, pluginRSS: rss / float64(plugins), pluginPSS: pss / float64(plugins),
		p50: lat[n/2], p99: lat[n*99/100], spawnAll: spawnAll.Seconds(),
	}
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
