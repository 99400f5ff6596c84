package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/event"
)

func TestOwnershipFirstMutatorUntilDisconnect(t *testing.T) {
	rt := newFakeRuntime()
	s := startRun(t, rt, runOptions{}, Config{})
	a, b := dialRaw(t, s.Path()), dialRaw(t, s.Path())

	// Read-only methods claim nothing.
	if got := b.call(`{"jsonrpc":"2.0","id":1,"method":"status"}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("status: %s", got)
	}
	if got := a.call(`{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"one"}}`); got != `{"jsonrpc":"2.0","id":1,"result":{"accepted":true}}` {
		t.Fatalf("owner prompt: %s", got)
	}
	const denied = `{"jsonrpc":"2.0","id":2,"error":{"code":-32010,"message":"permission_denied","data":{"detail":"another control connection owns this runtime; mutation is open again when it disconnects"}}}`
	for _, m := range []string{
		`"method":"prompt","params":{"text":"two"}`, `"method":"cancel"`,
		`"method":"interrupt_and_prompt","params":{"text":"x"}`,
		`"method":"answer_permission","params":{"request_id":"p","option_id":"o"}`,
	} {
		if got := b.call(`{"jsonrpc":"2.0","id":2,` + m + `}`); got != denied {
			t.Errorf("%s from a second connection: %s", m, got)
		}
	}
	if got := b.call(`{"jsonrpc":"2.0","id":3,"method":"history","params":{"limit":1}}`); !strings.Contains(got, `"result"`) {
		t.Errorf("history from a second connection: %s", got)
	}

	a.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := b.call(`{"jsonrpc":"2.0","id":4,"method":"prompt","params":{"text":"three"}}`)
		if got == `{"jsonrpc":"2.0","id":4,"result":{"accepted":true}}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ownership was not released: %s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if strings.Join(rt.prompts, ",") != "one,three" || rt.cancels != 0 || len(rt.interrupts) != 0 {
		t.Errorf("runtime saw prompts %q cancels %d interrupts %q", rt.prompts, rt.cancels, rt.interrupts)
	}
}

func TestSecondServerOnSamePathIsRefused(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	second := NewServer(Config{Path: s.Path()})
	err := second.Start()
	if err == nil || err.Error() != "control socket already in use: "+s.Path() || !errors.Is(err, ErrInUse) {
		t.Fatalf("second Start = %v", err)
	}
	second.Close()
	// The first server is untouched.
	if got := dialRaw(t, s.Path()).call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`); !strings.Contains(got, `"token":""`) {
		t.Fatalf("first server after the refused one: %s", got)
	}
}

func TestStaleSocketIsReused(t *testing.T) {
	path := sockPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A killed avenor leaves its socket file behind: closed, not unlinked.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket should exist: %v", err)
	}
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{Path: path})
	if got := dialRaw(t, s.Path()).call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("server on a reused path: %s", got)
	}
}

func TestPathThatIsNotASocketIsKept(t *testing.T) {
	path := sockPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Path: path})
	defer s.Close()
	if err := s.Start(); !errors.Is(err, ErrNotSocket) {
		t.Fatalf("Start = %v, want ErrNotSocket", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatal("the file was touched")
	}
}

func TestSocketModesAndCleanStop(t *testing.T) {
	path := sockPath(t)
	s := NewServer(Config{Path: path})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	dir, _ := os.Stat(filepath.Dir(path))
	sock, _ := os.Lstat(path)
	if dir.Mode().Perm() != 0o700 || sock.Mode().Perm() != 0o600 || sock.Mode().Type() != os.ModeSocket {
		t.Errorf("dir %v, socket %v", dir.Mode(), sock.Mode())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after a clean stop: %v", err)
	}
	if _, err := os.Stat(path + ".control.lock"); err != nil {
		t.Errorf("lock file: %v", err)
	}
}

func TestStopLeavesAnotherServersSocket(t *testing.T) {
	path := sockPath(t)
	s := NewServer(Config{Path: path})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	// Someone replaced our socket (e.g. judged it stale): not ours to unlink.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Close removed another server's socket: %v", err)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestPeerWithAnotherUIDIsRefused(t *testing.T) {
	var logs syncBuffer
	s := NewServer(Config{Path: sockPath(t), Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	me := os.Getuid()
	s.peerCred = func(*net.UnixConn) (int, int, error) { return me + 1, 4242, nil }
	registerRun(s, newFakeRuntime(), runOptions{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := dialRaw(t, s.Path())
	_, _ = c.nc.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"identity"}` + "\n")) // may find it closed already
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := c.r.ReadString('\n'); err == nil {
		t.Fatalf("a foreign peer got an answer: %s", line)
	}
	want := fmt.Sprintf("peer pid 4242 runs as uid %d, this avenor as uid %d", me+1, me)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log %q lacks %q", logs.String(), want)
	}
}

func TestSameUIDPeerAccepted(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: s.Path(), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	uid, pid, err := peerCred(nc)
	if err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Errorf("peerCred = %d, %d, %v", uid, pid, err)
	}
}

