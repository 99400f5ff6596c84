package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/avenor-go/avenor/client"
)

// Bounds of the board benchmarks.
const (
	// boardEvents is how many streamed chunks the event→DOM case times.
	boardEvents = 200
	// boardRuntimes is how many runtimes the list case shows.
	boardRuntimes = 200
	// boardDeadline bounds one board benchmark, supervisor to shutdown.
	boardDeadline = 3 * time.Minute
)

// boardWorld is a supervisor, a read-only `avenor board` over its socket
// and a headless Chromium, all in one temp root.
type boardWorld struct {
	root, sock, url string
	ctx             context.Context // the browser's
}

func startBoardWorld(b *testing.B, maxRuntimes int) *boardWorld {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		b.Skip("!!! SKIP: no chromium on PATH (apt-get install chromium); the board benchmarks did NOT run")
	}
	bin := avenorBinary(b)
	root, err := os.MkdirTemp("", "avbb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	w := &boardWorld{root: root, sock: filepath.Join(root, "s.sock")}
	env := []string{"HOME=" + root, "TMPDIR=" + root, "XDG_CONFIG_HOME=" + root + "/c", "XDG_STATE_HOME=" + root + "/s",
		"XDG_DATA_HOME=" + root + "/d", "AVENOR_PLUGIN_PATH=" + binDir, "PATH=/usr/bin:/bin"}
	ctx, cancel := context.WithTimeout(context.Background(), boardDeadline)
	b.Cleanup(cancel)
	n := strconv.Itoa(maxRuntimes)
	sup := exec.CommandContext(ctx, bin, "stable", "--control-socket", w.sock, "--max-runtimes", n, "--max-tree-budget", n)
	sup.Dir, sup.Env = root, env
	if err := sup.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sup.Process.Kill(); _ = sup.Wait() })
	board := exec.CommandContext(ctx, bin, "board", "--no-open", "--socket", w.sock, "--token", "bench")
	board.Dir, board.Env = root, env
	out, err := board.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := board.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = board.Process.Kill(); _ = board.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "avenor board: serving ") {
		b.Fatalf("avenor board said %q: %v", line, err)
	}
	// The printed address carries the token (?token=bench) already.
	w.url = strings.TrimSpace(strings.TrimPrefix(line, "avenor board: serving "))
	// The browser lives within the same deadline as the supervisor and the
	// board: a page that never shows what a step waits for fails the
	// benchmark when they are gone, instead of waiting on it forever.
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.WindowSize(1366, 820), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true))...)
	bctx, bcancel := chromedp.NewContext(actx)
	b.Cleanup(func() { bcancel(); acancel() })
	if err := chromedp.Do(bctx); err != nil {
		b.Fatalf("starting chromium: %v", err)
	}
	w.ctx = bctx
	return w
}

