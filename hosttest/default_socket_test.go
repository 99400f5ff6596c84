package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestDefaultSocket (docs/cli.md#avenor-control): `avenor stable` without
// --control-socket listens on ~/.avenor/sockets/default.sock (0700);
// `avenor control` and `avenor await` without --socket find it, or the
// socket of AVENOR_SOCKET; the board lists it and a supervisor whose
// socket lives elsewhere through its record in the state directory, and
// drops the record when it stops. An explicitly empty --socket or
// --control-socket keeps the original's "is required" error.
func TestDefaultSocket(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := filepath.Join(w.home, ".avenor", "sockets")
	def := filepath.Join(dir, "default.sock")
	sup := w.startGuarded(2*time.Minute, nil, "stable")
	dialable := func(p string) bool {
		c, err := client.Dial(context.Background(), p)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	if !waitFor(15*time.Second, func() bool { return dialable(def) }) {
		t.Fatalf("avenor stable without --control-socket did not listen on %s: %s", def, sup.stderr.String())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %v %v; want 0700", fi, err)
	}

	// control without --socket: the default.
	r := w.run("control", "spawn", "--backend", "scripted", "--prompt", "say found-by-default", "--label", "dflt")
	var sp client.Spawned
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sp) != nil || sp.RuntimeID == "" {
		t.Fatalf("avenor control spawn without --socket: %v", r)
	}
	if r := w.run("control", "status", sp.RuntimeID); r.code != 0 || !strings.Contains(r.stdout, sp.RuntimeID) {
		t.Errorf("avenor control status without --socket: %v", r)
	}
	// await without --socket: the default.
	aw := w.run("await", "dflt", "--until", "done", "--timeout", "30s", "--print-output")
	if aw.code != 0 || !strings.Contains(aw.stdout, "END done "+sp.RuntimeID) || !strings.Contains(aw.stdout, "found-by-default") {
		t.Errorf("avenor await without --socket: %v", aw)
	}

	// A supervisor elsewhere, named by AVENOR_SOCKET.
	other := w.path("elsewhere/other.sock")
	osup := w.startGuarded(2*time.Minute, nil, "stable", "--control-socket", other)
	if !waitFor(15*time.Second, func() bool { return dialable(other) }) {
		t.Fatalf("avenor stable on %s: %s", other, osup.stderr.String())
	}
	env := []string{client.SocketEnv + "=" + other}
	r = w.runEnv(env, "control", "spawn", "--backend", "scripted", "--prompt", "say via-env", "--label", "envd")
	var sp2 client.Spawned
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sp2) != nil {
		t.Fatalf("avenor control spawn with AVENOR_SOCKET: %v", r)
	}
	if aw := w.runEnv(env, "await", "envd", "--until", "done", "--timeout", "30s"); aw.code != 0 || !strings.Contains(aw.stdout, "END done "+sp2.RuntimeID) {
		t.Errorf("avenor await with AVENOR_SOCKET: %v", aw)
	}
	if r := w.runEnv(env, "control", "list"); r.code != 0 || !strings.Contains(r.stdout, sp2.RuntimeID) || strings.Contains(r.stdout, `"dflt"`) {
		t.Errorf("avenor control list with AVENOR_SOCKET went elsewhere: %v", r)
	}

	// The board, given no socket: the default one by its scan, the other by
	// its supervisor record.
	b := w.startBoardProc("tok-default")
	var socks []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if code, body := b.call("GET", "/api/sockets", nil, &socks); code != 200 || len(socks) != 2 || socks[0].Path != other || socks[1].Path != def {
		t.Fatalf("board sockets: %d %s; want %s and %s", code, body, def, other)
	}
	if code, body := b.call("GET", "/api/list?socket="+other, nil, nil); code != 200 || !strings.Contains(body, sp2.RuntimeID) {
		t.Errorf("board list of the recorded socket: %d %s", code, body)
	}

	// Explicitly empty: the original's errors.
	if r := w.run("control", "--socket", "", "status"); r.code != 2 || !strings.Contains(r.stderr, "--socket is required") {
		t.Errorf("control --socket \"\": %v", r)
	}
	if r := w.run("await", "dflt", "--socket", ""); r.code != 2 || !strings.Contains(r.stderr, "--socket is required") {
		t.Errorf("await --socket \"\": %v", r)
	}
	if r := w.run("stable", "--control-socket", ""); r.code != 1 || !strings.Contains(r.stderr, "--control-socket is required") {
		t.Errorf("stable --control-socket \"\": %v", r)
	}

	// A stopped supervisor's record goes: the board lists only the default.
	osup.cmd.Process.Signal(syscall.SIGTERM)
	osup.wait()
	if !waitFor(10*time.Second, func() bool {
		code, _ := b.call("GET", "/api/sockets", nil, &socks)
		return code == 200 && len(socks) == 1 && socks[0].Path == def
	}) {
		t.Errorf("board sockets after the other supervisor stopped: %+v", socks)
	}
	recs, _ := filepath.Glob(filepath.Join(w.state, "avenor", "supervisors", "*.json"))
	if len(recs) != 1 {
		t.Errorf("supervisor records after one stopped: %v; want only the running one's", recs)
	}
	_ = w.run("control", "shutdown")
	sup.wait()
}

// TestDefaultSocketDirRefused: `avenor stable` refuses a default socket
// directory that other users can write.
func TestDefaultSocketDirRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := filepath.Join(w.home, ".avenor", "sockets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	r := w.run("stable")
	if r.code != 1 || !strings.Contains(r.stderr, "is writable by other users") || !strings.Contains(r.stderr, "chmod 700") {
		t.Errorf("stable with a world-writable ~/.avenor/sockets: %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "default.sock")); !os.IsNotExist(err) {
		t.Errorf("a socket was made in the shared directory: %v", err)
	}
}

// TestBoardDropsKilledSupervisor: a supervisor killed with SIGKILL cannot
// remove its record; the board never lists it as live, and the record goes.
func TestBoardDropsKilledSupervisor(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock := w.path("elsewhere/killed.sock")
	sup := w.startGuarded(2*time.Minute, nil, "stable", "--control-socket", sock)
	if !waitFor(15*time.Second, func() bool {
		c, err := client.Dial(context.Background(), sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("avenor stable on %s: %s", sock, sup.stderr.String())
	}
	b := w.startBoardProc("tok-killed")
	var socks []struct {
		Path string `json:"path"`
	}
	if code, body := b.call("GET", "/api/sockets", nil, &socks); code != 200 || len(socks) != 1 || socks[0].Path != sock {
		t.Fatalf("board sockets: %d %s; want the recorded %s", code, body, sock)
	}
	sup.cmd.Process.Signal(syscall.SIGKILL)
	sup.wait()
	if code, body := b.call("GET", "/api/sockets", nil, &socks); code != 200 || len(socks) != 0 {
		t.Errorf("board sockets after SIGKILL: %d %s; want none", code, body)
	}
	if recs, _ := filepath.Glob(filepath.Join(w.state, "avenor", "supervisors", "*.json")); len(recs) != 0 {
		t.Errorf("the killed supervisor's record stayed: %v", recs)
	}
}