func TestReadyAndConnectionCount(t *testing.T) {
	path := sockPath(t)
	var ready atomic.Int32
	counts := make(chan int, 8)
	s := NewServer(Config{Path: path,
		Ready: func() {
			if _, err := os.Lstat(path); err == nil {
				ready.Add(1)
			}
		},
		OnConnections: func(n int) { counts <- n },
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ready.Load() != 1 {
		t.Fatalf("Ready called %d times with the socket in place", ready.Load())
	}
	if s.Connected() {
		t.Fatal("connected before any client")
	}
	select {
	case <-s.Disconnected():
	default:
		t.Fatal("Disconnected open with no client")
	}
	c := dialRaw(t, path)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`)
	gone := s.Disconnected()
	select {
	case <-gone:
		t.Fatal("Disconnected closed while a client is connected")
	default:
	}
	if !s.Connected() {
		t.Fatal("not connected with a client")
	}
	c.nc.Close()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("Disconnected not closed when the last client left")
	}
	for _, want := range []int{1, 0} {
		select {
		case n := <-counts:
			if n != want {
				t.Fatalf("connections %d, want %d", n, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no connection count %d", want)
		}
	}
}

// TestRequestLineLimit: a line over MaxRequestLine is answered -32600 and
// its connection closed (the rest of the line is never read); a line of
// exactly the limit is served.
func TestRequestLineLimit(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	c := dialRaw(t, s.Path())
	big := `{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"` + strings.Repeat("x", MaxRequestLine) + `"}}`
	go func() { _, _ = c.nc.Write([]byte(big + "\n")) }()
	if got := c.recv(); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request","data":{"detail":"request line exceeds 4 MiB; the connection is closed"}}}` {
		t.Fatalf("over-long line: %s", got)
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := c.r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection went on after an over-long line: %q, %v", line, err)
	}
	// Exactly at the limit is accepted.
	c = dialRaw(t, s.Path())
	pad := MaxRequestLine - len(`{"jsonrpc":"2.0","id":3,"method":"identity","params":{"p":""}}`)
	at := `{"jsonrpc":"2.0","id":3,"method":"identity","params":{"p":"` + strings.Repeat("y", pad) + `"}}`
	go func() { _, _ = c.nc.Write([]byte(at + "\n")) }()
	if got := c.recv(); !strings.Contains(got, `"id":3,"result"`) {
		t.Fatalf("a line of exactly 4 MiB: %.200s", got)
	}
	if got := c.call(`{"jsonrpc":"2.0","id":4,"method":"identity"}`); !strings.Contains(got, `"id":4,"result"`) {
		t.Fatalf("after a line of exactly 4 MiB: %s", got)
	}
}

func TestFinalOutputBoundedInViewsLosslessInResult(t *testing.T) {
	rt := newFakeRuntime()
	long := strings.Repeat("é", event.FinalOutputLimit+10)
	s := startRun(t, rt, runOptions{}, Config{})
	c := dialRaw(t, s.Path())
	if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"subscribe"}`); got != `{"jsonrpc":"2.0","id":1,"result":{"subscribed":true}}` {
		t.Fatal(got)
	}
	rt.write(t, event.Event{"event": "session.end", "stop_reason": "end_turn", "final_output": long})
	var note struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal([]byte(c.recv()), &note); err != nil {
		t.Fatal(err)
	}
	if fo := note.Params["final_output"].(string); len([]rune(fo)) != event.FinalOutputLimit || note.Params["final_output_truncated"] != true {
		t.Errorf("notification final_output has %d runes, truncated=%v", len([]rune(fo)), note.Params["final_output_truncated"])
	}
	var hist struct {
		Result struct {
			Events []map[string]any `json:"events"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.call(`{"jsonrpc":"2.0","id":2,"method":"history"}`)), &hist); err != nil {
		t.Fatal(err)
	}
	if ev := hist.Result.Events[0]; len([]rune(ev["final_output"].(string))) != event.FinalOutputLimit || ev["final_output_truncated"] != true {
		t.Errorf("history event not bounded")
	}
	var res struct {
		Result struct {
			FinalOutput string `json:"final_output"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.call(`{"jsonrpc":"2.0","id":3,"method":"result"}`)), &res); err != nil {
		t.Fatal(err)
	}
	if res.Result.FinalOutput != long {
		t.Errorf("result has %d runes, want the complete %d", len([]rune(res.Result.FinalOutput)), len([]rune(long)))
	}
}

func TestLiveSubscriptionSkipsUpToAfterSeq(t *testing.T) {
	rt := newFakeRuntime()
	s := startRun(t, rt, runOptions{}, Config{})
	c := dialRaw(t, s.Path())
	rt.write(t, event.Event{"event": "x"}) // seq 1
	if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"after_seq":3}}`); !strings.Contains(got, `"subscribed":true`) {
		t.Fatal(got)
	}
	for range 3 { // seq 2, 3, 4
		rt.write(t, event.Event{"event": "x"})
	}
	if got := c.recv(); !strings.Contains(got, `"seq":4`) {
		t.Fatalf("first live event after after_seq 3: %s", got)
	}
}

