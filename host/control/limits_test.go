package control

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// emfileListener fails every accept as a process out of descriptors does.
type emfileListener struct{ calls atomic.Int64 }

func (l *emfileListener) AcceptUnix() (*net.UnixConn, error) {
	l.calls.Add(1)
	return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

// A listener out of descriptors is retried with a growing pause, and the
// failure is logged once per interval, not once per try.
func TestAcceptBacksOffOnErrors(t *testing.T) {
	var logs syncBuffer
	s := NewServer(Config{Path: sockPath(t), Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	ln := &emfileListener{}
	s.wg.Add(1)
	go s.accept(ln)
	const span = 700 * time.Millisecond
	time.Sleep(span)
	s.Close()
	// 5, 10, 20, … ms: about 8 tries in 700 ms; a loop that retries at once
	// makes hundreds of thousands.
	if n := ln.calls.Load(); n > 12 {
		t.Errorf("%d accepts in %v: the loop does not back off", n, span)
	}
	if n := strings.Count(logs.String(), "accept failed"); n != 1 {
		t.Errorf("%d log lines for the failed accepts, want 1 per %v:\n%.2000s", n, AcceptLogInterval, logs.String())
	}
	if !strings.Contains(logs.String(), "too many open files") {
		t.Errorf("the log does not name the error: %.500s", logs.String())
	}
}

// Close ends the accept loop during its pause at once.
func TestAcceptBackoffEndsAtClose(t *testing.T) {
	s := NewServer(Config{Path: sockPath(t)})
	ln := &emfileListener{}
	s.wg.Add(1)
	go s.accept(ln)
	time.Sleep(3 * AcceptBackoffMax / 2) // well into the longest pause
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > AcceptBackoffMax/2 {
		t.Fatalf("Close waited %v for the accept loop's pause", d)
	}
}

// startWithPeers starts a one-shot server whose connections come from the
// pid *peer holds when each is accepted (the server's uid), so one test
// process can play several client processes. Dial one at a time and wait
// for its answer before changing *peer: the accept loop reads it.
func startWithPeers(t *testing.T, cfg Config) (*Server, *atomic.Int64) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = sockPath(t)
	}
	peer := new(atomic.Int64)
	s := NewServer(cfg)
	s.peerCred = func(*net.UnixConn) (int, int, error) { return os.Getuid(), int(peer.Load()), nil }
	registerRun(s, newFakeRuntime(), runOptions{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, peer
}

// dialAs opens a connection as process pid and checks it is served.
func dialAs(t *testing.T, s *Server, peer *atomic.Int64, pid int) *rawConn {
	t.Helper()
	peer.Store(int64(pid))
	c := dialRaw(t, s.Path())
	if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("a connection of pid %d: %s", pid, got)
	}
	return c
}

// refusedAs dials as process pid and checks the connection is answered
// want and closed.
func refusedAs(t *testing.T, s *Server, peer *atomic.Int64, pid int, want string) {
	t.Helper()
	peer.Store(int64(pid))
	c := dialRaw(t, s.Path())
	if got := c.recv(); got != want {
		t.Fatalf("a refused connection of pid %d: %s\nwant %s", pid, got, want)
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("a refused connection of pid %d was not closed: %v", pid, err)
	}
}

const overCapWant = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many control connections: 128 are open (the limit, control.MaxConnections); close one and retry"}}`

// Connections over MaxConnections get one error line and are closed; the
// ones already open go on, and a slot freed is usable again. The socket
// fills from several processes, each within its share.
func TestConnectionCap(t *testing.T) {
	var logs syncBuffer
	s, peer := startWithPeers(t, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	conns := make([]*rawConn, MaxConnections)
	for i := range conns {
		conns[i] = dialAs(t, s, peer, 1000+i%4) // 4 processes, 32 each
	}
	for i := 0; i < 5; i++ {
		refusedAs(t, s, peer, 2000+i, overCapWant) // a new process is refused too
	}
	if n := s.Connections(); n != MaxConnections {
		t.Fatalf("%d connections, want %d", n, MaxConnections)
	}
	if n := strings.Count(logs.String(), "too many control connections"); n != 1 {
		t.Errorf("%d log lines for 5 refused connections, want 1:\n%s", n, logs.String())
	}
	if got := conns[0].call(`{"jsonrpc":"2.0","id":2,"method":"identity"}`); !strings.Contains(got, `"id":2,"result"`) {
		t.Fatalf("an open connection stopped working: %s", got)
	}
	conns[0].nc.Close()
	if !waitUntil(5*time.Second, func() bool { return s.Connections() < MaxConnections }) {
		t.Fatal("a closed connection was not dropped")
	}
	peer.Store(2000)
	c := dialRaw(t, s.Path())
	if got := c.call(`{"jsonrpc":"2.0","id":3,"method":"prompt","params":{"text":"x"}}`); got != `{"jsonrpc":"2.0","id":3,"result":{"accepted":true}}` {
		t.Fatalf("a freed slot: %s", got)
	}
}

// One process may hold MaxConnectionsPerProcess connections and no more,
// refused the way the global cap refuses; another process still gets the
// reserve, up to MaxConnections in all, and a connection the first closes
// is its to open again.
func TestOneProcessCannotTakeTheReserve(t *testing.T) {
	var logs syncBuffer
	s, peer := startWithPeers(t, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	const flood, other = 4242, 4343
	held := make([]*rawConn, MaxConnectionsPerProcess)
	for i := range held {
		held[i] = dialAs(t, s, peer, flood)
	}
	overShare := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many control connections from one process: pid 4242 holds 120 (the limit per process, control.MaxConnectionsPerProcess; the other control.ReservedConnections are kept for other processes); close one and retry"}}`
	for i := 0; i < 3; i++ {
		refusedAs(t, s, peer, flood, overShare)
	}
	if n := strings.Count(logs.String(), "too many control connections from one process"); n != 1 {
		t.Errorf("%d log lines for 3 refused connections, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "pid=4242") {
		t.Errorf("the log does not name the process:\n%s", logs.String())
	}
	// The owner gets in and may mutate; the reserve is all another process's.
	owner := dialAs(t, s, peer, other)
	if got := owner.call(`{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"x"}}`); got != `{"jsonrpc":"2.0","id":2,"result":{"accepted":true}}` {
		t.Fatalf("the owner beside a process at its share: %s", got)
	}
	for i := 1; i < ReservedConnections; i++ {
		dialAs(t, s, peer, other)
	}
	refusedAs(t, s, peer, other, overCapWant)
	if n := s.Connections(); n != MaxConnections {
		t.Fatalf("%d connections, want %d", n, MaxConnections)
	}
	// Closed connections are given back to their process's share: the
	// flooding process may open the two it closed and no more, while a
	// slot the other process freed stays free for it.
	held[0].nc.Close()
	held[1].nc.Close()
	owner.nc.Close()
	if !waitUntil(5*time.Second, func() bool { return s.Connections() == MaxConnections-3 }) {
		t.Fatal("closed connections were not dropped")
	}
	dialAs(t, s, peer, flood)
	dialAs(t, s, peer, flood)
	refusedAs(t, s, peer, flood, overShare)
	dialAs(t, s, peer, other)
}

// Where the system does not tell the peer's pid, only the global cap
// applies: connections of unknown processes are not counted as one.
func TestUnknownPeerHasNoShare(t *testing.T) {
	s := NewServer(Config{Path: sockPath(t)})
	s.peerCred = func(*net.UnixConn) (int, int, error) { return -1, 0, errNoPeerCred }
	s.maxConns, s.maxPerProcess = 6, 2
	registerRun(s, newFakeRuntime(), runOptions{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 6; i++ {
		c := dialRaw(t, s.Path())
		if got := c.call(`{"jsonrpc":"2.0","id":1,"method":"identity"}`); !strings.Contains(got, `"result"`) {
			t.Fatalf("connection %d: %s", i+1, got)
		}
	}
	c := dialRaw(t, s.Path())
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many control connections: 6 are open (the limit, control.MaxConnections); close one and retry"}}`
	if got := c.recv(); got != want {
		t.Fatalf("over the cap: %s", got)
	}
}

// A line refused for its length holds no buffer: connections that each
// send more than MaxRequestLine without a newline are answered -32600 and
// closed, and pin nothing.
func TestRefusedLineReleasesItsBuffer(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	const n = 8
	payload := bytes.Repeat([]byte("x"), MaxRequestLine+2<<20)
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, s.Path())
	}
	before := heapInUse()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.nc.Write(payload) // fails once the server closes
		}()
	}
	wg.Wait()
	for i, c := range conns {
		if got := c.recv(); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "request line exceeds 4 MiB") {
			t.Fatalf("connection %d: %s", i, got)
		}
	}
	if !waitUntil(5*time.Second, func() bool { return s.Connections() == 0 }) {
		t.Fatalf("%d connections still open after their over-long lines", s.Connections())
	}
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(payload) // measured on both sides
	t.Logf("heap grew %d KiB with %d connections refused for over-long lines", grown>>10, n)
	if limit := int64(n) * 1 << 20; grown > limit {
		t.Errorf("heap grew %d MiB after %d connections were refused for over-long lines; want under %d MiB", grown>>20, n, limit>>20)
	}
	if u := s.budget.inUse(); u != 0 {
		t.Errorf("%d bytes of the line budget still taken", u)
	}
}

// TestPendingRequestLinesBounded: many connections each sending a line
// just under MaxRequestLine and no newline hold at most
// MaxPendingRequestBytes together; the connections past it are answered
// -32000 and closed. When the clients go, the buffers go with them and
// the memory is handed back to the system.
func TestPendingRequestLinesBounded(t *testing.T) {
	s := startRun(t, newFakeRuntime(), runOptions{}, Config{})
	const n = 40
	payload := bytes.Repeat([]byte("x"), MaxRequestLine-1)
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, s.Path())
	}
	before := heapInUse()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.nc.Write(payload)
		}()
	}
	wg.Wait()
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(payload)
	refused := 0
	for i, c := range conns {
		_ = c.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		line, err := c.r.ReadString('\n')
		switch {
		case err == nil && strings.Contains(line, `"code":-32000`) && strings.Contains(line, "MaxPendingRequestBytes"):
			refused++
		case errors.Is(err, os.ErrDeadlineExceeded):
		default:
			t.Fatalf("connection %d: %q, %v", i, line, err)
		}
	}
	t.Logf("%d connections with 4 MiB unfinished lines: heap grew %d MiB, %d refused, budget in use %d MiB",
		n, grown>>20, refused, s.budget.inUse()>>20)
	if limit := int64(MaxPendingRequestBytes + n*(readerBuffer+keepLineBuffer) + 8<<20); grown > limit {
		t.Errorf("heap grew %d MiB, want at most %d MiB", grown>>20, limit>>20)
	}
	if refused < n-MaxPendingRequestBytes/(MaxRequestLine-keepLineBuffer) {
		t.Errorf("%d connections refused, want those past MaxPendingRequestBytes", refused)
	}
	for _, c := range conns {
		c.nc.Close()
	}
	if !waitUntil(5*time.Second, func() bool { return s.Connections() == 0 }) {
		t.Fatalf("%d connections still open", s.Connections())
	}
	if u := s.budget.inUse(); u != 0 {
		t.Errorf("%d bytes of the line budget still taken after every connection closed", u)
	}
	if after := int64(heapInUse()) - int64(before); after > 8<<20 {
		t.Errorf("heap still %d MiB above its start after the connections closed", after>>20)
	}
	// Handed back to the system: what the runtime holds from the OS for
	// the heap drops to near the live heap.
	var m runtime.MemStats
	held := func() int64 {
		runtime.ReadMemStats(&m)
		return int64(m.HeapSys-m.HeapReleased) - int64(m.HeapAlloc)
	}
	if !waitUntil(5*time.Second, func() bool { return held() < 16<<20 }) {
		t.Errorf("the heap keeps %d MiB of free memory from the system after the connections closed", held()>>20)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A mutating call that fails takes no ownership: another connection may
// still mutate. One that succeeds does, and a later failure keeps it.
func TestFailingMutatingCallTakesNoOwnership(t *testing.T) {
	rt := newFakeRuntime()
	s := startRun(t, rt, runOptions{RunID: "run1"}, Config{})
	a, b := dialRaw(t, s.Path()), dialRaw(t, s.Path())
	for _, m := range []string{
		`"method":"prompt","params":{"text":""}`,
		`"method":"prompt","params":{"text":"after the end"}`,
		`"method":"cancel","params":{"runtime_id":"other"}`,
		`"method":"answer_permission","params":{"request_id":"p","option_id":"o"}`,
		`"method":"interrupt_and_prompt","params":{"text":1}`,
	} {
		if got := a.call(`{"jsonrpc":"2.0","id":1,` + m + `}`); !strings.Contains(got, `"error"`) {
			t.Fatalf("%s: %s", m, got)
		}
	}
	if got := b.call(`{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"b"}}`); got != `{"jsonrpc":"2.0","id":2,"result":{"accepted":true}}` {
		t.Fatalf("after another connection's failed mutations: %s", got)
	}
	if got := b.call(`{"jsonrpc":"2.0","id":3,"method":"prompt","params":{"text":""}}`); !strings.Contains(got, `"code":-32602`) {
		t.Fatalf("owner's failing call: %s", got)
	}
	if got := a.call(`{"jsonrpc":"2.0","id":4,"method":"prompt","params":{"text":"a"}}`); !strings.Contains(got, `"code":-32010`) {
		t.Fatalf("the owner's failing call gave its ownership away: %s", got)
	}
	// A notification that fails takes nothing either.
	c := dialRaw(t, s.Path())
	b.nc.Close()
	if !waitUntil(5*time.Second, func() bool { return s.Connections() == 2 }) {
		t.Fatal("the owner's connection was not dropped")
	}
	c.send(`{"jsonrpc":"2.0","method":"prompt","params":{"text":""}}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"status"}`) // the notification has run
	if got := a.call(`{"jsonrpc":"2.0","id":5,"method":"prompt","params":{"text":"a"}}`); got != `{"jsonrpc":"2.0","id":5,"result":{"accepted":true}}` {
		t.Fatalf("after a failed notification: %s", got)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if strings.Join(rt.prompts, ",") != "b,a" || rt.cancels != 0 {
		t.Errorf("runtime saw prompts %q cancels %d", rt.prompts, rt.cancels)
	}
}

func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
