package scripted_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// testHost records what a session emits, answers permissions with answer
// (nil: never, wait until the turn ends) and records reported processes.
type testHost struct {
	answer func(runtime.PermissionRequest) runtime.PermissionDecision

	mu     sync.Mutex
	events []runtime.Event
	asked  []runtime.PermissionRequest
	procs  []runtime.ProcessInfo
}

func (h *testHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *testHost) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.asked = append(h.asked, req)
	h.mu.Unlock()
	if h.answer == nil {
		<-ctx.Done()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
	return h.answer(req), nil
}

func (h *testHost) RecordProcess(p runtime.ProcessInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.procs = append(h.procs, p)
}

func (h *testHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *testHost) snapshot() []runtime.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.Event(nil), h.events...)
}

func (h *testHost) types() []runtime.EventType {
	var out []runtime.EventType
	for _, ev := range h.snapshot() {
		out = append(out, ev.Type)
	}
	return out
}

func (h *testHost) permissions() []runtime.PermissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.PermissionRequest(nil), h.asked...)
}

// text concatenates the text of every event of type typ.
func (h *testHost) text(typ runtime.EventType) string {
	var b strings.Builder
	for _, ev := range h.snapshot() {
		if ev.Type == typ {
			c, _ := ev.Fields["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// waitText polls until the message text contains want.
func (h *testHost) waitText(t *testing.T, want string) {
	t.Helper()
	waitUntil(t, "message text "+strconv.Quote(want), func() bool {
		return strings.Contains(h.text(runtime.EventMessageChunk), want)
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func allow(id, kind string) func(runtime.PermissionRequest) runtime.PermissionDecision {
	return func(runtime.PermissionRequest) runtime.PermissionDecision {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: id, Kind: kind}
	}
}

// serve serves scripted in process over real gRPC.
func serve(t *testing.T) *plugin.Client {
	t.Helper()
	c, err := plugin.ServeInProcess(context.Background(), plugin.Info{Name: "scripted", Version: scripted.Version}, nil, scripted.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

func backend(t *testing.T, c *plugin.Client) runtime.Backend {
	t.Helper()
	b, ok := c.Backend(scripted.Name)
	if !ok {
		t.Fatalf("plugin does not serve %q", scripted.Name)
	}
	return b
}

type fixture struct {
	sess runtime.Session
	host *testHost
	dir  string
}

func openWith(t *testing.T, b runtime.Backend, req runtime.OpenRequest, host *testHost) fixture {
	t.Helper()
	if req.Dir == "" {
		req.Dir = t.TempDir()
	}
	if req.StateDir == "" {
		req.StateDir = t.TempDir()
	}
	req.Backend = scripted.Name
	sess, err := b.Open(context.Background(), req, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	return fixture{sess: sess, host: host, dir: req.Dir}
}

// run prompts in a goroutine; the result arrives on the channel.
func (f fixture) run(script string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		res, err := f.sess.Prompt(context.Background(), runtime.Turn{ID: "turn", Text: script})
		ch <- result{res, err}
	}()
	return ch
}

type result struct {
	res runtime.TurnResult
	err error
}

func await(t *testing.T, ch <-chan result, within time.Duration) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("the turn did not end within %v", within)
		return result{}
	}
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %s holds %q", path, data)
	}
	return pid
}