type fakeAnswerer struct {
	pending bool
	err     error
	got     []string
}

func (f *fakeAnswerer) Pending() bool { return f.pending }
func (f *fakeAnswerer) Answer(req, opt, msg string) error {
	f.got = append(f.got, req+"/"+opt+"/"+msg)
	return f.err
}

func TestAnswerPermission(t *testing.T) {
	cases := []struct {
		name string
		ans  fakeAnswerer
		want string
	}{
		{"accepted", fakeAnswerer{pending: true}, `{"jsonrpc":"2.0","id":1,"result":{"accepted":true}}`},
		{"nothing pending", fakeAnswerer{err: fmt.Errorf("broker: %w", ErrNoPendingPermission)}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no_pending_permission"}}`},
		{"id mismatch", fakeAnswerer{pending: true, err: fmt.Errorf("request p9: %w", ErrNoPendingPermission)},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no_pending_permission"}}`},
		{"already answered", fakeAnswerer{err: errors.New(`permission "p1" was already answered`)},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"permission \"p1\" was already answered"}}`},
		{"broker failure", fakeAnswerer{pending: true, err: errors.New(`option "zz" is not offered`)},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"option \"zz\" is not offered"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := tc.ans
			s := startRun(t, newFakeRuntime(), runOptions{Permissions: &ans}, Config{})
			got := dialRaw(t, s.Path()).call(`{"jsonrpc":"2.0","id":1,"method":"answer_permission","params":{"request_id":"p1","option_id":"allow","message":"ok"}}`)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(ans.got) != 1 || ans.got[0] != "p1/allow/ok" {
				t.Errorf("answerer got %q", ans.got)
			}
		})
	}
}

// A subscriber that never reads loses its oldest events and is told so;
// the runtime's writes and a reading subscriber are unaffected.
func TestStuckSubscriberLagsAlone(t *testing.T) {
	rt := newFakeRuntime()
	s := startRun(t, rt, runOptions{}, Config{})
	stuck, live := dialRaw(t, s.Path()), dialRaw(t, s.Path())
	for _, c := range []*rawConn{stuck, live} {
		if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"subscribe"}`); !strings.Contains(got, `"subscribed":true`) {
			t.Fatal(got)
		}
	}
	const n = 5000
	pad := strings.Repeat("p", 2048)
	got := make(chan int64, 1)
	var progress atomic.Int64
	go func() {
		var last int64
		defer func() { got <- last }()
		for last < n {
			var note struct {
				Params struct {
					Event string `json:"event"`
					Seq   int64  `json:"seq"`
				} `json:"params"`
			}
			line, err := live.r.ReadBytes('\n')
			if err != nil {
				break
			}
			_ = json.Unmarshal(line, &note)
			if note.Params.Event == "subscriber.lagged" || note.Params.Seq != last+1 {
				break
			}
			last = note.Params.Seq
			progress.Store(last)
		}
	}()
	start := time.Now()
	var slowest time.Duration
	for i := 1; i <= n; i++ {
		t0 := time.Now()
		rt.write(t, event.Event{"event": "agent.message_chunk", "content": map[string]any{"text": pad}})
		slowest = max(slowest, time.Since(t0))
		if i%100 == 0 { // pace the writer to what a reading subscriber keeps up with
			deadline := time.Now().Add(10 * time.Second)
			for progress.Load() < int64(i) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if progress.Load() < int64(i) {
				break
			}
		}
	}
	if d := time.Since(start); slowest > 500*time.Millisecond {
		t.Errorf("a write waited %v (all %d: %v): the stuck subscriber blocked the runtime", slowest, n, d)
	}
	select {
	case last := <-got:
		if last != n {
			t.Errorf("the reading subscriber stopped at seq %d of %d", last, n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the reading subscriber did not get every event")
	}
	// Now the stuck one reads: a lag notice, then the newest events.
	_ = stuck.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	sawLag := false
	for {
		line, err := stuck.r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("stuck subscriber: %v (lag seen: %v)", err, sawLag)
		}
		if bytes.Contains(line, []byte(`"event":"subscriber.lagged"`)) {
			if !bytes.Contains(line, []byte(`"dropped_count":`)) {
				t.Fatalf("lag notice without dropped_count: %s", line)
			}
			sawLag = true
		}
		if bytes.Contains(line, []byte(fmt.Sprintf(`"seq":%d,`, n))) {
			break
		}
	}
	if !sawLag {
		t.Error("the stuck subscriber was never told it lagged")
	}
}

func TestCloseWithBusyConnections(t *testing.T) {
	rt := newFakeRuntime()
	s := NewServer(Config{Path: sockPath(t)})
	registerRun(s, rt, runOptions{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, s.Path())
	c.call(`{"jsonrpc":"2.0","id":1,"method":"subscribe"}`)
	for range 2000 {
		rt.write(t, event.Event{"event": "x", "pad": strings.Repeat("z", 1024)})
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a connection that does not read")
	}
	if err := s.Start(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Start after Close = %v", err)
	}
}
