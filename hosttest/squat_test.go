package hosttest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// envSquat makes the test binary a squatter on the socket path it names
// (see squat) instead of running tests.
const envSquat = "AVENOR_HOSTTEST_SQUAT"

// squat listens on path, open to everyone, as a user who got to a shared
// directory first would: it answers every connection with a forged result
// and reports on stdout "ready", then "read N" for the bytes each
// connection sent. It runs until killed.
func squat(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "squat:", err)
		return 1
	}
	_ = os.Chmod(path, 0o666)
	fmt.Println("ready")
	for {
		nc, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer nc.Close()
			_, _ = nc.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"run_id":"forged","turn_state":"idle"}}` + "\n"))
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 64<<10)
			n, _ := nc.Read(buf)
			fmt.Printf("read %d\n", n)
		}()
	}
}

// startSquatter runs this test binary as otherUID, squatting on a socket
// in a shared sticky directory; it returns the socket's path and the
// squatter's report so far.
func startSquatter(t *testing.T) (string, func() string) {
	t.Helper()
	pub, err := os.MkdirTemp("", "avsquat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir := untraversable(filepath.Dir(pub)); dir != "" {
		t.Skipf("uid %d cannot pass through %s (no o+x), which holds $TMPDIR; use a TMPDIR under /tmp", otherUID, dir)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "squatter")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(pub, "tmp")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shared, "avenor-stable.sock")
	ctx, cancel := context.WithCancel(context.Background())
	c := exec.CommandContext(ctx, bin)
	c.Env = []string{envSquat + "=" + sock, "PATH=" + basePATH}
	c.Dir = "/"
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		cancel()
		t.Fatalf("starting the squatter as uid %d: %v", otherUID, err)
	}
	t.Cleanup(func() { cancel(); _ = c.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "ready" {
			t.Fatalf("squatter said %q, want ready", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the squatter did not listen within 10s")
	}
	var seen []string
	report := func() string {
		time.Sleep(300 * time.Millisecond) // a connection's read ends within 2s; a refused client never sends
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return strings.Join(seen, "\n")
				}
				seen = append(seen, l)
				continue
			default:
			}
			return strings.Join(seen, "\n")
		}
	}
	return sock, report
}

// TestSocketSquatterRefused: another uid created the socket path first,
// in a shared sticky directory. `avenor control`, `avenor await` and the
// Go client check the socket's owner and the server's credentials before
// they send anything: each fails naming uid 65534, never prints the
// squatter's forged answer, and the squatter receives no byte.
func TestSocketSquatterRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
			t.Fatal("AVENOR_REQUIRE_ROOT is set but the test does not run as root")
		}
		t.Skip("needs root: the squatter runs as uid 65534")
	}
	sock, report := startSquatter(t)
	w := newWorld(t)
	for _, args := range [][]string{
		{"control", "--socket", sock, "status"},
		{"control", "--socket", sock, "spawn", "--backend", "echo", "--prompt", "the secret is 42"},
		{"await", "rt_1", "--socket", sock, "--timeout", "5s"},
	} {
		res := w.run(args...)
		if res.code == 0 || !strings.Contains(res.stderr, "uid 65534") || strings.Contains(res.stdout+res.stderr, "forged") {
			t.Errorf("avenor %s against a squatter: %v; want a failure naming uid 65534 and no forged output", strings.Join(args, " "), res)
		}
	}
	_, err := client.Dial(context.Background(), sock)
	if !errors.Is(err, client.ErrUntrustedSocket) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("client.Dial against a squatter: %v; want ErrUntrustedSocket naming uid 65534", err)
	}
	// The socket file is the squatter's, so the clients stop at its owner;
	// then, with the file made ours, the server's credentials stop them.
	if got := report(); strings.Contains(got, "read") {
		t.Errorf("the squatter saw connections: %q", got)
	}
	if err := os.Lchown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	res := w.run("control", "--socket", sock, "status")
	if res.code == 0 || !strings.Contains(res.stderr, "served by pid") || !strings.Contains(res.stderr, "uid 65534") || strings.Contains(res.stdout, "forged") {
		t.Errorf("avenor control against a squatter's process: %v; want a failure naming its uid 65534", res)
	}
	got := report()
	if strings.Count(got, "read 0") != 1 || strings.Count(got, "read") != 1 {
		t.Errorf("the squatter's report %q: want one connection that sent nothing (read 0)", got)
	}
}

// TestStableRefusesSquattedSocket: `avenor stable` asked for a socket path
// in a shared sticky directory that another uid already holds refuses to
// start, saying loudly who holds it, instead of "already in use"; a free
// path there is served, with a warning.
func TestStableRefusesSquattedSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
			t.Fatal("AVENOR_REQUIRE_ROOT is set but the test does not run as root")
		}
		t.Skip("needs root: the squatter runs as uid 65534")
	}
	sock, _ := startSquatter(t)
	w := newWorld(t)
	p := w.start(nil, "stable", "--control-socket", sock)
	done := make(chan result, 1)
	go func() { done <- p.wait() }()
	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		p.signal(syscall.SIGKILL)
		<-done
		t.Fatal("avenor stable on a squatted socket path still runs after 15s")
	}
	if res.code == 0 || !strings.Contains(res.stderr, "belongs to uid 65534") || !strings.Contains(res.stderr, "every user can write") {
		t.Errorf("avenor stable on a path uid 65534 holds: %v; want a refusal naming uid 65534 and the shared directory", res)
	}

	free := filepath.Join(filepath.Dir(sock), "free.sock")
	p = w.start(nil, "stable", "--control-socket", free)
	if !waitFor(10*time.Second, func() bool { return sameUIDStatus(w, free) == nil }) {
		p.signal(syscall.SIGTERM)
		t.Fatalf("avenor stable did not serve the free path %s: %v", free, p.wait())
	}
	p.signal(syscall.SIGTERM)
	if res := p.wait(); !strings.Contains(res.stderr, "every user can write") {
		t.Errorf("avenor stable in a shared directory did not warn: %v", res)
	}
}
