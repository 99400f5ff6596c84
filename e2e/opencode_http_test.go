//go:build e2e

package e2e

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// opencodeHTTP is OpenCode driven by the opencode-http backend: with no
// server URL the plugin starts its own `opencode serve` in the run's
// directory (docs/backends.md#opencode-http-plugin-opencode), with the same offline config as
// opencode-acp (real-runtimes.md, "opencode serve"). Its process must be
// gone with avenor's: checkNoLeftovers in every run sees to it.
var opencodeHTTP = &runtimeSpec{
	name: "opencode", backend: "opencode-http", model: "fake-model",
	bin: func() string { return bins.opencode },
	setup: func(w *world) {
		opencode.setup(w)
	},
}

// TestOpencodeHTTP drives the built avenor with --backend opencode-http
// and the real opencode through the harness scenarios.
func TestOpencodeHTTP(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-opencode")); err != nil {
		t.Fatalf("the opencode plugin is not built: %v", err)
	}
	rt := opencodeHTTP
	t.Run("allow/auto-approve", func(t *testing.T) { testAllowAuto(t, rt) })
	t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "allow") })
	t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "reject") })
	t.Run("cancel", func(t *testing.T) { testCancel(t, rt) })
	t.Run("resume", func(t *testing.T) { testResume(t, rt) })
	t.Run("drift", testOpencodeHTTPDrift)
	t.Run("external-server", testOpencodeHTTPExternal)
	t.Run("external-server/starting", testOpencodeHTTPServerStarting)
}

// testOpencodeHTTPServerStarting is the harness that runs
// `opencode serve --port P &` and avenor at once (as harnesses of the original do): avenor's first
// health check meets a server that does not listen yet, and must wait for
// it rather than fail.
func testOpencodeHTTPServerStarting(t *testing.T) {
	w := newWorld(t, opencodeHTTP, fakellm.Config{})
	const password = "e2e-secret"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	srv := exec.Command(bins.opencode, "serve", "--pure", "--hostname", "127.0.0.1", "--port", port)
	srv.Dir = w.work
	srv.Env = append(append([]string(nil), w.env...), "OPENCODE_SERVER_PASSWORD="+password)
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := srv.Start(); err != nil {
		t.Fatalf("starting opencode serve: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		_ = srv.Wait()
	})
	listening := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on ") {
				listening <- time.Now()
			}
		}
	}()
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve", "--server-url", "http://opencode:"+password+"@"+addr)
	avenorStarted := time.Now()
	res, evs, s := run.finish()
	select {
	case at := <-listening:
		t.Logf("opencode serve listened %v after its start; avenor started %v after it",
			at.Sub(started).Round(time.Millisecond), avenorStarted.Sub(started).Round(time.Millisecond))
		if !at.After(avenorStarted) {
			t.Errorf("opencode listened before avenor started: the test did not exercise the wait")
		}
	case <-time.After(time.Minute):
		t.Errorf("opencode serve did not say it was listening within a minute")
	}
	checkDone(t, "run", res, evs, s)
	checkOutFile(t, w, true)
	if !strings.Contains(finalText(evs), "DONE") {
		t.Errorf("final text %q, want DONE", finalText(evs))
	}
}

// testOpencodeHTTPExternal runs against an `opencode serve` the harness
// started itself, guarded by a password given as user:pass@ in
// --server-url: the plugin starts no server of its own.
func testOpencodeHTTPExternal(t *testing.T) {
	w := newWorld(t, opencodeHTTP, fakellm.Config{})
	const password = "e2e-secret"
	srv := exec.Command(bins.opencode, "serve", "--pure", "--hostname", "127.0.0.1", "--port", "0")
	srv.Dir = w.work
	srv.Env = append(append([]string(nil), w.env...), "OPENCODE_SERVER_PASSWORD="+password)
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("starting opencode serve: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		_ = srv.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "listening on "); ok {
				found <- strings.TrimSpace(u)
			}
		}
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(time.Minute):
		t.Fatal("opencode serve did not say it was listening within a minute")
	}
	authURL := strings.Replace(url, "http://", "http://opencode:"+password+"@", 1)
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve", "--server-url", authURL)
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkPermission(t, "run", evs, "allow", "avenor")
	checkOutFile(t, w, true)
	if !strings.Contains(finalText(evs), "DONE") {
		t.Errorf("final text %q, want DONE", finalText(evs))
	}
}

// testOpencodeHTTPDrift: session.end names the server's version and counts
// no unknown SSE event types against the pinned opencode.
func testOpencodeHTTPDrift(t *testing.T) {
	w := newWorld(t, opencodeHTTP, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	// Every word exactly once, and not the prompt's echo.
	var chunks strings.Builder
	for _, ev := range only(evs, "agent.message_chunk") {
		if c, ok := ev["content"].(map[string]any); ok {
			text, _ := c["text"].(string)
			chunks.WriteString(text)
		}
	}
	if chunks.String() != "DONE" {
		t.Errorf("agent.message_chunk text %q, want DONE", chunks.String())
	}
	end := evs[len(evs)-1]
	t.Logf("session.end drift fields: unknown_frames=%v runtime_version=%v", end["unknown_frames"], end["runtime_version"])
	if end.str("runtime_version") != "1.18.33" {
		t.Errorf("session.end runtime_version %q, want the pinned 1.18.33", end.str("runtime_version"))
	}
	if n, ok := end["unknown_frames"].(float64); !ok || n != 0 {
		t.Errorf("session.end unknown_frames = %v, want 0 against the pinned opencode", end["unknown_frames"])
	}
}
