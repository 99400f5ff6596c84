package hosttest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/sdk/agentproc"
)

// requireCurl skips a test whose tools connect with curl where it is
// missing (it fails under AVENOR_REQUIRE_SANDBOX).
func requireCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatal("AVENOR_REQUIRE_SANDBOX is set but curl is missing")
		}
		t.Skip("needs curl")
	}
}

// twoServers are an allowed and another loopback HTTP server, and their
// ports.
func twoServers(t *testing.T) (allowedPort, otherPort string) {
	t.Helper()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "allowed-ok") }))
	t.Cleanup(allowed.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other-reached") }))
	t.Cleanup(other.Close)
	_, allowedPort, _ = net.SplitHostPort(allowed.Listener.Addr().String())
	_, otherPort, _ = net.SplitHostPort(other.Listener.Addr().String())
	return allowedPort, otherPort
}

// toolOutputs are the rawOutput.output of every tool.call_update.
func toolOutputs(evs []event) []string {
	var out []string
	for _, ev := range only(evs, "tool.call_update") {
		raw, _ := ev["rawOutput"].(map[string]any)
		s, _ := raw["output"].(string)
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// TestSandboxNetworkAllow: under bubblewrap with --sandbox-network
// allow=127.0.0.1:P a tool reaches P at its own URL (through the
// forwarder) and through HTTP_PROXY; another loopback port is refused by
// the proxy — 403 and one avenor.sandbox.denied{op:connect,destination}
// however often it is tried — and unreachable directly; the turn
// completes, session.start names the network, and the proxy's directory
// is gone with the run. (Only this test starts proxies in this package.)
func TestSandboxNetworkAllow(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	requireCurl(t)
	w := newWorld(t)
	port, other := twoServers(t)
	curl := "toolsh curl -s --max-time 30 "
	script := curl + "--noproxy '*' http://127.0.0.1:" + port + "/\n" +
		curl + "http://127.0.0.1:" + port + "/\n" +
		curl + "-o /dev/null -w 'other=%{http_code}' http://127.0.0.1:" + other + "/\n" +
		curl + "-o /dev/null -w 'again=%{http_code}' http://127.0.0.1:" + other + "/\n" +
		curl + "--noproxy '*' http://127.0.0.1:" + other + "/ || echo direct-refused\n"
	before := map[string]bool{}
	for _, d := range proxyDirs() {
		before[d] = true
	}
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", script,
		"--sandbox", "read-only", "--sandbox-network", "allow=127.0.0.1:"+port, "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	want := []string{"allowed-ok", "allowed-ok", "other=403", "again=403", "direct-refused"}
	if got := toolOutputs(evs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("tool outputs %q; want %q", got, want)
	}
	denied := only(evs, "avenor.sandbox.denied")
	if len(denied) != 1 || denied[0].str("op") != "connect" || denied[0].str("destination") != "127.0.0.1:"+other {
		t.Fatalf("denied events %v; want one connect to 127.0.0.1:%s", denied, other)
	}
	start := only(evs, "session.start")
	sb, _ := start[0]["sandbox"].(map[string]any)
	if sb["network"] != "allow=127.0.0.1:"+port {
		t.Errorf("session.start sandbox %v; want network allow=127.0.0.1:%s", sb, port)
	}
	if end := only(evs, "session.end"); len(end) != 1 || end[0].str("stop_reason") != "end_turn" {
		t.Errorf("session.end %v; want the turn completed", end)
	}
	for _, d := range proxyDirs() {
		if !before[d] {
			t.Errorf("the proxy's directory %s outlived the run", d)
		}
	}
}

// proxyDirs are the filtering proxies' private directories now.
func proxyDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "avenor-net-*"))
	return dirs
}

