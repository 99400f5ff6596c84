package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Bounds of BenchmarkStableMemorySlope.
const (
	// slopeMinRuntimes is the smallest size measured, and the base of
	// the p99 ratio.
	slopeMinRuntimes = 50
	// slopeDefaultMax is the largest size when AVENOR_BENCH_MAX_RUNTIMES
	// is unset.
	slopeDefaultMax = 400
	// slopeMaxRuntimes bounds AVENOR_BENCH_MAX_RUNTIMES: beyond it one
	// iteration takes more than 20 minutes (stableDeadlineFor).
	slopeMaxRuntimes = 2000
	// slopePluginMB is what one echo runtime is assumed to cost the
	// machine (its plugin's RSS, 15 MB measured, plus the supervisor's
	// share), to skip the sizes MemAvailable cannot hold.
	slopePluginMB = 16
	// slopeReserveMB is kept free beside them (the supervisor, the test
	// process, the other users of the machine).
	slopeReserveMB = 1024
	// slopeWordsPerRuntime sizes the echo reply to the largest size, so
	// that there every runtime still streams while the last ones spawn
	// (spawning is a CPU queue: 200 took up to 20 s on 2 busy cores; 5
	// words is 100 ms of streaming per runtime). Every size streams that
	// same reply: a reply that grew with the size (until 2026-12-04) made
	// each runtime hold more (its prompt and reply, 5 KB at 200) the more
	// runtimes ran, which the slope then counted as the supervisor's.
	slopeWordsPerRuntime = 5
)

// BenchmarkStableMemorySlope: the supervisor's memory per added runtime.
// n echo runtimes are spawned at once in one `avenor stable` (as
// BenchmarkStableEcho does), for n = 50, 100, 200, … doubling up to
// AVENOR_BENCH_MAX_RUNTIMES (default 400; that size itself is measured
// too), every runtime streaming the same reply at every size. A size the machine's memory cannot hold (MemAvailable against
// slopePluginMB per runtime) is skipped and said. It reports, per size,
// the supervisor's RSS while all stream, its peak (VmHWM) and its RSS
// once all are parked, the spawn → first event p99 split at the plugin
// process's start, and the CPU of the supervisor and of its plugins; then the slope of each memory figure over the
// sizes that ran (least squares, MB per added runtime) and
// p99(200)/p99(50) (the largest size that ran when 200 did not).
func BenchmarkStableMemorySlope(b *testing.B) {
	maxN, err := slopeMax(os.Getenv("AVENOR_BENCH_MAX_RUNTIMES"))
	if err != nil {
		b.Fatal(err)
	}
	bin := avenorBinary(b)
	// One reply for every size: the same work per runtime.
	reply := strings.Repeat("word ", max(stableReplyWords, maxN*slopeWordsPerRuntime))
	for i := 0; i < b.N; i++ {
		var ns, rss, peak, parked []float64
		p99 := map[int]float64{}
		for _, n := range slopeSizes(maxN) {
			if avail, ok := memAvailableMB(); ok {
				if need := float64(n*slopePluginMB + slopeReserveMB); need > avail {
					b.Logf("runtimes=%d skipped: needs ~%.0f MB (%d MB per runtime + %d MB), MemAvailable is %.0f MB",
						n, need, slopePluginMB, slopeReserveMB, avail)
					continue
				}
			}
			res := stableIteration(b, bin, n, reply, true)
			if b.Failed() {
				return
			}
			if res.running == 0 {
				b.Logf("runtimes=%d skipped: all had ended before the last one's first event (spawn → first event p99 %.0f ms, supervisor peak %.1f MB): this machine does not run that many at once",
					n, res.p99, res.hostPeak)
				continue
			}
			prefix := "n" + strconv.Itoa(n) + "-"
			if res.running < n*9/10 {
				// On a machine this busy the first runtimes end before the
				// last start: the size's other figures still hold.
				b.Logf("runtimes=%d: only %d were running when the supervisor's RSS was read: that figure is for them", n, res.running)
			}
			b.ReportMetric(float64(res.running), prefix+"running-when-sampled")
			b.Logf("runtimes=%d: supervisor RSS %.1f MB while all stream, peak %.1f MB, %.1f MB with all parked; spawn → first event p50 %.0f ms, p99 %.0f ms (p99 spawn → plugin process start %.0f ms, that start → first event %.0f ms); CPU of the supervisor %.0f %%, of the plugins %.0f %% of one core; %d lagged notices",
				n, res.hostRSS, res.hostPeak, res.hostParked, res.p50, res.p99, res.p99ToFork, res.p99FromFork, 100*res.hostCPU/res.window, 100*res.pluginCPU/res.window, res.lagged)
			b.ReportMetric(res.hostRSS, prefix+"host-RSS-MB")
			b.ReportMetric(res.hostPeak, prefix+"host-peak-MB")
			b.ReportMetric(res.hostParked, prefix+"host-parked-RSS-MB")
			b.ReportMetric(res.p99, prefix+"spawn-first-event-p99-ms")
			b.ReportMetric(100*res.hostCPU/res.window, prefix+"host-CPU-%core")
			b.ReportMetric(100*res.pluginCPU/res.window, prefix+"plugins-CPU-%core")
			ns = append(ns, float64(n))
			rss = append(rss, res.hostRSS)
			peak = append(peak, res.hostPeak)
			parked = append(parked, res.hostParked)
			p99[n] = res.p99
		}
		if len(ns) < 2 {
			b.Logf("fewer than two sizes ran (%v): no slope", ns)
			continue
		}
		b.ReportMetric(leastSquaresSlope(ns, rss), "RSS-slope-MB/runtime")
		b.ReportMetric(leastSquaresSlope(ns, peak), "peak-slope-MB/runtime")
		b.ReportMetric(leastSquaresSlope(ns, parked), "parked-RSS-slope-MB/runtime")
		top := 200
		if _, ok := p99[top]; !ok {
			top = int(ns[len(ns)-1])
		}
		if base := p99[slopeMinRuntimes]; base > 0 && top != slopeMinRuntimes {
			b.ReportMetric(p99[top]/base, "p99-ratio-"+strconv.Itoa(top)+"/"+strconv.Itoa(slopeMinRuntimes))
		}
	}
}

