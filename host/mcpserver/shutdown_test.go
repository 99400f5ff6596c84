package mcpserver

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShutdownNotASupervisor: avenor_shutdown on a socket where something
// that is not an avenor supervisor listens says so and stops nothing;
// where nothing listens there is nothing to stop.
func TestShutdownNotASupervisor(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("220 hello, I speak another protocol\n"))
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()

	p := newSupervisors(&Options{SupervisorSocket: other})
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped, err := p.shutdown(ctx, other, "graceful")
	if err == nil || stopped || !strings.Contains(err.Error(), "not an avenor supervisor") {
		t.Errorf("shutdown of a foreign socket: stopped %v, err %v; want an error saying it is not an avenor supervisor", stopped, err)
	}
	// A socket left by a supervisor that died: nobody listens on it.
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	sl.SetUnlinkOnClose(false)
	sl.Close()
	for _, missing := range []string{filepath.Join(dir, "none.sock"), stale} {
		if stopped, err := p.shutdown(ctx, missing, "graceful"); err != nil || stopped {
			t.Errorf("shutdown where nothing listens: stopped %v, err %v; want nothing to stop", stopped, err)
		}
	}
}