// dial connects to the supervisor once it listens.
func (w *boardWorld) dial(b *testing.B) *client.Client {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := client.Dial(context.Background(), w.sock)
		if err == nil {
			b.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// open loads the page and waits until its first list is rendered.
func (w *boardWorld) open(b *testing.B) {
	tctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(w.url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		b.Fatalf("opening the board: %v", err)
	}
}

func (w *boardWorld) waitJS(b *testing.B, d time.Duration, what, expr string) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(w.ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("page: %s not within %v", what, d)
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

// BenchmarkBoardEventToDOM: one runtime streams 200 chunks 20 ms apart; for
// each, the time from the event's ts (stamped when the runtime's event was
// written) to the moment its text is in the open runtime view's DOM (a
// MutationObserver in the page, same clock), p50 and p95. The path is
// runtime → supervisor → control subscription → board → SSE → EventSource →
// transcript.
func BenchmarkBoardEventToDOM(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w := startBoardWorld(b, 16)
		c := w.dial(b)
		ev := filepath.Join(w.root, "rt.ndjson")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Prompt: "say ready", Dir: w.root, OnEvent: ev, Label: "streamer"})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		w.open(b)
		row := fmt.Sprintf(`tr.rt[data-runtime=%q]`, sp.RuntimeID)
		if err := chromedp.Do(w.ctx, chromedp.WaitVisible(chromedp.CSS(row)), chromedp.Click(chromedp.CSS(row))); err != nil {
			b.Fatal(err)
		}
		w.waitJS(b, 30*time.Second, "the first turn in the view", `document.getElementById("transcript").textContent.includes("ready")`)
		if _, err := chromedp.Run(w.ctx, chromedp.Evaluate[chromedp.Void](`window.__seen = {};
			(() => { const t = document.getElementById("transcript");
			  new MutationObserver(() => { const now = Date.now();
			    for (const m of t.textContent.matchAll(/chunk (\d+)/g)) if (!(m[1] in window.__seen)) window.__seen[m[1]] = now; })
			  .observe(t, {subtree: true, childList: true, characterData: true}); })()`)); err != nil {
			b.Fatal(err)
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = c.Prompt(pctx, fmt.Sprintf("chunks %d every=20ms", boardEvents), sp.RuntimeID)
		pcancel()
		if err != nil {
			b.Fatal(err)
		}
		w.waitJS(b, time.Minute, "every chunk in the DOM", fmt.Sprintf(`Object.keys(window.__seen).length >= %d`, boardEvents))
		seen, err := chromedp.Run(w.ctx, chromedp.Evaluate[map[string]float64](`window.__seen`))
		if err != nil {
			b.Fatal(err)
		}
		var lat []float64
		data, err := os.ReadFile(ev)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var e struct {
				Event   string  `json:"event"`
				TS      float64 `json:"ts"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if json.Unmarshal([]byte(line), &e) != nil || e.Event != "agent.message_chunk" {
				continue
			}
			var n int
			if _, err := fmt.Sscanf(e.Content.Text, "chunk %d", &n); err != nil {
				continue
			}
			if at, ok := seen[strconv.Itoa(n)]; ok {
				lat = append(lat, at-e.TS)
			}
		}
		if len(lat) != boardEvents {
			b.Fatalf("matched %d of %d chunks between the log and the page", len(lat), boardEvents)
		}
		sort.Float64s(lat)
		b.ReportMetric(percentile(lat, 0.50), "event-to-DOM-p50-ms")
		b.ReportMetric(percentile(lat, 0.95), "event-to-DOM-p95-ms")
		b.ReportMetric(lat[len(lat)-1], "event-to-DOM-max-ms")
	}
}

// BenchmarkBoardList200: 200 runtimes in one supervisor. It reports how
// long the page takes from navigation to listing all 200, one refresh
// cycle (sockets + list + render) once they are listed, and the page's JS
// heap, and checks every row is there.
func BenchmarkBoardList200(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w := startBoardWorld(b, boardRuntimes)
		c := w.dial(b)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		for j := 0; j < boardRuntimes; j++ {
			if _, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Prompt: fmt.Sprintf("say runtime %d\nusage in=%d out=1", j, j), Dir: w.root, Label: fmt.Sprintf("agent-%03d", j)}); err != nil {
				cancel()
				b.Fatal(err)
			}
		}
		cancel()
		start := time.Now()
		w.open(b)
		w.waitJS(b, time.Minute, "200 rows", fmt.Sprintf(`document.querySelectorAll("tr.rt").length === %d`, boardRuntimes))
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "load-to-200-rows-ms")
		var cycles []float64
		for k := 0; k < 10; k++ {
			ms, err := chromedp.Run(w.ctx, chromedp.Evaluate[float64](`(async () => { const t = performance.now(); await refresh(); return performance.now() - t; })()`, chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			cycles = append(cycles, ms)
		}
		sort.Float64s(cycles)
		b.ReportMetric(percentile(cycles, 0.5), "refresh-p50-ms")
		b.ReportMetric(cycles[len(cycles)-1], "refresh-max-ms")
		heap, err := chromedp.Run(w.ctx, chromedp.Evaluate[float64](`performance.memory ? performance.memory.usedJSHeapSize / 1048576 : 0`))
		if err == nil {
			b.ReportMetric(heap, "page-JS-heap-MB")
		}
	}
}
