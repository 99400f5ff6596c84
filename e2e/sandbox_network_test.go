//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// llmAllow is the allow-list entry of w's fake LLM: its loopback host:port.
func llmAllow(t *testing.T, w *world) string {
	t.Helper()
	u, err := url.Parse(w.llm.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// otherServer is a loopback HTTP server the runtime is not allowed; its
// host:port.
func otherServer(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other-reached") }))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// testSandboxNetworkAllow: under bubblewrap with --sandbox-network
// allow=<the fake LLM's host:port>, or model (the plugin reports the fake
// LLM's endpoint from the runtime's config), the runtime reaches its model
// at the URL it is configured with and the turn completes; its shell's connection
// to another loopback port (through the proxy variables) is refused and
// is one avenor.sandbox.denied{op:connect,destination}; the other server
// never answers it.
func testSandboxNetworkAllow(t *testing.T, rt *runtimeSpec, model bool) {
	w := newWorld(t, rt, fakellm.Config{})
	network := "allow=" + llmAllow(t, w)
	if model {
		network = "model"
	}
	w.env = append(w.env, "AVENOR_SANDBOX_MECHANISM=bubblewrap")
	other := otherServer(t)
	w.llm.SetScript(shellScript("curl -s --max-time 20 http://" + other + "/; echo; echo exit=$?"))
	run := w.startAvenor("run", "--prompt", "Fetch the other server.", "--auto-approve", "--sandbox", "workspace",
		"--sandbox-network", network)
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	// The runtime's own calls home (Codex asks github.com and
	// chatgpt.com) are refused too, each once: the other server's must be
	// among them, once.
	var to []string
	n := 0
	for _, ev := range only(evs, "avenor.sandbox.denied") {
		if ev.str("op") != "connect" {
			t.Errorf("denied %v; want op connect only", ev)
		}
		to = append(to, ev.str("destination"))
		if ev.str("destination") == other {
			n++
		}
	}
	t.Logf("connections refused: %v", to)
	if n != 1 {
		t.Errorf("connections refused %v; want %s once", to, other)
	}
	for _, ev := range only(evs, "tool.call_update") {
		raw, _ := ev["rawOutput"].(map[string]any)
		for _, v := range raw {
			if s, _ := v.(string); strings.Contains(s, "other-reached") {
				t.Errorf("the other server answered the sandboxed shell: %v", ev)
			}
		}
	}
}

// testSandboxNetworkNone: with --sandbox-network none the runtime cannot
// reach its model either, and the run ends within its deadline with the
// runtime's error reported. A runtime that fails the turn (OpenCode:
// "Cannot connect to API") ends it before the deadline, exit 1; one that
// waits for the network to come back (Codex: "Reconnecting... waiting for
// network", its own retries off) is ended by --timeout (waits: the
// deadline), its errors reported as they come.
func testSandboxNetworkNone(t *testing.T, rt *runtimeSpec, waits time.Duration) {
	w := newWorld(t, rt, fakellm.Config{})
	w.env = append(w.env, "AVENOR_SANDBOX_MECHANISM=bubblewrap")
	w.llm.SetScript(func(*fakellm.Request) fakellm.Reply { return fakellm.Text("DONE") })
	deadline := 150 * time.Second
	if waits > 0 {
		deadline = waits
	}
	start := time.Now()
	run := w.startAvenor("run", "--prompt", "Say DONE.", "--auto-approve", "--sandbox", "workspace", "--sandbox-network", "none",
		"--timeout", deadline.String())
	res, evs, s := run.finish()
	took := time.Since(start)
	if res.code == 0 || s.status == "DONE" {
		t.Fatalf("the turn completed without a network: %v, sentinel %q", res, s.raw)
	}
	if n := len(w.llm.MainRequests()); n != 0 {
		t.Errorf("the fake LLM got %d model requests from a runtime without a network", n)
	}
	var errs []string
	for _, ev := range only(evs, "avenor.error") {
		errs = append(errs, ev.str("message"))
	}
	t.Logf("network none: exit %d after %s, sentinel %q, errors %q", res.code, took.Round(time.Second), s.raw, errs)
	if len(errs) == 0 {
		t.Error("no avenor.error says why the turn failed")
	}
	timedOut := s.status == "TIMEOUT"
	switch {
	case waits == 0 && timedOut:
		t.Errorf("the run hung until its deadline instead of failing: %q", s.raw)
	case waits > 0 && !timedOut:
		t.Errorf("sentinel %q; want the deadline to end the runtime's wait for the network", s.raw)
	}
	if took > deadline+time.Minute {
		t.Errorf("the run took %s, past its deadline %s", took, deadline)
	}
}

// TestSandboxNetworkOpencode: real opencode-acp, offline (see
// testSandboxNetworkAllow and testSandboxNetworkNone).
func TestSandboxNetworkOpencode(t *testing.T) {
	t.Run("allow", func(t *testing.T) { testSandboxNetworkAllow(t, opencode, false) })
	t.Run("model", func(t *testing.T) { testSandboxNetworkAllow(t, opencode, true) })
	t.Run("none", func(t *testing.T) { testSandboxNetworkNone(t, opencode, 0) })
}

// TestSandboxNetworkCodex: real codex-app-server, offline (see
// testSandboxNetworkAllow and testSandboxNetworkNone).
func TestSandboxNetworkCodex(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	t.Run("allow", func(t *testing.T) { testSandboxNetworkAllow(t, codex, false) })
	t.Run("model", func(t *testing.T) { testSandboxNetworkAllow(t, codex, true) })
	t.Run("none", func(t *testing.T) { testSandboxNetworkNone(t, codex, 40*time.Second) })
}

// opencodeServerPort is where `opencode acp` serves its own HTTP API on
// the loopback and talks to itself: under Landlock, which shares the
// host's network and tells no loopback apart, a port allow-list must
// name it too (docs/sandbox.md#under-landlock-tcp-ports-only).
const opencodeServerPort = "4096"

// TestSandboxNetworkLandlockOpencode: real opencode-acp under Landlock
// with --sandbox-network allow=:<the fake LLM's port>,:4096: the turn
// completes against the fake LLM, and the shell's connection to another
// loopback port fails (Landlock refuses the TCP connect; nothing reports
// it).
func TestSandboxNetworkLandlockOpencode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{})
	w.env = append(w.env, "AVENOR_SANDBOX_MECHANISM=landlock")
	u, err := url.Parse(w.llm.URL)
	if err != nil {
		t.Fatal(err)
	}
	other := otherServer(t)
	w.llm.SetScript(shellScript("curl -s --max-time 20 --noproxy '*' http://" + other + "/ || echo other-refused"))
	run := w.startAvenor("run", "--prompt", "Fetch the other server.", "--auto-approve", "--sandbox", "workspace",
		"--sandbox-network", "allow=:"+u.Port()+",:"+opencodeServerPort)
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	saw := false
	for _, ev := range only(evs, "tool.call_update") {
		raw, _ := ev["rawOutput"].(map[string]any)
		for _, v := range raw {
			str, _ := v.(string)
			if strings.Contains(str, "other-reached") {
				t.Errorf("the other server answered under Landlock: %v", ev)
			}
			saw = saw || strings.Contains(str, "other-refused")
		}
	}
	if !saw {
		t.Errorf("no tool output says the connection was refused")
	}
}
