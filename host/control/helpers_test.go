package control

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fixedNow = func() time.Time { return time.UnixMilli(1700000000000) }

// errRunEnded is what the fake answers a prompt of "after the end" with,
// as a runner whose run has ended does.
var errRunEnded = errors.New("the run has ended")

// fakeRuntime is a Target that records what the methods ask of it;
// perm, when set, answers permissions.
type fakeRuntime struct {
	w    *event.Writer
	perm PermissionAnswerer

	mu         sync.Mutex
	prompts    []string
	interrupts []string
	keepQueue  []bool
	cancels    int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{w: event.NewWriter(nil, event.Stamp{RunID: "run1", Now: fixedNow}, event.Options{})}
}

func (f *fakeRuntime) ID() string { return "" }

func (f *fakeRuntime) Status() any {
	return Status{
		SessionID: "ses_1", RunID: "run1", Phase: "working", PhaseLabel: "go test ./...", LastEvent: "tool.call",
		RetryAttempt: 1, MaxRetries: 3, StartedAt: 1700000000000, UpdatedAt: 1700000001000,
		TurnState: TurnRunning, LatestSeq: f.w.LatestSeq(), PID: 42,
	}
}

func (f *fakeRuntime) Prompt(_ context.Context, text string, interrupt, keep bool) error {
	if text == "after the end" {
		return errRunEnded
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if interrupt {
		f.interrupts = append(f.interrupts, text)
		f.keepQueue = append(f.keepQueue, keep)
	} else {
		f.prompts = append(f.prompts, text)
	}
	return nil
}

// Result is the final_output of the latest session.end in the history.
func (f *fakeRuntime) Result() any {
	h := f.w.History(0, 0)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Type() == event.TypeSessionEnd {
			final, _ := h[i]["final_output"].(string)
			return map[string]any{"final_output": final}
		}
	}
	return map[string]any{"final_output": ""}
}

func (f *fakeRuntime) AnswerPermission(requestID, optionID, message string) error {
	if f.perm == nil {
		return ErrNoPendingPermission
	}
	return f.perm.Answer(requestID, optionID, message)
}

func (f *fakeRuntime) AnswerPermissionAs(source, requestID, optionID, message string) error {
	if f.perm == nil {
		return ErrNoPendingPermission
	}
	if sa, ok := f.perm.(SourcedAnswerer); ok {
		return sa.AnswerAs(source, requestID, optionID, message)
	}
	return f.perm.Answer(requestID, optionID, message)
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

// runOptions are a supervisor of one's: its run id and the fake's
// permission answerer.
type runOptions struct {
	RunID       string
	Permissions PermissionAnswerer
}

// registerRun registers the table of a supervisor of one over rt.
func registerRun(s *Server, rt *fakeRuntime, opts runOptions) {
	rt.perm = opts.Permissions
	RegisterOne(s, rt, opts.RunID)
}

// startRun starts a supervisor of one on a fresh socket.
func startRun(t *testing.T, rt *fakeRuntime, opts runOptions, cfg Config) *Server {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = sockPath(t)
	}
	s := NewServer(cfg)
	registerRun(s, rt, opts)
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