// TestSandboxLandlockPortAllowList: with Landlock forced, allow=:P lets a
// tool connect to P and refuses another port.
func TestSandboxLandlockPortAllowList(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	requireCurl(t)
	if agentproc.LandlockABI() < agentproc.LandlockNetABI {
		t.Skipf("this kernel's Landlock ABI %d does not restrict TCP connect", agentproc.LandlockABI())
	}
	w := newWorld(t)
	port, other := twoServers(t)
	curl := "toolsh curl -s --max-time 30 --noproxy '*' "
	script := curl + "http://127.0.0.1:" + port + "/\n" + curl + "http://127.0.0.1:" + other + "/ || echo other-refused\n"
	evPath := w.path("events.ndjson")
	res := w.runEnv([]string{forceLandlock}, "--backend", "scripted", "--dir", w.work, "--prompt", script,
		"--sandbox", "read-only", "--sandbox-network", "allow=:"+port, "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	want := []string{"allowed-ok", "other-refused"}
	if got := toolOutputs(evs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("tool outputs %q; want %q", got, want)
	}
}

// latencyRequests is how many requests TestSandboxNetworkLatency times
// each way.
const latencyRequests = 50

// TestSandboxNetworkLatency logs what the forwarder and the filtering
// proxy add to one request to a loopback model endpoint: p50 and p99 of
// curl's time_total over latencyRequests requests, each on a new
// connection (the relay's set-up each time) and all on one kept
// connection (as a model client keeps it), without a sandbox and under
// --sandbox-network allow=127.0.0.1:P. It asserts nothing about time.
func TestSandboxNetworkLatency(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	requireCurl(t)
	port, _ := twoServers(t)
	fresh := fmt.Sprintf("toolsh for i in $(seq %d); do curl -s --max-time 30 --noproxy '*' -o /dev/null -w '%%{time_total}\\n' http://127.0.0.1:%s/; done\n", latencyRequests, port)
	kept := fmt.Sprintf("toolsh curl -s --max-time 60 --noproxy '*' -o /dev/null -w '%%{time_total}\\n' 'http://127.0.0.1:%s/[1-%d]'\n", port, latencyRequests)
	measure := func(loop string, args ...string) []float64 {
		w := newWorld(t)
		evPath := w.path("events.ndjson")
		res := w.run(append([]string{"--backend", "scripted", "--dir", w.work, "--prompt", loop, "--on-event", evPath}, args...)...)
		if res.code != 0 {
			t.Fatalf("run %v: %v", args, res)
		}
		outs := toolOutputs(readEvents(t, evPath))
		if len(outs) != 1 {
			t.Fatalf("tool outputs %q", outs)
		}
		var ms []float64
		for _, f := range strings.Fields(outs[0]) {
			var s float64
			if _, err := fmt.Sscan(f, &s); err != nil {
				t.Fatalf("time %q: %v", f, err)
			}
			ms = append(ms, s*1000)
		}
		if len(ms) != latencyRequests {
			t.Fatalf("%d times; want %d", len(ms), latencyRequests)
		}
		return ms
	}
	p := func(ms []float64, q float64) float64 {
		s := append([]float64(nil), ms...)
		slices.Sort(s)
		return s[int(q*float64(len(s)-1))]
	}
	for _, c := range []struct{ name, loop string }{{"new connection each", fresh}, {"one kept connection", kept}} {
		direct := measure(c.loop)
		proxied := measure(c.loop, "--sandbox", "read-only", "--sandbox-network", "allow=127.0.0.1:"+port)
		t.Logf("model request latency over %d requests, %s: direct p50 %.2fms p99 %.2fms; forwarder+proxy p50 %.2fms p99 %.2fms; added p50 %.2fms p99 %.2fms",
			latencyRequests, c.name, p(direct, .5), p(direct, .99), p(proxied, .5), p(proxied, .99), p(proxied, .5)-p(direct, .5), p(proxied, .99)-p(direct, .99))
	}
}

// TestStableSpawnSandboxNetwork: a spawn with sandbox_network allow=…
// gets the same boundary as avenor run: its tool reaches the allowed
// server, another port is one connect denial, session.start names it.
func TestStableSpawnSandboxNetwork(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	requireCurl(t)
	w := newWorld(t)
	port, other := twoServers(t)
	c := w.startStable("sandbox-network", nil).client()
	curl := "toolsh curl -s --max-time 30 "
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Sandbox: "read-only", SandboxNetwork: "allow=127.0.0.1:" + port,
		Prompt: curl + "--noproxy '*' http://127.0.0.1:" + port + "/\n" + curl + "-o /dev/null -w 'other=%{http_code}' http://127.0.0.1:" + other + "/\n"})
	rt := waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	evs := readEvents(t, rt.EventPath)
	if got := toolOutputs(evs); strings.Join(got, "|") != "allowed-ok|other=403" {
		t.Fatalf("tool outputs %q; want allowed-ok, other=403", got)
	}
	denied := only(evs, "avenor.sandbox.denied")
	if len(denied) != 1 || denied[0].str("destination") != "127.0.0.1:"+other {
		t.Fatalf("denied %v; want one connect to 127.0.0.1:%s", denied, other)
	}
	start := only(evs, "session.start")
	if sb, _ := start[0]["sandbox"].(map[string]any); sb["network"] != "allow=127.0.0.1:"+port {
		t.Errorf("session.start sandbox %v", start[0]["sandbox"])
	}
}
