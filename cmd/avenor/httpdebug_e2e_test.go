package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startHTTPDebugRun starts `avenor run --http-debug 127.0.0.1:0` and returns
// the process, the URL from its listening line and its stderr so far.
func startHTTPDebugRun(t *testing.T, w *e2eWorld, args ...string) (*exec.Cmd, <-chan int, string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "avenor"), args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	urls := make(chan string, 1)
	exited := make(chan int, 1)
	go func() {
		listening := regexp.MustCompile(`^avenor: http debug listening on (http://127\.0\.0\.1:[0-9]+)$`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.Write(append(sc.Bytes(), '\n'))
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		err := cmd.Wait() // after the pipe is drained, as StderrPipe requires
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		exited <- code
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	select {
	case u := <-urls:
		return cmd, exited, u, stderr
	case <-exited:
		t.Fatalf("avenor exited before listening; stderr:\n%s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("no listening line; stderr:\n%s", stderr.String())
	}
	return nil, nil, "", nil
}

// sseFrames parses `event: event\ndata: <json>\n\n` frames from r.
func sseFrames(t *testing.T, r io.Reader) <-chan string {
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		br := bufio.NewReader(r)
		for {
			ev, err := br.ReadString('\n')
			if err != nil {
				return
			}
			data, err := br.ReadString('\n')
			if err != nil {
				return
			}
			blank, err := br.ReadString('\n')
			if err != nil || ev != "event: event\n" || !strings.HasPrefix(data, "data: ") || blank != "\n" {
				out <- "BAD FRAME: " + ev + data + blank
				return
			}
			out <- strings.TrimSuffix(strings.TrimPrefix(data, "data: "), "\n")
		}
	}()
	return out
}

// The built avenor with the scripted plugin, driven over HTTP as a script
// would: token from the file, status and events during the turn, cancel
// ends the run (KILLED, 130) and the stream after session.end.
func TestHTTPDebugEndToEnd(t *testing.T) {
	noLeaks(t)
	w := newE2EWorld(t)
	tokenFile := filepath.Join(w.dir, "secrets", "token")
	events := filepath.Join(w.dir, "events.ndjson")
	sentinelPath := filepath.Join(w.dir, "run.done")
	_, exited, url, stderr := startHTTPDebugRun(t, w, "run", "--backend", "scripted", "--prompt", "say hi\nsleep 5s",
		"--http-debug", "127.0.0.1:0", "--http-debug-token-file", tokenFile,
		"--on-event", events, "--sentinel-file", sentinelPath, "--run-id", "run-e2e")

	st, err := os.Stat(tokenFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	raw, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(token) || string(raw) != token+"\n" {
		t.Fatalf("token file holds %q", raw)
	}
	if strings.Contains(stderr.String(), token) || strings.Contains(stderr.String(), "http debug token") {
		t.Fatalf("the token reached a stderr that is not a terminal:\n%s", stderr.String())
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	call := func(method, path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, nil)
		if tok != "" {
			req.Header.Set("X-Avenor-Token", tok)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/status", ""); code != 401 || body != "unauthorized\n" {
		t.Fatalf("GET /status without the token: %d %q", code, body)
	}
	if code, body := call("GET", "/status", "0123456789abcdef0123456789abcdef"); code != 401 || body != "unauthorized\n" {
		t.Fatalf("GET /status with a wrong token: %d %q", code, body)
	}

	// The stream, from the start (replay), with the token in the query.
	resp, err := c.Get(url + "/events?replay=true&token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: %d %v", resp.StatusCode, resp.Header)
	}
	frames := sseFrames(t, resp.Body)
	var got []string
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("stream ended before %s; got %q", what, got)
			}
			got = append(got, f)
			var ev map[string]any
			if err := json.Unmarshal([]byte(f), &ev); err != nil {
				t.Fatalf("frame %q: %v", f, err)
			}
			return ev
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s; got %q", what, got)
		}
		return nil
	}
	for {
		ev := next(`the "hi" chunk`)
		if c, _ := ev["content"].(map[string]any); ev["event"] == "agent.message_chunk" && c["text"] == "hi" {
			break
		}
	}

	code, body := call("GET", "/status", token)
	var status map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &status) != nil || status["turn_state"] != "running" ||
		status["run_id"] != "run-e2e" || status["session_id"] == "" {
		t.Fatalf("GET /status during the turn: %d %s", code, body)
	}

	if code, body := call("POST", "/cancel", token); code != 200 || body != "{\"ok\":true}\n" {
		t.Fatalf("POST /cancel: %d %q", code, body)
	}
	for {
		ev := next("session.end")
		if ev["event"] == "session.end" {
			if ev["stop_reason"] != "cancelled" {
				t.Fatalf("session.end: %v", ev)
			}
			break
		}
	}
	select {
	case f, ok := <-frames:
		if ok {
			t.Fatalf("an event after session.end: %q", f)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end with the run")
	}
	select {
	case code := <-exited:
		if code != 130 {
			t.Fatalf("exit %d, want 130; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("avenor did not exit; stderr:\n%s", stderr.String())
	}
	sentinel, _ := os.ReadFile(sentinelPath)
	if !strings.HasPrefix(string(sentinel), "KILLED\n") || !strings.Contains(string(sentinel), "STOP_REASON=cancelled\n") {
		t.Fatalf("sentinel:\n%s", sentinel)
	}
	// Every frame is its NDJSON line, byte for byte, and none is missing.
	log, _ := os.ReadFile(events)
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("stream:\n%s\nlog:\n%s", strings.Join(got, "\n"), log)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Fatalf("token file left after the run: %v", err)
	}
}

// A non-loopback address is refused at startup with the contract's text:
// exit 1, a FAILED sentinel, nothing run.
func TestHTTPDebugRefusesNonLoopback(t *testing.T) {
	noLeaks(t)
	w := newE2EWorld(t)
	sentinelPath := filepath.Join(w.dir, "run.done")
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "10.1.2.3:0"} {
		code, _, errOut := runBinary(w, "run", "--backend", "scripted", "--prompt", "say hi",
			"--http-debug", addr, "--sentinel-file", sentinelPath)
		want := `avenor: --http-debug: address "` + addr + `" must bind to a loopback interface (localhost, 127.0.0.1, or ::1)` + "\n"
		if code != 1 || errOut != want {
			t.Fatalf("--http-debug %s: exit %d, stderr %q, want %q", addr, code, errOut, want)
		}
		if s, _ := os.ReadFile(sentinelPath); !strings.HasPrefix(string(s), "FAILED\n") {
			t.Fatalf("sentinel:\n%s", s)
		}
	}
	code, _, errOut := runBinary(w, "run", "--backend", "scripted", "--prompt", "say hi", "--http-debug-token-file", "t")
	if code != 1 || !strings.Contains(errOut, "--http-debug-token-file needs --http-debug") {
		t.Fatalf("token file without --http-debug: exit %d %q", code, errOut)
	}
}