// slopeMax reads AVENOR_BENCH_MAX_RUNTIMES: empty means slopeDefaultMax.
func slopeMax(v string) (int, error) {
	if v == "" {
		return slopeDefaultMax, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > slopeMaxRuntimes {
		return 0, fmt.Errorf("AVENOR_BENCH_MAX_RUNTIMES=%q: want a number of runtimes from 1 to %d", v, slopeMaxRuntimes)
	}
	return n, nil
}

// slopeSizes is slopeMinRuntimes doubling up to maxN, then maxN itself
// when the doubling missed it; just maxN below slopeMinRuntimes.
func slopeSizes(maxN int) []int {
	if maxN < slopeMinRuntimes {
		return []int{maxN}
	}
	var sizes []int
	for n := slopeMinRuntimes; n <= maxN; n *= 2 {
		sizes = append(sizes, n)
	}
	if sizes[len(sizes)-1] != maxN {
		sizes = append(sizes, maxN)
	}
	return sizes
}

// leastSquaresSlope is the slope of the least-squares line through
// (x[i], y[i]); 0 when the x are all equal.
func leastSquaresSlope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(x))
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// memAvailableMB reads MemAvailable from /proc/meminfo, in MB.
func memAvailableMB() (float64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fields := strings.Fields(v)
			if len(fields) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseFloat(fields[0], 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

func TestSlopeSizes(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []int
	}{
		{400, []int{50, 100, 200, 400}},
		{100, []int{50, 100}},
		{300, []int{50, 100, 200, 300}},
		{50, []int{50}},
		{20, []int{20}},
		{1000, []int{50, 100, 200, 400, 800, 1000}},
	} {
		if got := slopeSizes(tc.max); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("slopeSizes(%d) = %v, want %v", tc.max, got, tc.want)
		}
	}
}

func TestSlopeMax(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", slopeDefaultMax, false},
		{"100", 100, false},
		{"1", 1, false},
		{strconv.Itoa(slopeMaxRuntimes), slopeMaxRuntimes, false},
		{strconv.Itoa(slopeMaxRuntimes + 1), 0, true},
		{"0", 0, true},
		{"-5", 0, true},
		{"many", 0, true},
	} {
		got, err := slopeMax(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("slopeMax(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestLeastSquaresSlope(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"a line", []float64{50, 100, 200, 400}, []float64{30, 45, 75, 135}, 0.3},
		{"flat", []float64{50, 100, 200}, []float64{40, 40, 40}, 0},
		{"points off the line", []float64{0, 1, 2}, []float64{0, 2, 2}, 1},
		{"one x", []float64{50, 50}, []float64{10, 20}, 0},
	} {
		if got := leastSquaresSlope(tc.x, tc.y); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: slope %v, want %v", tc.name, got, tc.want)
		}
	}
}
