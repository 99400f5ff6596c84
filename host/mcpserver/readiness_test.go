package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReadinessError: what a spawn whose backend cannot run says, by case.
func TestReadinessError(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Readiness
		want []string // substrings; none: no error
	}{
		{"ready", Readiness{Backend: "echo", Ready: true}, nil},
		{"cli missing", Readiness{Backend: "opencode-acp", Message: "opencode not found on PATH: install it with npm i -g opencode-ai"},
			[]string{"backend opencode-acp is not usable here", "npm i -g opencode-ai", "avenor_list_backends"}},
		{"not logged in", Readiness{Backend: "claude", Message: "not logged in: run claude /login"},
			[]string{"backend claude is not usable here", "run claude /login"}},
		{"no message", Readiness{Backend: "pi"}, []string{"backend pi is not usable here", "readiness check failed"}},
		{"unknown", Readiness{Backend: "nosuch", Unknown: true, Installed: []string{"claude", "echo"}},
			[]string{`unknown backend "nosuch"`, "installed backends: claude, echo"}},
		{"unknown, none installed", Readiness{Backend: "nosuch", Unknown: true}, []string{`unknown backend "nosuch"`, "none", "avenor plugin install"}},
		{"plugin does not start", Readiness{Backend: "codex-app-server", Err: errors.New("pin mismatch")},
			[]string{"backend codex-app-server cannot be started here: pin mismatch"}},
	} {
		err := readinessError(c.r)
		if (err == nil) != (c.want == nil) {
			t.Errorf("%s: error %v", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestCheckReadyCaches: a ready backend is not checked again within
// ReadyCacheTTL; one that is not ready is checked at every spawn.
func TestCheckReadyCaches(t *testing.T) {
	calls := 0
	ready := false
	s := &Server{o: Options{CheckBackend: func(_ context.Context, dir, backend string) Readiness {
		calls++
		return Readiness{Backend: backend, Ready: ready, Message: "install it"}
	}}}
	ctx := context.Background()
	for range 2 {
		if err := s.checkReady(ctx, "/d", "x"); err == nil {
			t.Fatal("a backend that is not ready passed")
		}
	}
	ready = true
	for range 2 {
		if err := s.checkReady(ctx, "/d", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 3 {
		t.Errorf("%d checks, want 3 (each failing one, then one for the ready backend)", calls)
	}
	s.ready.at[[2]string{"/d", "x"}] = time.Now().Add(-ReadyCacheTTL)
	_ = s.checkReady(ctx, "/d", "x")
	if calls != 4 {
		t.Errorf("an expired entry was not checked again (%d checks)", calls)
	}
}

// TestNextStepWithoutSession: a run that ended before its session opened
// is not advised a follow-up (there is nothing to continue).
func TestNextStepWithoutSession(t *testing.T) {
	for _, out := range []resultOut{
		{Status: StatusFailed, Ready: true, StopReason: "error"},
		{Status: StatusDone, Ready: true},
	} {
		if n := nextStep(out); strings.Contains(n, "avenor_follow_up") || !strings.Contains(n, "spawn again") {
			t.Errorf("%+v: next %q", out, n)
		}
	}
	if n := nextStep(resultOut{Status: StatusFailed, Ready: true, SessionID: "s1", StopReason: "error"}); !strings.Contains(n, "avenor_follow_up") {
		t.Errorf("a failed run with a session: next %q", n)
	}
}
