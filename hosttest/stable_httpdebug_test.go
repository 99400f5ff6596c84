package hosttest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago (the supervisor's stderr cannot be read while it runs).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// debugHTTP calls a supervisor's --http-debug adapter with its token.
type debugHTTP struct {
	t          *testing.T
	url, token string
	c          *http.Client
}

func (d *debugHTTP) do(method, path string) (int, string) {
	d.t.Helper()
	return d.doBody(method, path, "")
}

func (d *debugHTTP) doBody(method, path, body string) (int, string) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	req.Header.Set("X-Avenor-Token", d.token)
	resp, err := d.c.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseEvents reads the events of an SSE stream (`data: <json>` lines).
func sseEvents(r io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil {
				out <- ev
			}
		}
	}()
	return out
}

// `avenor stable --http-debug`: GET /runtimes and /status/<id> show the
// spawned runtimes (404 and 400 for a wrong or missing id), /events with
// runtime_id replays one runtime's stream, without it follows them all,
// and POST /cancel/<id> cancels one runtime.
func TestStableHTTPDebug(t *testing.T) {
	w := newWorld(t)
	addr := freeLoopbackAddr(t)
	tokenFile := filepath.Join(w.root, "token")
	s := w.startStable("sup", nil, "--http-debug", addr, "--http-debug-token-file", tokenFile)
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	d := &debugHTTP{t: t, url: "http://" + addr, token: strings.TrimSpace(string(raw)), c: &http.Client{Transport: tr}}
	c := s.client()

	// Every runtime, from now on.
	req, _ := http.NewRequest("GET", d.url+"/events", nil)
	req.Header.Set("X-Avenor-Token", d.token)
	all, err := d.c.Do(req)
	if err != nil || all.StatusCode != 200 {
		t.Fatalf("GET /events: %v %v", err, all)
	}
	defer all.Body.Close()
	allEvents := sseEvents(all.Body)

	a := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "alpha", Prompt: "announce\nchunks 3 every=20ms"})
	b := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "beta", Prompt: "sleep 30s"})

	code, body := d.do("GET", "/runtimes")
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 ||
		list[0]["runtime_id"] != a.RuntimeID || list[1]["runtime_id"] != b.RuntimeID || list[0]["label"] != "alpha" {
		t.Fatalf("GET /runtimes: %d %s", code, body)
	}
	code, body = d.do("GET", "/status/"+b.RuntimeID)
	var entry map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &entry) != nil || entry["runtime_id"] != b.RuntimeID ||
		entry["status"] != "running" || entry["session_id"] != b.SessionID {
		t.Fatalf("GET /status/%s: %d %s", b.RuntimeID, code, body)
	}
	if code, body := d.do("GET", "/status/rt_99"); code != 404 || body != "runtime not found\n" {
		t.Fatalf("GET /status/rt_99: %d %q", code, body)
	}
	if code, body := d.do("GET", "/status/"); code != 400 || body != "runtime_id required\n" {
		t.Fatalf("GET /status/: %d %q", code, body)
	}
	if code, body := d.do("GET", "/events?runtime_id=rt_99"); code != 404 || body != "runtime not found\n" {
		t.Fatalf("GET /events?runtime_id=rt_99: %d %q", code, body)
	}
	if code, body := d.do("POST", "/cancel"); code != 400 || !strings.Contains(body, "runtime_id required") {
		t.Fatalf("POST /cancel: %d %q", code, body)
	}

	// Nothing is pending: 409; a runtime that does not exist: 404.
	if code, body := d.doBody("POST", "/answer-permission", `{"runtime_id":"`+b.RuntimeID+`","request_id":"perm_1","option_id":"allow"}`); code != 409 {
		t.Fatalf("POST /answer-permission with nothing pending: %d %q", code, body)
	}
	if code, body := d.doBody("POST", "/answer-permission", `{"runtime_id":"rt_99","request_id":"perm_1","option_id":"allow"}`); code != 404 || body != "runtime not found\n" {
		t.Fatalf("POST /answer-permission to rt_99: %d %q", code, body)
	}

	// One runtime's stream, replayed from seq 1 to its session.end.
	waitEnded(t, c, a.RuntimeID, 15*time.Second)
	req, _ = http.NewRequest("GET", d.url+"/events?replay=true&runtime_id="+a.RuntimeID, nil)
	req.Header.Set("X-Avenor-Token", d.token)
	one, err := d.c.Do(req)
	if err != nil || one.StatusCode != 200 || one.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events?runtime_id=%s: %v %v", a.RuntimeID, err, one)
	}
	defer one.Body.Close()
	evs := sseEvents(one.Body)
	for want := float64(1); ; want++ {
		select {
		case ev := <-evs:
			if ev["seq"] != want || ev["runtime_id"] != a.RuntimeID {
				t.Fatalf("event %v, want seq %v of %s", ev, want, a.RuntimeID)
			}
			if ev["event"] != "session.end" {
				continue
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the replay stopped before session.end (seq %v)", want)
		}
		break
	}

	// Cancel one runtime through the adapter.
	if code, body := d.do("POST", "/cancel/"+b.RuntimeID); code != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("POST /cancel/%s: %d %q", b.RuntimeID, code, body)
	}
	rb := waitEnded(t, c, b.RuntimeID, 15*time.Second)
	if rb.ExitCode == nil || *rb.ExitCode != 130 || rb.StopReason != "cancelled" {
		t.Fatalf("%s after POST /cancel: %s", b.RuntimeID, rb.Raw)
	}
	if code, body := d.do("POST", "/cancel/rt_99"); code != 404 || body != "runtime not found\n" {
		t.Fatalf("POST /cancel/rt_99: %d %q", code, body)
	}

	// The all-runtimes stream saw both runtimes' session.end.
	ended := map[any]bool{}
	deadline := time.After(10 * time.Second)
	for len(ended) < 2 {
		select {
		case ev, ok := <-allEvents:
			if !ok {
				t.Fatalf("GET /events ended early; ended %v", ended)
			}
			if ev["event"] == "session.end" {
				ended[ev["runtime_id"]] = true
			}
		case <-deadline:
			t.Fatalf("GET /events: session.end of %v only", ended)
		}
	}

	if err := c.Shutdown(ctxT(t, 5*time.Second), "graceful"); err != nil {
		t.Fatal(err)
	}
	s.exited(0, 20*time.Second)
	s.tombstone("shutdown")
}

// --http-debug-token-file needs --http-debug.
func TestStableHTTPDebugTokenFileAlone(t *testing.T) {
	w := newWorld(t)
	res := w.run("stable", "--control-socket", filepath.Join(w.tmp, "s.sock"), "--http-debug-token-file", w.path("t"))
	if res.code != 1 || !strings.Contains(res.stderr, "--http-debug-token-file needs --http-debug") {
		t.Fatalf("%v", res)
	}
}
