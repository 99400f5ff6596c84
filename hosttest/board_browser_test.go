//go:build browser

package hosttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests (make e2e, build tag browser) drive `avenor board` in
// headless Chromium as a person would: they read the page, click its
// buttons, and check what reached the runtime's log.

// chromiumPath finds Debian's chromium (or another Chrome). Missing, the
// test skips loudly — unless AVENOR_REQUIRE_BROWSER is set (make e2e sets
// it, so CI cannot pass without running these).
func chromiumPath(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "!!! SKIP: no chromium on PATH (apt-get install chromium); the board's browser tests did NOT run"
	if os.Getenv("AVENOR_REQUIRE_BROWSER") != "" {
		t.Fatal(msg + " and AVENOR_REQUIRE_BROWSER is set")
	}
	t.Skip(msg)
	return ""
}

// newBrowser starts headless Chromium at a laptop's window size; the test
// ends it.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.WindowSize(1366, 820),
		chromedp.NoSandbox, // CI containers run as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// tab opens a new tab of the browser on url.
func tab(t testing.TB, browser context.Context, url string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	return ctx
}

// waitJS polls a JavaScript expression until it is true.
func waitJS(t testing.TB, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText.slice(0, 3000)`))
	t.Fatalf("page: %s not within %v; the page shows:\n%s", what, d, html)
}

func click(t testing.TB, ctx context.Context, sel string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// The page re-renders a card as events arrive: a node found for the
	// click may be replaced before the click lands (CDP: "Could not find
	// node with given id"). Find it again then, until the deadline.
	for {
		err := chromedp.Do(cctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || cctx.Err() != nil {
			t.Fatalf("clicking %s: %v", sel, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenshot saves the whole page into the test's temp dir, checks it is
// a non-empty PNG, and returns its path.
func screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, not a PNG of the page", name, len(png))
	}
	p := filepath.Join(t.TempDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	// AVENOR_BOARD_SHOTS keeps a copy of every screenshot, for a person.
	if dir := os.Getenv("AVENOR_BOARD_SHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func rowSel(id string) string { return fmt.Sprintf(`tr.rt[data-runtime=%q]`, id) }

// TestBrowserBoard: a stable supervisor with 20 scripted runtimes; the page
// lists them all, shows a runtime's streamed text, answers a permission
// with the allow button (permission.response source "board", the turn
// completes), cancels a run with the cancel button, and — on a board
// without --allow-mutations — shows no buttons and refuses the POSTs.
func TestBrowserBoard(t *testing.T) {
	w := newWorld(t)
	scripts := []string{
		"say \"streaming-begins \"\nchunks 5 every=100ms text=\"part \"\nsay END-OF-STREAM",
		"say before the gate\npermission tool=bash question=\"Run ls -la?\"\nsay after-permission",
		"say a long job\nsleep 120s",
		"permission tool=edit question=\"Edit main.go?\"\nsay edited",
	}
	for i := len(scripts); i < 20; i++ {
		scripts = append(scripts, fmt.Sprintf("say agent %d is done\nusage in=%d out=%d", i+1, 100*(i+1), 10*(i+1)))
	}
	f := w.startBoardFleet("fleet", scripts...)
	b := w.startBoardProc("tok-browser", "--allow-mutations")
	browser := newBrowser(t)
	page := tab(t, browser, b.url+"?token="+b.token)

	t.Run("lists the runtimes", func(t *testing.T) {
		waitJS(t, page, 20*time.Second, "20 runtime rows", `document.querySelectorAll("tr.rt").length === 20`)
		waitJS(t, page, 20*time.Second, "the permission runtimes marked waiting",
			fmt.Sprintf(`[%q, %q].every(id => document.querySelector('tr.rt[data-runtime="'+id+'"] .waiting').textContent.includes("waiting for you"))`, f.ids[1], f.ids[3]))
		waitJS(t, page, 20*time.Second, "a finished runtime's tokens", fmt.Sprintf(`document.querySelector('tr.rt[data-runtime=%q]').children[5].textContent === "550"`, f.ids[4]))
		url, _ := chromedp.Run(page, chromedp.Evaluate[string](`location.href`))
		if strings.Contains(url, "token") {
			t.Errorf("the token stayed in the address bar: %s", url)
		}
		screenshot(t, page, "list")
	})

	t.Run("streamed text appears", func(t *testing.T) {
		click(t, page, rowSel(f.ids[0]))
		waitJS(t, page, 20*time.Second, "the merged streamed text",
			`(document.querySelector("#transcript .msg")||{}).textContent === "streaming-begins part part part part part END-OF-STREAM"`)
		screenshot(t, page, "stream")
	})

	t.Run("allow answers the permission", func(t *testing.T) {
		click(t, page, rowSel(f.ids[1]))
		waitJS(t, page, 20*time.Second, "the permission card", `!document.getElementById("permission").hidden && document.getElementById("perm-question").textContent === "Run ls -la?"`)
		keep := screenshot(t, page, "permission")
		if dst := os.Getenv("AVENOR_BOARD_SCREENSHOT"); dst != "" {
			png, _ := os.ReadFile(keep)
			if err := os.WriteFile(dst, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		click(t, page, `#perm-options button[data-option="allow"]`)
		resp := waitEvent(t, f.events[1], 20*time.Second, "permission.response", func(ev event) bool { return ev.name() == "permission.response" })
		if resp.str("source") != "board" || resp.str("option_id") != "allow" {
			t.Fatalf("permission.response %v; want source board, option allow", resp)
		}
		waitEvent(t, f.events[1], 20*time.Second, "the turn's session.end", func(ev event) bool {
			return ev.name() == "session.end" && ev.str("stop_reason") == "end_turn" && strings.HasSuffix(ev.str("final_output"), "after-permission")
		})
		waitJS(t, page, 20*time.Second, "the card gone and the decision shown",
			`document.getElementById("permission").hidden && document.getElementById("transcript").textContent.includes("permission allow (allow) by board")`)
		screenshot(t, page, "answered")
	})

	t.Run("cancel cancels", func(t *testing.T) {
		click(t, page, rowSel(f.ids[2]))
		waitJS(t, page, 20*time.Second, "the long job's text", `document.getElementById("transcript").textContent.includes("a long job")`)
		click(t, page, "#cancel")
		waitJS(t, page, 5*time.Second, "the cancel button armed", `document.getElementById("cancel").textContent === "Confirm cancel"`)
		click(t, page, "#cancel")
		waitEvent(t, f.events[2], 20*time.Second, "session.end cancelled", func(ev event) bool {
			return ev.name() == "session.end" && ev.str("stop_reason") == "cancelled"
		})
		waitJS(t, page, 20*time.Second, "the end in the transcript", `document.getElementById("transcript").textContent.includes("turn ended: cancelled")`)
		screenshot(t, page, "cancelled")
	})

	t.Run("read-only board has no buttons and refuses POSTs", func(t *testing.T) {
		ro := w.startBoardProc("tok-ro", "--socket", f.sock)
		rpage := tab(t, browser, ro.url+"?token="+ro.token)
		waitJS(t, rpage, 20*time.Second, "20 runtime rows", `document.querySelectorAll("tr.rt").length === 20`)
		click(t, rpage, rowSel(f.ids[3]))
		waitJS(t, rpage, 20*time.Second, "the read-only permission card",
			`!document.getElementById("permission").hidden && !document.getElementById("perm-readonly").hidden`)
		counts, err := chromedp.Run(rpage, chromedp.Evaluate[[]int](`[document.querySelectorAll("#perm-options button").length,
			document.getElementById("cancel").hidden ? 0 : 1, document.getElementById("prompt-form").hidden ? 0 : 1]`))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(counts) != "[0 0 0]" {
			t.Fatalf("read-only page shows [answer buttons, cancel, prompt] = %v; want none", counts)
		}
		// The page's own origin and token, as a person at the console would.
		js := fmt.Sprintf(`Promise.all(["answer","cancel","prompt"].map(r => fetch("/api/"+r, {method:"POST",
			headers:{"Authorization":"Bearer %s","Content-Type":"application/json"},
			body: JSON.stringify({socket:%q, runtime_id:%q, request_id:"x", option_id:"allow", text:"hi"})}).then(r => r.status)))`,
			ro.token, f.sock, f.ids[3])
		statuses, err := chromedp.Run(rpage, chromedp.Evaluate[[]int](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(statuses) != "[403 403 403]" {
			t.Fatalf("read-only POSTs from the page: %v; want 403 each", statuses)
		}
		for _, ev := range readEventsQuiet(f.events[3]) {
			if ev.name() == "permission.response" || ev.name() == "session.end" {
				t.Fatalf("a refused POST reached the runtime: %v", ev)
			}
		}
		screenshot(t, rpage, "read-only")
	})
}

// TestBrowserBoardOutcomes: what a person reads off the page after runs
// ended — a failed run is marked apart from one that ended well, a
// follow-up counts as the runtime's next turn and adds its tokens to the
// total, Cancel shows only on a running runtime, tokens and cost stay in
// sight beside the runtime view, a page without the token says "token
// required" — and a person's answer on the board leaves the harness in
// control: `avenor control shutdown` still works.
func TestBrowserBoardOutcomes(t *testing.T) {
	w := newWorld(t)
	f := w.startBoardFleet("outcomes",
		"say all went well\nusage in=2000 out=503",
		"say trying\nfail the model endpoint broke",
		"say a long job\nsleep 120s",
		"permission tool=bash question=\"Run make?\"\nsay answered",
	)
	b := w.startBoardProc("tok-outcomes", "--allow-mutations")
	browser := newBrowser(t)
	page := tab(t, browser, b.url+"?token="+b.token)
	waitJS(t, page, 20*time.Second, "4 runtime rows", `document.querySelectorAll("tr.rt").length === 4`)
	waitEvent(t, f.events[1], 20*time.Second, "the failed turn's end", func(ev event) bool { return ev.name() == "session.end" })
	waitEvent(t, f.events[0], 20*time.Second, "the good turn's end", func(ev event) bool { return ev.name() == "session.end" })
	statusOf := func(i int) string {
		return fmt.Sprintf(`document.querySelector('tr.rt[data-runtime=%q]').children[1]`, f.ids[i])
	}

	t.Run("a failed run is marked apart from a good one", func(t *testing.T) {
		waitJS(t, page, 20*time.Second, "the failed row marked",
			fmt.Sprintf(`document.querySelector('tr.rt[data-runtime=%q]').classList.contains("failed") && %s.textContent.startsWith("\u2717")`, f.ids[1], statusOf(1)))
		waitJS(t, page, 20*time.Second, "the good row marked ok",
			fmt.Sprintf(`!document.querySelector('tr.rt[data-runtime=%q]').classList.contains("failed") && %s.textContent.startsWith("\u2713")`, f.ids[0], statusOf(0)))
		colours, err := chromedp.Run(page, chromedp.Evaluate[[]string](fmt.Sprintf(`[getComputedStyle(%s).color, getComputedStyle(%s).color]`, statusOf(0), statusOf(1))))
		if err != nil {
			t.Fatal(err)
		}
		if colours[0] == colours[1] {
			t.Fatalf("a failed and a good run are the same colour: %v", colours)
		}
		screenshot(t, page, "outcome-failed-vs-ok")
	})

	t.Run("cancel only on a running runtime", func(t *testing.T) {
		click(t, page, rowSel(f.ids[0]))
		waitJS(t, page, 20*time.Second, "the ended runtime's view without Cancel",
			`document.getElementById("view-title").textContent === "agent-01" && document.getElementById("cancel").hidden`)
		screenshot(t, page, "cancel-hidden-ended")
		click(t, page, rowSel(f.ids[2]))
		waitJS(t, page, 20*time.Second, "the running runtime's view with Cancel",
			`document.getElementById("view-title").textContent === "agent-03" && !document.getElementById("cancel").hidden`)
	})

	t.Run("tokens and cost in sight beside the view", func(t *testing.T) {
		click(t, page, rowSel(f.ids[0]))
		waitJS(t, page, 20*time.Second, "the view open", `!document.getElementById("view-pane").hidden`)
		js := fmt.Sprintf(`(() => {
			const pane = document.getElementById("list-pane").getBoundingClientRect();
			const row = document.querySelector('tr.rt[data-runtime=%q]');
			return [row.children[5], row.children[6], document.querySelector("#runtimes th.num:last-child")].every(c => {
				const r = c.getBoundingClientRect();
				return r.width > 0 && r.right <= pane.right + 1 && r.left >= pane.left;
			});
		})()`, f.ids[0])
		waitJS(t, page, 20*time.Second, "the tokens and cost cells inside the list pane", js)
		screenshot(t, page, "columns-beside-view")
	})

	t.Run("a follow-up is the next turn and adds its tokens", func(t *testing.T) {
		click(t, page, rowSel(f.ids[0]))
		waitJS(t, page, 20*time.Second, "the first turn and its tokens",
			`document.getElementById("transcript").textContent.includes("turn 1") && document.getElementById("summary").textContent.includes("2503 tokens")`)
		if _, err := chromedp.Run(page, chromedp.Evaluate[bool](`(() => { document.getElementById("prompt").value = "say second turn\nusage in=100 out=51"; return true; })()`)); err != nil {
			t.Fatal(err)
		}
		click(t, page, `#prompt-form button[type="submit"]`)
		waitEvent(t, f.events[0], 20*time.Second, "the follow-up's end", func(ev event) bool {
			return ev.name() == "session.end" && strings.Contains(ev.str("final_output"), "second turn")
		})
		waitJS(t, page, 20*time.Second, "turn 2 in the transcript", `document.getElementById("transcript").textContent.includes("turn 2")`)
		waitJS(t, page, 30*time.Second, "the header total and the row with both turns' tokens",
			fmt.Sprintf(`document.getElementById("summary").textContent.includes("2654 tokens") && document.querySelector('tr.rt[data-runtime=%q]').children[5].textContent === "2654"`, f.ids[0]))
		screenshot(t, page, "follow-up-turn-2-tokens")
	})

	t.Run("no token says token required", func(t *testing.T) {
		for name, u := range map[string]string{"token-required-none": b.url, "token-required-wrong": b.url + "?token=wrong"} {
			p := tab(t, browser, u)
			waitJS(t, p, 20*time.Second, "the token message", `document.getElementById("conn").textContent === "token required"`)
			screenshot(t, p, name)
		}
	})

	t.Run("harness shutdown still works after a board answer", func(t *testing.T) {
		click(t, page, rowSel(f.ids[3]))
		waitJS(t, page, 20*time.Second, "the permission card", `!document.getElementById("permission").hidden && document.getElementById("perm-question").textContent === "Run make?"`)
		click(t, page, `#perm-options button[data-option="allow"]`)
		resp := waitEvent(t, f.events[3], 20*time.Second, "permission.response", func(ev event) bool { return ev.name() == "permission.response" })
		if resp.str("source") != "board" {
			t.Fatalf("permission.response %v; want source board", resp)
		}
		waitJS(t, page, 20*time.Second, "the answer shown", `document.getElementById("transcript").textContent.includes("by board")`)
		screenshot(t, page, "answered-then-harness-shutdown")
		r := w.run("control", "--socket", f.sock, "shutdown")
		if r.code != 0 || !strings.Contains(r.stdout, "shutting down") {
			t.Fatalf("harness shutdown after a board answer: %v", r)
		}
		f.sup.wait()
	})
}
