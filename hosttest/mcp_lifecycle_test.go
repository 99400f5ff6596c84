package hosttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestMCPHTTPSecurity: no token or a wrong one is a 401 with
// WWW-Authenticate: Bearer; a non-loopback Host or browser Origin is
// refused unless allow-listed; the token appears in no log and not in the
// autostarted supervisor's environment.
func TestMCPHTTPSecurity(t *testing.T) {
	w, sock := mcpWorld(t)
	const token = "tok-9f8e7d6c5b4a"
	base, stderr := startMCPHTTP(t, w, sock, token, "--allowed-host", "box.tailnet")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(auth, host, origin string) (int, http.Header, string) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, c := range []struct {
		name, auth, host, origin string
		want                     int
	}{
		{"no token", "", "", "", 401},
		{"wrong token", "Bearer tok-wrong", "", "", 401},
		{"token as basic auth", "Basic " + token, "", "", 401},
		{"a longer token", "Bearer " + token + "x", "", "", 401},
		{"right token", "Bearer " + token, "", "", 200},
		{"lowercase scheme", "bearer " + token, "", "", 200},
		{"non-loopback host", "Bearer " + token, "evil.example.com", "", 403},
		{"rebinding host with loopback port", "Bearer " + token, "evil.example.com:3748", "", 403},
		{"allow-listed host", "Bearer " + token, "box.tailnet:3748", "", 200},
		{"localhost host", "Bearer " + token, "localhost:3748", "", 200},
		{"foreign browser origin", "Bearer " + token, "", "https://evil.example.com", 403},
		{"look-alike origin", "Bearer " + token, "", "http://locаlhost:3000", 403},
		{"loopback origin", "Bearer " + token, "", "http://localhost:5173", 200},
		{"allow-listed origin", "Bearer " + token, "", "https://box.tailnet", 200},
		{"null origin", "Bearer " + token, "", "null", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := post(c.auth, c.host, c.origin)
			if code != c.want {
				t.Fatalf("status %d, want %d: %s", code, c.want, body)
			}
			if code == 401 && h.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("401 without WWW-Authenticate: Bearer: %v", h)
			}
			if strings.Contains(body, token) {
				t.Errorf("the reply holds the token: %s", body)
			}
		})
	}
	// A tool call autostarts the supervisor; the token must not reach it.
	cs := connectHTTP(t, base, token)
	out, isErr, text := callTool(t, cs, "avenor_status", map[string]any{})
	if isErr {
		t.Fatalf("status: %s", text)
	}
	_ = out
	c, err := client.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		PID int `json:"supervisor_pid"`
	}
	if err := c.Call(context.Background(), "status", map[string]any{}, &st); err != nil {
		t.Fatal(err)
	}
	c.Close()
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.PID))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte(token)) {
		t.Error("the autostarted supervisor's environment holds the token")
	}
	callTool(t, cs, "avenor_shutdown", map[string]any{})
	assertSupervisorGone(t, sock)
	logs := stderr.String()
	filepath.WalkDir(w.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				logs += string(b)
			}
		}
		return nil
	})
	if strings.Contains(logs, token) {
		t.Error("the token is in a log or a file under the test's root")
	}
}

// TestMCPAutostart: the first tool call starts `avenor stable` at the
// default socket (~/.avenor/sockets/avenor-mcp-<pid>.sock); a second
// server at the same socket attaches to it instead of starting another;
// avenor_shutdown retires it and the next call starts a new one; a
// supervisor that dies is started anew; nothing is left running.
func TestMCPAutostart(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(bins.avenor, "mcp")
	cmd.Env, cmd.Dir = w.env, w.work
	m := startMCPCmd(t, w, cmd)
	out := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "hi"})
	want := filepath.Join(w.home, ".avenor", "sockets", fmt.Sprintf("avenor-mcp-%d.sock", m.cmd.Process.Pid))
	if out["supervisor_id"] != want {
		t.Fatalf("supervisor_id %v, want the default socket %s", out["supervisor_id"], want)
	}
	pid1 := supervisorPID(t, want)
	// A second server with --control-socket at the same path attaches.
	m2 := startMCP(t, w, want)
	st := m2.call("avenor_status", map[string]any{"run_id": out["run_id"].(string)})
	if st["status"] == nil || supervisorPID(t, want) != pid1 {
		t.Fatalf("second server: %v (supervisor %d, was %d)", st, supervisorPID(t, want), pid1)
	}
	m2.cs.Close()
	m.call("avenor_result", map[string]any{"run_id": out["run_id"].(string), "timeout": "30s"})
	m.call("avenor_shutdown", map[string]any{})
	waitGone(t, pid1)
	// The next call autostarts anew.
	m.call("avenor_status", map[string]any{})
	pid2 := supervisorPID(t, want)
	if pid2 == pid1 {
		t.Fatal("no new supervisor after avenor_shutdown")
	}
	// A supervisor that dies is started anew by the next call.
	_ = syscall.Kill(pid2, syscall.SIGKILL)
	waitGone(t, pid2)
	m.call("avenor_status", map[string]any{})
	pid3 := supervisorPID(t, want)
	if pid3 == pid2 {
		t.Fatal("no new supervisor after the last one died")
	}
	m.call("avenor_shutdown", map[string]any{})
	waitGone(t, pid3)
}

