package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// PeerUID reads a loopback peer's uid from the kernel: our own here.
func TestPeerUIDLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	uid, ok := PeerUID(s)
	if !ok || uid != os.Geteuid() {
		t.Fatalf("PeerUID = %d, %v; want %d, true", uid, ok, os.Geteuid())
	}
}

// serve runs an HTTP server answering "ok" behind Wrap(cfg); the uid of
// each connection comes from uids in accept order.
func serve(t *testing.T, cfg Config, uids chan int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.peerUID = func(net.Conn) (int, bool) {
		select {
		case u := <-uids:
			return u, u >= 0
		default:
			return os.Geteuid(), true
		}
	}
	hs := Harden(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })})
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(Wrap(ln, cfg)) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return ln.Addr().String()
}

// get opens a connection, sends one request and returns the status line
// and the open connection (for the caller to hold or close).
func get(t *testing.T, addr string) (string, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return "", "", nil
	}
	var sb strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	return resp.Status, sb.String(), c
}

func TestCaps(t *testing.T) {
	me := os.Geteuid()
	other, third := me+1000, me+2000
	for _, tc := range []struct {
		name  string
		peers []int // uid of each connection held open, -1 unknown
		next  int   // uid of one more
		want  string
	}{
		{"under the cap", []int{me, me}, me, "200 OK"},
		{"over the cap", []int{me, me, me, me}, me, "503 Service Unavailable|the limit, t.Max"},
		{"per other user", []int{other, other}, other, "503 Service Unavailable|uid"},
		{"another user under its own cap", []int{other, other}, third, "200 OK"},
		{"reserve kept from other users", []int{other, other, third}, third + 1, "503 Service Unavailable|kept for the user"},
		{"reserve kept from unknown peers", []int{-1, -1, -1}, -1, "503 Service Unavailable|kept for the user"},
		{"owner through the reserve", []int{other, other, third}, me, "200 OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uids := make(chan int, 16)
			addr := serve(t, Config{Max: 4, MaxPerPeer: 2, Reserve: 1, What: "test", Limit: "t.Max", PeerLimit: "t.MaxPerPeer"}, uids)
			for _, u := range tc.peers {
				uids <- u
				st, _, c := get(t, addr)
				if st != "200 OK" {
					t.Fatalf("a held connection of uid %d: %q", u, st)
				}
				defer c.Close()
			}
			uids <- tc.next
			st, body, c := get(t, addr)
			if c != nil {
				defer c.Close()
			}
			want, text, _ := strings.Cut(tc.want, "|")
			if st != want || !strings.Contains(body, text) {
				t.Fatalf("one more of uid %d: %q %q; want %q with %q", tc.next, st, body, want, text)
			}
		})
	}
}

// A closed connection gives its slot back; an idle one is closed by the
// server (Harden's IdleTimeout, shortened here).
func TestSlotsComeBack(t *testing.T) {
	uids := make(chan int, 4)
	addr := serve(t, Config{Max: 1, What: "test", Limit: "t.Max"}, uids)
	_, _, c := get(t, addr)
	if st, _, c2 := get(t, addr); st != "503 Service Unavailable" {
		t.Fatalf("second connection: %q", st)
	} else if c2 != nil {
		c2.Close()
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _, c3 := get(t, addr)
		if c3 != nil {
			c3.Close()
		}
		if st == "200 OK" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot did not come back: %q", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
