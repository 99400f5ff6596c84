package ochttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// A harness often runs `opencode serve &` and avenor at once: these tests
// check that Open waits for a server that is still starting.

// freeAddr is a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// lateFakeServer is a fakeServer that starts listening on its address only
// after delay; until then a connection is refused.
func lateFakeServer(t *testing.T, delay time.Duration) (*fakeServer, string) {
	t.Helper()
	addr := freeAddr(t)
	f := newFakeState(t)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	started := make(chan struct{})
	timer := time.AfterFunc(delay, func() {
		defer close(started)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("late server: listening on %s: %v", addr, err)
			return
		}
		_ = f.srv.Listener.Close()
		f.srv.Listener = ln
		f.srv.Start()
	})
	t.Cleanup(func() {
		if !timer.Stop() {
			<-started
		}
		f.cut()
		f.srv.Close()
	})
	return f, "http://" + addr
}

func openURL(t *testing.T, url string, options map[string]any, budget time.Duration) (runtime.Session, time.Duration, error) {
	t.Helper()
	req := runtime.OpenRequest{Backend: Name, Dir: t.TempDir(), ServerURL: url, Options: options,
		Env: map[string]string{ServerURLEnv: "", PasswordEnv: ""}}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	s, err := New().Open(ctx, req, &fakeHost{})
	if s != nil {
		t.Cleanup(func() { _ = s.Close(context.Background()) })
	}
	return s, time.Since(start), err
}

func TestHealthWaitsForLateServer(t *testing.T) {
	f, url := lateFakeServer(t, 1500*time.Millisecond)
	s, took, err := openURL(t, url, nil, 30*time.Second)
	if err != nil {
		t.Fatalf("Open against a server listening 1.5 s later: %v", err)
	}
	t.Logf("opened after %v", took.Round(time.Millisecond))
	if took < 1500*time.Millisecond {
		t.Errorf("opened after %v, before the server listened", took)
	}
	if r := prompt(t, s, "hi"); r.FinalOutput != "DONE" {
		t.Errorf("turn = %+v", r)
	}
	_ = f
}

func TestHealthRetriesHungConnection(t *testing.T) {
	f := newFakeState(t)
	var mu sync.Mutex
	var remotes []string
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/global/health" {
			mu.Lock()
			remotes = append(remotes, r.RemoteAddr)
			first := len(remotes) == 1
			mu.Unlock()
			if first { // accepted, never answered: opencode still starting
				<-r.Context().Done()
				return
			}
		}
		f.serve(w, r)
	}))
	t.Cleanup(func() { f.cut(); f.srv.Close() })
	_, took, err := openURL(t, f.URL(), nil, 30*time.Second)
	if err != nil {
		t.Fatalf("Open after a hung first health request: %v", err)
	}
	t.Logf("opened after %v", took.Round(time.Millisecond))
	if took > HealthTryTimeout+3*time.Second {
		t.Errorf("opened after %v: the hung try was not cut at %s", took, HealthTryTimeout)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) < 2 || remotes[0] == remotes[1] {
		t.Errorf("health requests came from %v, want a second try on a fresh connection", remotes)
	}
}

func TestHealthGivesUpAfterBudget(t *testing.T) {
	url := "http://" + freeAddr(t)
	_, took, err := openURL(t, url, map[string]any{HealthTimeoutOption: "1500ms"}, 30*time.Second)
	if err == nil {
		t.Fatal("Open against no server succeeded")
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if took < 1500*time.Millisecond || took > 1500*time.Millisecond+HealthTryTimeout+time.Second {
		t.Errorf("failed after %v, want about the 1.5 s budget", took)
	}
	msg := err.Error()
	for _, want := range []string{url, "GET /global/health", "tries", "connection refused", HealthTimeoutOption} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if runtime.FaultOf(err) != runtime.FaultRuntime {
		t.Errorf("fault = %v, want the runtime's", runtime.FaultOf(err))
	}
}

// TestHealthDoesNotRetryRefusals: an answer that will not change (wrong
// password, not an OpenCode server) fails at once, not after the budget.
func TestHealthDoesNotRetryRefusals(t *testing.T) {
	f := newFakeServer(t)
	f.password = "sekret"
	_, took, err := openURL(t, f.URL(), nil, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "401") || took > time.Second {
		t.Errorf("wrong password: %v after %v, want a 401 at once", err, took)
	}
	if n := len(f.callList()); n != 1 {
		t.Errorf("%d calls for a 401, want 1", n)
	}
	notOpencode := httptest.NewServer(http.NotFoundHandler())
	defer notOpencode.Close()
	_, took, err = openURL(t, notOpencode.URL, nil, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not found") || took > time.Second {
		t.Errorf("a server without /global/health: %v after %v, want an error at once", err, took)
	}
}

func TestHealthTimeoutOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want time.Duration // 0: an error
	}{
		{"absent", nil, DefaultHealthTimeout},
		{"duration", "90s", 90 * time.Second},
		{"seconds as TOML integer", float64(5), 5 * time.Second},
		{"seconds as int64", int64(7), 7 * time.Second},
		{"zero", "0s", 0},
		{"negative", float64(-1), 0},
		{"not a duration", "soon", 0},
		{"bool", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{}
			if tc.v != nil {
				opts[HealthTimeoutOption] = tc.v
			}
			got, err := healthBudget(opts)
			switch {
			case tc.want == 0 && (err == nil || runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), HealthTimeoutOption)):
				t.Errorf("healthBudget(%v) = %v, %v; want a user error naming %s", tc.v, got, err, HealthTimeoutOption)
			case tc.want != 0 && (err != nil || got != tc.want):
				t.Errorf("healthBudget(%v) = %v, %v; want %v", tc.v, got, err, tc.want)
			}
		})
	}
}

// TestHealthStopsWithTheRun: a run cancelled or timed out while the
// server is still down stops waiting at once, and says so.
func TestHealthStopsWithTheRun(t *testing.T) {
	url := "http://" + freeAddr(t)
	_, took, err := openURL(t, url, nil, 700*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "stopped waiting") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Open with a 700 ms context: %v", err)
	}
	if took > 700*time.Millisecond+500*time.Millisecond {
		t.Errorf("Open returned %v after the context ended at 700ms", took-700*time.Millisecond)
	}
}
