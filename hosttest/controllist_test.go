package hosttest

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/creack/pty"
)

// TestControlListTable: `avenor control list` prints a table when stdout is
// a terminal, and the unchanged JSON with --json or when it is not.
func TestControlListTable(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("list", nil)
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Label: "gate", Prompt: `permission tool=bash question="may I run make?"`})
	waitRuntime(t, c, sp.RuntimeID, 20*time.Second, "a pending permission", func(r client.Runtime) bool { return r.PendingPermission })

	res := w.run("control", "--socket", s.sock, "list")
	var entries []map[string]any
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &entries) != nil || len(entries) != 1 {
		t.Fatalf("list without a terminal is not the JSON array: %v", res)
	}
	if len(entries[0]) < 10 {
		t.Errorf("the JSON entry lost fields: %v", entries[0])
	}
	if res2 := w.run("control", "--socket", s.sock, "list", "--json"); res2.stdout != res.stdout {
		t.Errorf("--json differs from the default JSON:\n%s\n%s", res2.stdout, res.stdout)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.avenor, "control", "--socket", s.sock, "list")
	cmd.Env, cmd.Stdout, cmd.Stderr = w.env, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := ptmx.Read(buf)
		screen.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("list on a terminal: %v\n%s", err, screen.String())
	}
	out := screen.String()
	for _, want := range []string{"ID", "LABEL", "BACKEND", "STATUS", "PHASE", "AGE", "TOKENS", "PERMISSION", sp.RuntimeID, "gate", "scripted", "pending: may I run make?"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "{") {
		t.Errorf("JSON on a terminal:\n%s", out)
	}
}