// TestMCPSupervisorSocketRedial: with --supervisor-socket nothing is
// autostarted (a call says how to start one), and a supervisor restarted
// at the socket is dialled again.
func TestMCPSupervisorSocketRedial(t *testing.T) {
	w, sock := mcpWorld(t)
	cmd := exec.Command(bins.avenor, "mcp", "--supervisor-socket", sock, "--no-autostart")
	cmd.Env, cmd.Dir = w.env, w.work
	m := startMCPCmd(t, w, cmd)
	if msg := m.callErr("avenor_status", map[string]any{}); !strings.Contains(msg, "avenor stable --control-socket "+sock) {
		t.Errorf("no supervisor: %q", msg)
	}
	startStable := func() *exec.Cmd {
		s := exec.Command(bins.avenor, "stable", "--control-socket", sock)
		s.Env, s.Dir = w.env, w.work
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Process.Kill(); _ = s.Wait() })
		waitSocket(t, sock)
		return s
	}
	s1 := startStable()
	m.call("avenor_status", map[string]any{})
	_ = s1.Process.Signal(syscall.SIGTERM)
	_ = s1.Wait()
	s2 := startStable()
	out := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": "after redial"})
	res := m.call("avenor_result", map[string]any{"run_id": out["run_id"].(string), "timeout": "30s"})
	if res["output"] != "echo (turn 1): after redial" {
		t.Errorf("result after a re-dial: %v", res)
	}
	m.call("avenor_shutdown", map[string]any{})
	_ = s2.Wait()
}

// TestMCPRestartFindsRuns: `avenor mcp` killed mid-run and started again
// (at the same socket, and once more with a fresh default socket) finds
// the run through the registry: avenor_status, avenor_events,
// avenor_result with the complete output, avenor_follow_up.
func TestMCPRestartFindsRuns(t *testing.T) {
	w, sock := mcpWorld(t)
	m := startMCP(t, w, sock)
	prompt := strings.TrimSpace(strings.Repeat("word ", 150))
	out := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": prompt, "label": "survivor"})
	runID := out["run_id"].(string)
	st := m.call("avenor_status", map[string]any{"run_id": runID})
	if st["status"] != "running" {
		t.Fatalf("not mid-run: %v", st)
	}
	_ = m.cmd.Process.Kill()
	_, _ = m.cmd.Process.Wait()

	m2 := startMCP(t, w, sock)
	st = m2.call("avenor_status", map[string]any{"run_id": "survivor"})
	if st["run_id"] != runID || (st["status"] != "running" && st["status"] != "done") {
		t.Fatalf("after the restart: %v", st)
	}
	res := m2.call("avenor_result", map[string]any{"run_id": runID, "timeout": "60s"})
	if res["status"] != "done" || res["output"] != "echo (turn 1): "+prompt {
		t.Fatalf("result after the restart: %v", res)
	}
	_ = m2.cmd.Process.Kill()
	_, _ = m2.cmd.Process.Wait()

	// A third server with its own default socket still finds the run by id.
	cmd := exec.Command(bins.avenor, "mcp")
	cmd.Env, cmd.Dir = w.env, w.work
	m3 := startMCPCmd(t, w, cmd)
	res = m3.call("avenor_result", map[string]any{"run_id": runID, "wait": false})
	if res["output"] != "echo (turn 1): "+prompt || res["ready"] != true {
		t.Fatalf("result from another socket's server: %v", res)
	}
	ev := m3.call("avenor_events", map[string]any{"run_id": runID, "types": []string{"session.end"}})
	if evs, _ := ev["events"].([]any); len(evs) != 1 {
		t.Errorf("events from another socket's server: %v", ev)
	}
	fu := m3.call("avenor_follow_up", map[string]any{"run_id": runID, "message": "more"})
	res = m3.call("avenor_result", map[string]any{"run_id": fu["run_id"].(string), "timeout": "60s"})
	if res["output"] != "echo (turn 2): more" {
		t.Errorf("follow-up from another socket's server: %v", res)
	}
	m3.call("avenor_shutdown", map[string]any{"supervisor_id": sock})
	assertSupervisorGone(t, sock)
}

// startMCPCmd connects to an `avenor mcp` started by cmd.
func startMCPCmd(t *testing.T, w *world, cmd *exec.Cmd) *mcpServer {
	t.Helper()
	m := startMCPWith(t, cmd)
	m.w = w
	return m
}

func supervisorPID(t *testing.T, sock string) int {
	t.Helper()
	c, err := client.Dial(context.Background(), sock)
	if err != nil {
		t.Fatalf("no supervisor at %s: %v", sock, err)
	}
	defer c.Close()
	var st struct {
		PID int `json:"supervisor_pid"`
	}
	if err := c.Call(context.Background(), "status", map[string]any{}, &st); err != nil {
		t.Fatal(err)
	}
	return st.PID
}

// waitGone waits until pid has exited (a reaped or zombie-free pid).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pid %d is still running", pid)
}

func waitSocket(t *testing.T, sock string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := client.Dial(context.Background(), sock); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no supervisor listens at %s", sock)
}
