package control

import (
	"bufio"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fixedNow = func() time.Time { return time.UnixMilli(1700000000000) }

// fakeRuntime records what the one-shot methods ask of it.
type fakeRuntime struct {
	w *event.Writer

	mu         sync.Mutex
	prompts    []string
	interrupts []string
	keepQueue  []bool
	cancels    int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{w: event.NewWriter(nil, event.Stamp{RunID: "run1", Now: fixedNow}, event.Options{})}
}

func (f *fakeRuntime) Status() hostrt.Status {
	return hostrt.Status{
		SessionID: "ses_1", RunID: "run1", Phase: "working", PhaseLabel: "go test ./...", LastEvent: "tool.call",
		RetryAttempt: 1, MaxRetries: 3, StartedAt: 1700000000000, UpdatedAt: 1700000001000,
		TurnState: hostrt.TurnRunning, LatestSeq: f.w.LatestSeq(), PID: 42,
	}
}

func (f *fakeRuntime) Prompt(text string) error {
	if text == "after the end" {
		return hostrt.ErrRunEnded
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prompts = append(f.prompts, text)
	return nil
}

func (f *fakeRuntime) InterruptAndPrompt(text string, keep bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interrupts = append(f.interrupts, text)
	f.keepQueue = append(f.keepQueue, keep)
	return nil
}

func (f *fakeRuntime) Cancel() {
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
}

func (f *fakeRuntime) Events() *event.Writer { return f.w }

func (f *fakeRuntime) write(t *testing.T, ev event.Event) event.Event {
	t.Helper()
	out, err := f.w.Write(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sockPath is a short socket path (sun_path is 108 bytes) in a fresh dir.
func sockPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ctl", "s.sock")
}

// startRun starts a one-shot server on a fresh socket.
func startRun(t *testing.T, rt Runtime, opts RunOptions, cfg Config) *Server {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = sockPath(t)
	}
	s := NewServer(cfg)
	RegisterRun(s, rt, opts)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawConn is a line-level test client.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
	// queued lines are returned by recv before the connection's.
	queued []string
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := c.nc.Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) recv() string {
	c.t.Helper()
	if len(c.queued) > 0 {
		l := c.queued[0]
		c.queued = c.queued[1:]
		return l
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a line: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// call sends a request and returns the next line.
func (c *rawConn) call(line string) string {
	c.t.Helper()
	c.send(line)
	return c.recv()
}
