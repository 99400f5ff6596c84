package hosttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/fleet"
)

// supervisor is a running `avenor stable`.
type supervisor struct {
	*proc
	w    *world
	sock string
}

// startStable starts `avenor stable --control-socket <tmp>/<name>.sock args…`
// and waits until its socket answers.
func (w *world) startStable(name string, extraEnv []string, args ...string) *supervisor {
	w.t.Helper()
	sock := filepath.Join(w.tmp, name+".sock")
	p := w.start(extraEnv, append([]string{"stable", "--control-socket", sock}, args...)...)
	s := &supervisor{proc: p, w: w, sock: sock}
	listen := 10 * time.Second
	if slices.Contains(args, "--fleet") {
		// A fleet node listens once the fleet is set up, which waits for
		// a cluster still electing its leader.
		listen += fleet.SetupTimeout
	}
	if !waitFor(listen, func() bool {
		c, err := client.Dial(context.Background(), sock)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}) {
		w.t.Fatalf("avenor stable did not listen on %s: %s", sock, p.stderr.String())
	}
	return s
}

// client dials the supervisor; the test closes it at its end.
func (s *supervisor) client() *client.Client {
	s.w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, s.sock)
	if err != nil {
		s.w.t.Fatalf("dialing %s: %v", s.sock, err)
	}
	s.w.t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// spawn spawns a runtime and fails the test on an error.
func spawn(t *testing.T, c *client.Client, p client.SpawnParams) client.Spawned {
	t.Helper()
	sp, err := c.Spawn(ctxT(t, 30*time.Second), p)
	if err != nil {
		t.Fatalf("spawn %+v: %v", p, err)
	}
	if sp.RuntimeID == "" {
		t.Fatalf("spawn %+v answered no runtime_id: %s", p, sp.Raw)
	}
	return sp
}

// runtimeOf returns a runtime's entry. The deadline leaves room for a fleet
// read whose first reply was lost with a NATS server (fleet.ReadAttemptTimeout).
func runtimeOf(t *testing.T, c *client.Client, id string) client.Runtime {
	t.Helper()
	rt, err := c.Runtime(ctxT(t, 15*time.Second), id)
	if err != nil {
		t.Fatalf("status %s: %v", id, err)
	}
	return rt
}

// waitRuntime polls a runtime's entry until cond holds.
func waitRuntime(t *testing.T, c *client.Client, id string, d time.Duration, what string, cond func(client.Runtime) bool) client.Runtime {
	t.Helper()
	var rt client.Runtime
	if !waitFor(d, func() bool {
		rt = runtimeOf(t, c, id)
		return cond(rt)
	}) {
		t.Fatalf("%s: %s not %s within %v: %s", t.Name(), id, what, d, rt.Raw)
	}
	return rt
}

// waitEnded waits until a runtime's run has ended: parked (status idle
// while it takes follow-ups, ended when it cannot) or gone.
func waitEnded(t *testing.T, c *client.Client, id string, d time.Duration) client.Runtime {
	t.Helper()
	return waitRuntime(t, c, id, d, "ended", func(rt client.Runtime) bool { return rt.Parked || rt.Status == "ended" })
}

// checkStream checks a runtime's NDJSON log: seq 1..n without gaps, every
// event stamped with the runtime id, the last one a session.end.
func checkStream(t *testing.T, path, runtimeID string) []event {
	t.Helper()
	evs := readEvents(t, path)
	for i, ev := range evs {
		if seq, _ := ev.num("seq"); seq != float64(i+1) {
			t.Fatalf("%s: event %d (%s) has seq %v", path, i+1, ev.name(), ev["seq"])
		}
		if got := ev.str("runtime_id"); got != runtimeID {
			t.Fatalf("%s: event %d (%s) has runtime_id %q, want %q", path, i+1, ev.name(), got, runtimeID)
		}
	}
	lastSessionEnd(t, evs)
	return evs
}

// rpcError returns err's *client.RPCError or fails.
func rpcError(t *testing.T, err error) *client.RPCError {
	t.Helper()
	var re *client.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("want an RPC error, got %v", err)
	}
	return re
}

// tombstone waits for <socket>.dead and checks its one line.
func (s *supervisor) tombstone(reason string) {
	t := s.w.t
	t.Helper()
	b, err := os.ReadFile(s.sock + ".dead")
	if err != nil {
		t.Fatalf("tombstone: %v", err)
	}
	line := string(b)
	want := fmt.Sprintf("STOPPED reason=%s pid=%d at=", reason, s.pid())
	if !strings.HasPrefix(line, want) || !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("tombstone %q, want %q…", line, want)
	}
	at := strings.TrimSpace(strings.TrimPrefix(line, want))
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
		t.Fatalf("tombstone time %q: %v", at, err)
	}
}

// exited waits for the supervisor to exit with code.
func (s *supervisor) exited(code int, within time.Duration) result {
	t := s.w.t
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- s.wait() }()
	select {
	case r := <-done:
		if r.code != code {
			t.Fatalf("avenor stable: %v, want exit %d", r, code)
		}
		return r
	case <-time.After(within):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("avenor stable still running %v later", within)
	}
	return result{}
}
