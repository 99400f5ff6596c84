package hosttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// lockedBuffer is an output buffer a test may read while the process
// writes it.
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

// boardProc is a running `avenor board`.
type boardProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	url   string // http://127.0.0.1:<port>/board/
	base  string // http://127.0.0.1:<port>
	token string
	// printed is the start-up line's URL: url?token=<token>, or url
	// with --no-auth.
	printed string
	stdout  *lockedBuffer
	stderr  *lockedBuffer
}

// startBoardProc starts `avenor board --no-open --token <token> args…` and
// waits for the line that says where it serves.
func (w *world) startBoardProc(token string, args ...string) *boardProc {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	full := append([]string{"board", "--no-open"}, args...)
	if token != "" {
		full = append(full, "--token", token)
	}
	cmd := exec.CommandContext(ctx, bins.avenor, full...)
	cmd.Dir, cmd.Env = w.work, w.env
	b := &boardProc{t: w.t, cmd: cmd, token: token, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	cmd.Stderr = b.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("starting avenor board: %v", err)
	}
	w.t.Cleanup(func() {
		_ = cmd.Process.Signal(interruptSignal)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			b.stdout.Write(append(sc.Bytes(), '\n'))
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		const prefix = "avenor board: serving "
		if !ok || !strings.HasPrefix(line, prefix) {
			w.t.Fatalf("avenor board said %q; stderr: %s", line, b.stderr.String())
		}
		b.printed = strings.TrimPrefix(line, prefix)
		b.url, _, _ = strings.Cut(b.printed, "?")
		b.base = strings.TrimSuffix(b.url, "/board/")
	case <-time.After(15 * time.Second):
		w.t.Fatalf("avenor board did not say where it serves; stderr: %s", b.stderr.String())
	}
	return b
}

// call sends a request with the board's token and decodes the JSON answer
// into v (when not nil); it returns the status and the body.
func (b *boardProc) call(method, path string, body any, v any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, v); err != nil {
			b.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

// boardFleet is a stable supervisor under ~/.avenor/sockets with scripted
// runtimes spawned by a client that has disconnected again, so the board
// can own the runtimes.
type boardFleet struct {
	sup    *supervisor
	sock   string
	ids    []string
	events []string // each runtime's --on-event log
}

// startBoardFleet starts `avenor stable` on ~/.avenor/sockets/<name>.sock
// and spawns one scripted runtime per script.
func (w *world) startBoardFleet(name string, scripts ...string) *boardFleet {
	w.t.Helper()
	dir := filepath.Join(w.home, ".avenor", "sockets")
	sock := filepath.Join(dir, name+".sock")
	p := w.startGuarded(5*time.Minute, nil, "stable", "--control-socket", sock)
	sup := &supervisor{proc: p, w: w, sock: sock}
	if !waitFor(10*time.Second, func() bool {
		c, err := client.Dial(context.Background(), sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		w.t.Fatalf("avenor stable did not listen on %s: %s", sock, p.stderr.String())
	}
	f := &boardFleet{sup: sup, sock: sock}
	c, err := client.Dial(ctxT(w.t, 10*time.Second), sock)
	if err != nil {
		w.t.Fatal(err)
	}
	for i, s := range scripts {
		ev := w.path(fmt.Sprintf("%s-%02d.ndjson", name, i+1))
		sp := spawn(w.t, c, client.SpawnParams{Backend: "scripted", Prompt: s, Dir: w.work, OnEvent: ev, Label: fmt.Sprintf("agent-%02d", i+1)})
		f.ids = append(f.ids, sp.RuntimeID)
		f.events = append(f.events, ev)
	}
	c.Close() // spawn made it the owner: let go, so the board may mutate
	return f
}

// waitEvent waits until a runtime's log holds an event for which cond
// holds.
func waitEvent(t *testing.T, path string, d time.Duration, what string, cond func(event) bool) event {
	t.Helper()
	var found event
	if !waitFor(d, func() bool {
		for _, ev := range readEventsQuiet(path) {
			if cond(ev) {
				found = ev
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%s: no %s within %v", path, what, d)
	}
	return found
}

// readEventsQuiet reads an NDJSON log that may not exist yet or end in a
// partial line.
func readEventsQuiet(path string) []event {
	b, err := readFileQuiet(path)
	if err != nil {
		return nil
	}
	var out []event
	for _, line := range strings.Split(string(b), "\n") {
		var ev event
		if json.Unmarshal([]byte(line), &ev) == nil && ev != nil {
			out = append(out, ev)
		}
	}
	return out
}

// TestBoardAPI drives every route of a board with --allow-mutations
// against a real supervisor: the socket list, status, list, the event
// stream, usage, and the three mutations — answer (whose
// permission.response says source "board"), prompt and cancel.
func TestBoardAPI(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.startBoardFleet("fleet",
		"say hello\nusage in=7 out=3",
		"permission tool=bash question=\"Run ls?\"\nsay after",
		"say working\nsleep 60s",
	)
	b := w.startBoardProc("tok-api", "--allow-mutations")

	var socks []struct {
		Path     string          `json:"path"`
		Type     string          `json:"type"`
		PID      int             `json:"pid"`
		Runtimes int             `json:"runtimes"`
		Status   json.RawMessage `json:"status"`
	}
	if code, body := b.call("GET", "/api/sockets", nil, &socks); code != 200 || len(socks) != 1 {
		t.Fatalf("sockets: %d %s", code, body)
	}
	if s := socks[0]; s.Path != f.sock || s.Type != "stable" || s.Runtimes != 3 || s.PID != f.sup.pid() || len(s.Status) == 0 {
		t.Fatalf("socket entry %+v; want the supervisor (pid %d) with 3 runtimes", s, f.sup.pid())
	}
	q := "?socket=" + f.sock
	var list []client.Runtime
	if code, body := b.call("GET", "/api/list"+q, nil, &list); code != 200 || len(list) != 3 || list[1].Label != "agent-02" {
		t.Fatalf("list: %d %s", code, body)
	}
	// The permission: pending in status, answered through the board.
	var rt client.Runtime
	if !waitFor(15*time.Second, func() bool {
		code, _ := b.call("GET", "/api/status"+q+"&runtime_id="+f.ids[1], nil, &rt)
		return code == 200 && rt.PendingPermission
	}) {
		t.Fatalf("runtime %s never showed its pending permission: %+v", f.ids[1], rt)
	}
	var perm struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(rt.Permission, &perm)

	// The event stream of the permission runtime replays its history.
	stream, err := http.NewRequest("GET", b.base+"/api/events"+q+"&runtime_id="+f.ids[1]+"&replay=1&token="+b.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	resp, err := http.DefaultClient.Do(stream.WithContext(sctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sse := bufio.NewReader(resp.Body)
	readSSE := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			line, err := sse.ReadString('\n')
			if err != nil {
				t.Fatalf("event stream ended before %s: %v", want, err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, want) {
				return
			}
		}
		t.Fatalf("event stream: no %s", want)
	}
	readSSE(`"event":"permission.request"`)

	if code, body := b.call("POST", "/api/answer", map[string]string{"socket": f.sock, "runtime_id": f.ids[1], "request_id": perm.RequestID, "option_id": "nope"}, nil); code != 409 || !strings.Contains(body, "nope") {
		t.Errorf("answer with an option not offered: %d %s; want 409 naming it", code, body)
	}
	if code, body := b.call("POST", "/api/answer", map[string]string{"socket": f.sock, "runtime_id": f.ids[1], "request_id": perm.RequestID, "option_id": "allow"}, nil); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	readSSE(`"source":"board"`)
	resp2 := waitEvent(t, f.events[1], 15*time.Second, "permission.response", func(ev event) bool { return ev.name() == "permission.response" })
	if resp2.str("source") != "board" || resp2.str("option_id") != "allow" {
		t.Fatalf("permission.response %v; want source board, option allow", resp2)
	}
	waitEvent(t, f.events[1], 15*time.Second, "session.end with the answer's text", func(ev event) bool {
		return ev.name() == "session.end" && ev.str("final_output") == "permission allow (allow_once)after"
	})
	if code, body := b.call("POST", "/api/answer", map[string]string{"socket": f.sock, "runtime_id": f.ids[1], "request_id": perm.RequestID, "option_id": "allow"}, nil); code != 409 {
		t.Errorf("second answer: %d %s; want 409", code, body)
	}

	// Prompt: a follow-up on the parked first runtime runs.
	waitEvent(t, f.events[0], 15*time.Second, "session.end", func(ev event) bool { return ev.name() == "session.end" })
	if code, body := b.call("POST", "/api/prompt", map[string]string{"socket": f.sock, "runtime_id": f.ids[0], "text": "say again"}, nil); code != 200 {
		t.Fatalf("prompt: %d %s", code, body)
	}
	waitEvent(t, f.events[0], 15*time.Second, "the follow-up's session.end", func(ev event) bool {
		return ev.name() == "session.end" && ev.str("final_output") == "again"
	})
	if code, body := b.call("POST", "/api/prompt", map[string]string{"socket": f.sock, "runtime_id": f.ids[0]}, nil); code != 400 || !strings.Contains(body, "missing text") {
		t.Errorf("prompt without text: %d %s", code, body)
	}

	// Cancel: the sleeping runtime ends cancelled.
	waitEvent(t, f.events[2], 15*time.Second, "its first chunk", func(ev event) bool { return ev.name() == "agent.message_chunk" })
	if code, body := b.call("POST", "/api/cancel", map[string]string{"socket": f.sock, "runtime_id": f.ids[2]}, nil); code != 200 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	waitEvent(t, f.events[2], 15*time.Second, "session.end cancelled", func(ev event) bool {
		return ev.name() == "session.end" && ev.str("stop_reason") == "cancelled"
	})

	// Usage: the first runtime's reported tokens, and the total.
	var usage struct {
		Runtimes []struct {
			RuntimeID string `json:"runtime_id"`
			Usage     struct {
				In  int64 `json:"input_tokens"`
				Out int64 `json:"output_tokens"`
			} `json:"usage"`
		} `json:"runtimes"`
		Total struct {
			In       int64 `json:"input_tokens"`
			Reported int   `json:"reported"`
		} `json:"total"`
	}
	if code, body := b.call("GET", "/api/usage", nil, &usage); code != 200 || len(usage.Runtimes) != 3 {
		t.Fatalf("usage: %d %s", code, body)
	}
	// The follow-up turn reported no usage: the entry keeps the latest
	// session.end's, so look at the history-independent total too.
	if code, body := b.call("GET", "/api/usage"+q, nil, nil); code != 200 || !strings.Contains(body, `"runtime_id":"`+f.ids[0]+`"`) {
		t.Fatalf("usage of one socket: %d %s", code, body)
	}

	// Config, and a socket the board does not watch.
	if code, body := b.call("GET", "/api/config", nil, nil); code != 200 || !strings.Contains(body, `"mutations_allowed":true`) {
		t.Errorf("config: %d %s", code, body)
	}
	if code, body := b.call("GET", "/api/list?socket="+w.path("other.sock"), nil, nil); code != 400 {
		t.Errorf("list of an unwatched socket: %d %s", code, body)
	}
	// The token is on stdout's start-up line only, never in the log.
	if strings.Contains(b.stderr.String(), b.token) {
		t.Errorf("the token is in the board's log:\n%s", b.stderr.String())
	}
}

// TestBoardReadOnly: without --allow-mutations every POST is refused (403)
// and nothing reaches the runtime; reads work, and a board that cannot
// answer holds no control connection between requests.
func TestBoardReadOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.startBoardFleet("ro", "permission tool=bash question=\"Run?\"\nsay after")
	b := w.startBoardProc("tok-ro")
	q := "?socket=" + f.sock
	var rt client.Runtime
	if !waitFor(15*time.Second, func() bool {
		code, _ := b.call("GET", "/api/status"+q+"&runtime_id="+f.ids[0], nil, &rt)
		return code == 200 && rt.PendingPermission
	}) {
		t.Fatalf("no pending permission: %+v", rt)
	}
	var perm struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(rt.Permission, &perm)
	for path, body := range map[string]map[string]string{
		"/api/answer": {"socket": f.sock, "runtime_id": f.ids[0], "request_id": perm.RequestID, "option_id": "allow"},
		"/api/cancel": {"socket": f.sock, "runtime_id": f.ids[0]},
		"/api/prompt": {"socket": f.sock, "runtime_id": f.ids[0], "text": "hi"},
	} {
		if code, resp := b.call("POST", path, body, nil); code != 403 {
			t.Errorf("POST %s read-only: %d %s; want 403", path, code, resp)
		}
	}
	time.Sleep(300 * time.Millisecond)
	for _, ev := range readEventsQuiet(f.events[0]) {
		if ev.name() == "permission.response" || ev.name() == "session.end" {
			t.Fatalf("a refused POST reached the runtime: %v", ev)
		}
	}
	// The board left no connection behind: the supervisor counts none.
	c, err := client.Dial(ctxT(t, 5*time.Second), f.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Connections int `json:"connections"`
	}
	_ = json.Unmarshal(st.Raw, &sum)
	if sum.Connections != 1 {
		t.Errorf("supervisor connections = %d with the board idle; want 1 (this one): %s", sum.Connections, st.Raw)
	}
}

// TestBoardAuth: the API refuses a missing or wrong token, a foreign Host
// and a foreign Origin, on the real binary; the start-up line on stdout
// is the URL with the token, a generated one too, on a pipe.
func TestBoardAuth(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	b := w.startBoardProc("tok-auth", "--allow-mutations")
	req := func(path string, hdr map[string]string) int {
		r, _ := http.NewRequest("GET", b.base+path, nil)
		for k, v := range hdr {
			if k == "Host" {
				r.Host = v
			} else {
				r.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := "Bearer tok-auth"
	for name, tc := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"no token":       {nil, 401},
		"wrong token":    {map[string]string{"Authorization": "Bearer nope"}, 401},
		"good token":     {map[string]string{"Authorization": good}, 200},
		"foreign Host":   {map[string]string{"Authorization": good, "Host": "attacker.example"}, 403},
		"foreign Origin": {map[string]string{"Authorization": good, "Origin": "http://attacker.example"}, 403},
	} {
		if got := req("/api/sockets", tc.hdr); got != tc.want {
			t.Errorf("%s: %d; want %d", name, got, tc.want)
		}
	}

	// A generated token is printed on stdout as the ready-to-open URL even
	// on a pipe (docs/board.md), and it is enforced.
	gen := w.startBoardProc("", "--scan", w.path("none"))
	tok, ok := strings.CutPrefix(gen.printed, gen.url+"?token=")
	if !ok || len(tok) != 32 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("start-up line on a pipe %q; want %s?token=<32 hex digits>", gen.printed, gen.url)
	}
	if strings.Contains(gen.stderr.String(), tok) {
		t.Errorf("the generated token is in the log: %q", gen.stderr.String())
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer " + tok, 200}} {
		r, _ := http.NewRequest("GET", gen.base+"/api/sockets", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("generated-token board with %q: %d; want %d", c.auth, resp.StatusCode, c.want)
		}
	}
	// The page opens from the printed URL as it is.
	resp, err := http.Get(gen.printed)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET %s: %d", gen.printed, resp.StatusCode)
	}
	// With --token the same line shows that token.
	if b.printed != b.url+"?token=tok-auth" {
		t.Errorf("start-up line with --token: %q; want %s?token=tok-auth", b.printed, b.url)
	}
	res := w.run("board", "--addr", "192.0.2.1:0", "--no-open")
	if res.code != 2 || !strings.Contains(res.stderr, "needs --token") {
		t.Errorf("non-loopback without a token: %v", res)
	}
}

// interruptSignal stops a board as Ctrl-C does.
var interruptSignal = syscall.SIGINT

func readFileQuiet(path string) ([]byte, error) { return os.ReadFile(path) }

// startGuarded is world.start with its own bound instead of runGuard: the
// browser tests keep a supervisor through several page loads.
func (w *world) startGuarded(guard time.Duration, extraEnv []string, args ...string) *proc {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	p := &proc{t: w.t, cancel: cancel}
	p.cmd = exec.CommandContext(ctx, bins.avenor, args...)
	p.cmd.Dir = w.work
	p.cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("starting avenor: %v", err)
	}
	w.t.Cleanup(func() { cancel(); p.wait() })
	return p
}

// TestBoardAnswerKeepsHarnessIn: after a person answers a permission on
// the board, the harness may still mutate: `avenor control shutdown` is
// accepted, not refused because the board's connection owns the runtimes.
func TestBoardAnswerKeepsHarnessIn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.startBoardFleet("owner", "permission tool=bash question=\"Run?\"\nsay after-answer")
	b := w.startBoardProc("tok-owner", "--allow-mutations")
	var rt client.Runtime
	if !waitFor(15*time.Second, func() bool {
		code, _ := b.call("GET", "/api/status?socket="+f.sock+"&runtime_id="+f.ids[0], nil, &rt)
		return code == 200 && rt.PendingPermission
	}) {
		t.Fatalf("no pending permission: %+v", rt)
	}
	var perm struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(rt.Permission, &perm)
	if code, body := b.call("POST", "/api/answer", map[string]string{"socket": f.sock, "runtime_id": f.ids[0], "request_id": perm.RequestID, "option_id": "allow"}, nil); code != 200 {
		t.Fatalf("answer on the board: %d %s", code, body)
	}
	waitEvent(t, f.events[0], 15*time.Second, "the turn's end", func(ev event) bool { return ev.name() == "session.end" })
	r := w.run("control", "--socket", f.sock, "shutdown")
	if r.code != 0 || !strings.Contains(r.stdout, "shutting down") {
		t.Fatalf("harness shutdown after a board answer: %v", r)
	}
	f.sup.wait()
}

// TestBoardViewerNeverClaims: a read-only board with a runtime view open
// (its event stream holds a control connection) must not keep a run's
// permission request from the run's file handler: the .req is written and
// a response file answers it, as if no board were watching.
func TestBoardViewerNeverClaims(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.startBoardFleet("viewer")
	b := w.startBoardProc("tok-viewer")
	base := w.path("viewer-perm")
	ev := w.path("viewer-events.ndjson")
	c, err := client.Dial(ctxT(t, 10*time.Second), f.sock)
	if err != nil {
		t.Fatal(err)
	}
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, OnEvent: ev, PermissionHandler: "file:" + base,
		Prompt: "sleep 1500ms\npermission tool=bash question=\"Run?\"\nsay after-file-answer"})
	c.Close() // the spawner goes: only the board's view stays connected

	// The person opens the runtime's view on the read-only board.
	req, _ := http.NewRequest("GET", b.base+"/api/events?socket="+f.sock+"&runtime_id="+sp.RuntimeID+"&replay=1&token="+b.token, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("event stream: %d", resp.StatusCode)
	}
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()

	if !waitFor(15*time.Second, func() bool { _, err := os.Stat(base + ".req"); return err == nil }) {
		t.Fatalf("the file handler never got the request while a read-only board watched; events:\n%v", readEventsQuiet(ev))
	}
	pr := waitEvent(t, ev, 5*time.Second, "permission.request", func(e event) bool { return e.name() == "permission.request" })
	if err := os.WriteFile(base+".req.response", []byte(`{"request_id":"`+pr.str("request_id")+`","option_id":"allow"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ev, 15*time.Second, "the turn's end after the file answer", func(e event) bool {
		return e.name() == "session.end" && e.str("stop_reason") == "end_turn" && strings.Contains(e.str("final_output"), "after-file-answer")
	})
}
