package procsession

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

type recHost struct {
	mu     sync.Mutex
	evs    []runtime.Event
	procs  []runtime.ProcessInfo
	logger hclog.Logger
}

func (h *recHost) Emit(ev runtime.Event) { h.mu.Lock(); h.evs = append(h.evs, ev); h.mu.Unlock() }
func (h *recHost) AskPermission(context.Context, runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return runtime.PermissionDecision{}, nil
}
func (h *recHost) Logger() hclog.Logger                { return h.logger }
func (h *recHost) RecordProcess(p runtime.ProcessInfo) { h.procs = append(h.procs, p) }

func TestDefault(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in, out time.Duration
	}{
		{"zero takes the default", 0, 5 * time.Second},
		{"negative takes the default", -1, 5 * time.Second},
		{"set stays", time.Second, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.in
			Default(&d, 5*time.Second)
			if d != tt.out {
				t.Fatalf("got %v, want %v", d, tt.out)
			}
		})
	}
}

func TestNewLogger(t *testing.T) {
	own := hclog.New(&hclog.LoggerOptions{Name: "own"})
	hosts := hclog.New(&hclog.LoggerOptions{Name: "host"})
	for _, tt := range []struct {
		name         string
		cfg, host    hclog.Logger
		want         hclog.Logger
		wantNullName bool
	}{
		{"the config's first", own, hosts, own, false},
		{"else the host's", nil, hosts, hosts, false},
		{"else a null logger", nil, nil, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sk := New(Config{Backend: "x", Host: &recHost{logger: tt.host}, Logger: tt.cfg})
			if sk.Log == nil {
				t.Fatal("no logger")
			}
			if !tt.wantNullName && sk.Log != tt.want {
				t.Fatalf("got logger %q", sk.Log.Name())
			}
		})
	}
}

func TestNewGate(t *testing.T) {
	h := &recHost{}
	if sk := New(Config{Backend: "x", Host: h}); sk.Gate != nil {
		t.Fatal("a gate without MaxHeld")
	}
	sk := New(Config{Backend: "x", Host: h, MaxHeld: 1})
	if sk.Gate == nil {
		t.Fatal("no gate with MaxHeld")
	}
	sk.Gate.Emit(runtime.NewEvent(runtime.EventMessageChunk, map[string]any{"delta": "a"}))
	sk.Gate.Emit(runtime.NewEvent(runtime.EventMessageChunk, map[string]any{"delta": "b"}))
	// The runner opens the gate it was given when a turn begins.
	rt, err := sk.Runner.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sk.Runner.End(rt)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.evs) != 2 || h.evs[0].Fields["delta"] != "a" || h.evs[1].Type != runtime.EventWarning {
		t.Fatalf("events: %v", h.evs)
	}
}

func TestRecord(t *testing.T) {
	h := &recHost{}
	Record(h, runtime.ProcessInfo{PID: 7})
	if len(h.procs) != 1 || h.procs[0].PID != 7 {
		t.Fatalf("recorded %v", h.procs)
	}
}

type fakeConn struct {
	steps *[]string
	done  chan struct{}
}

func (c fakeConn) Close()                { *c.steps = append(*c.steps, "conn closed"); close(c.done) }
func (c fakeConn) Done() <-chan struct{} { return c.done }

func TestStopOrder(t *testing.T) {
	var steps []string
	c := fakeConn{steps: &steps, done: make(chan struct{})}
	sk := New(Config{Backend: "x"})
	stop := Stop{Conn: c, Then: func() { steps = append(steps, "then") }}
	sk.Runner.Close(stop.Run)
	sk.Runner.Close(stop.Run) // once only
	if got := strings.Join(steps, ", "); got != "conn closed, then" {
		t.Fatalf("steps: %s", got)
	}
	if !sk.Runner.Closed() {
		t.Fatal("runner not closed")
	}
}

func TestStopWaitsForWait(t *testing.T) {
	wait := make(chan struct{})
	done := make(chan struct{})
	go func() { Stop{Wait: wait}.Run(); close(done) }()
	select {
	case <-done:
		t.Fatal("Run returned before Wait closed")
	case <-time.After(50 * time.Millisecond):
	}
	close(wait)
	<-done
}
