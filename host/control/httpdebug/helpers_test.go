package httpdebug

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fixedNow = func() time.Time { return time.UnixMilli(1700000000000) }

// fakeRuntime is a run: a real event writer logging to a buffer, a status
// and a cancel counter.
type fakeRuntime struct {
	w   *event.Writer
	log bytes.Buffer // written only inside w.Write, read by the test between writes

	mu      sync.Mutex
	cancels int
}

func newFakeRuntime(runtimeID string) *fakeRuntime {
	f := &fakeRuntime{}
	f.w = event.NewWriter(&f.log, event.Stamp{RunID: "run1", RuntimeID: runtimeID, Now: fixedNow}, event.Options{})
	return f
}

func (f *fakeRuntime) Status() control.Status {
	return control.Status{SessionID: "ses_1", RunID: "run1", Phase: "working", TurnState: control.TurnRunning,
		RetryAttempt: 1, StartedAt: 1700000000000, UpdatedAt: 1700000001000, LatestSeq: f.w.LatestSeq(), PID: 42}
}

func (f *fakeRuntime) Cancel() {
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
}

func (f *fakeRuntime) Events() *event.Writer { return f.w }

func (f *fakeRuntime) cancelled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancels
}

// newOneShot is the adapter's target of a run over rt; perms answers
// permissions (nil: every answer gets 409, as -32001 on the socket).
func newOneShot(rt *fakeRuntime, perms control.PermissionAnswerer) *TableTarget {
	return NewTableTarget(fakeTarget{rt, perms}, func() bool { return perms != nil && perms.Pending() })
}

// fakeTarget is rt as a runtime of the method table.
type fakeTarget struct {
	*fakeRuntime
	perms control.PermissionAnswerer
}

func (f fakeTarget) Status() any { return f.fakeRuntime.Status() }

func (f fakeTarget) AnswerPermission(requestID, optionID, message string) error {
	if f.perms == nil {
		return ErrNoPendingPermission
	}
	return f.perms.Answer(requestID, optionID, message)
}

// write publishes ev and returns its NDJSON line without the newline.
func (f *fakeRuntime) write(t *testing.T, ev event.Event) []byte {
	t.Helper()
	before := f.log.Len()
	if _, err := f.w.Write(ev); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(append([]byte(nil), f.log.Bytes()[before:]...), []byte("\n"))
}

// fakeAnswerer is a control.PermissionAnswerer.
type fakeAnswerer struct {
	pending bool
	err     error

	mu  sync.Mutex
	got []string
}

func (a *fakeAnswerer) Pending() bool { return a.pending }

func (a *fakeAnswerer) Answer(req, opt, msg string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, req+" "+opt+" "+msg)
	return a.err
}

// start runs a server on 127.0.0.1:0; it is closed after the test.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// handlerOnly is a server that is not bound: requests go straight to its
// handler, with any peer address.
func handlerOnly(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// do sends one request to s's handler from peer, with the token unless
// token is "-".
func do(s *Server, peer, method, target, body, token string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	req.RemoteAddr = peer
	req.Host = "127.0.0.1:40000" // a browser or curl sends the address it dialled
	switch token {
	case "-":
	case "":
		req.Header.Set(TokenHeader, s.Token())
	default:
		req.Header.Set(TokenHeader, token)
	}
	rec := httptest.NewRecorder()
	s.serveHTTP(rec, req)
	return rec
}

// client is an HTTP client whose idle connections close with the test.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// get sends a request with the token header to a running server.
func request(t *testing.T, c *http.Client, s *Server, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(TokenHeader, s.Token())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
