//go:build reliability && linux

package hosttest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The board and `avenor mcp --transport http` answer only with a token,
// but a peer without one could hold connections: 20,000 of them took a
// board to 408 MB and the owner's own request timed out. Both listeners
// cap connections before any request is read (per listener, per other
// local user, with slots kept for the owner) and time out slow headers:
// a flood from other users holds at most the per-user caps, memory stays
// small, and the owner's request with the token still succeeds.
func TestReliabilityHTTPFloodBoardAndMCP(t *testing.T) {
	if os.Geteuid() != 0 {
		msg := "!!! SKIP: flooding as other users needs root (setfsuid); the HTTP flood test did NOT run"
		if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
			t.Fatal(msg + " and AVENOR_REQUIRE_ROOT is set")
		}
		t.Skip(msg)
	}
	w := newWorld(t)
	f := w.startBoardFleet("flood", "say flood target")
	b := w.startBoardProc("tok-flood")
	mcpBase, _ := startMCPHTTP(t, w, f.sock, "tok-mcp")

	for _, tc := range []struct {
		name     string
		addr     string
		pid      int
		perPeer  int
		max      int
		reserved int
		owner    func() error
	}{
		{"board", strings.TrimPrefix(b.base, "http://"), b.cmd.Process.Pid, 32, 128, 16, func() error {
			code, body := b.call("GET", "/api/sockets", nil, nil)
			if code != 200 || !strings.Contains(body, f.sock) {
				return fmt.Errorf("%d %s", code, body)
			}
			return nil
		}},
		{"mcp", strings.TrimPrefix(mcpBase, "http://"), pidListening(t, strings.TrimPrefix(mcpBase, "http://")), 16, 64, 8, func() error {
			cs := connectHTTP(t, mcpBase, "tok-mcp")
			return cs.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rss0 := rssMB(tc.pid)
			// 20,000 connection attempts from 8 other users (uids
			// 60001-60008), none sending a byte.
			const attempts, users = 20000, 8
			// The most descriptors the server held during the flood.
			peak, stop := make(chan int, 1), make(chan struct{})
			go func() {
				most := 0
				for {
					most = max(most, countFDs(tc.pid))
					select {
					case <-stop:
						peak <- most
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}()
			var (
				mu  sync.Mutex
				all []net.Conn
				wg  sync.WaitGroup
			)
			for u := range users {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := dialAs(t, 60001+u, tc.addr, attempts/users)
					mu.Lock()
					all = append(all, c...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			held, refused := sortRefused(t, all)
			close(stop)
			fds := <-peak
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			// The caps: each other user at most perPeer, all of them
			// together at most max-reserved.
			if len(held) > tc.max-tc.reserved || len(held) == 0 {
				t.Errorf("%d connections held by other users; want at most %d (the listener's cap less the owner's reserve)", len(held), tc.max-tc.reserved)
			}
			rss1 := rssMB(tc.pid)
			start := time.Now()
			if err := tc.owner(); err != nil {
				t.Fatalf("the owner's request during the flood: %v", err)
			}
			took := time.Since(start)
			if took > 5*time.Second {
				t.Errorf("the owner's request took %v during the flood", took)
			}
			if rss1-rss0 > 64 {
				t.Errorf("memory grew from %d MB to %d MB under the flood", rss0, rss1)
			}
			if fds > tc.max+32 {
				t.Errorf("the server holds %d descriptors; want at most its cap %d and a few of its own", fds, tc.max)
			}
			t.Logf("%s: %d attempts from %d users: %d connections held at the end, %d refused (503); the server held at most %d descriptors; RSS %d MB -> %d MB; the owner's request took %v",
				tc.name, attempts, users, len(held), refused, fds, rss0, rss1, took.Round(time.Millisecond))
			// Slow headers are cut: the held connections are closed by
			// the server within ReadHeaderTimeout (10 s).
			deadline := time.Now().Add(20 * time.Second)
			open := 0
			for _, c := range held {
				_ = c.SetReadDeadline(deadline)
				if _, err := io.Copy(io.Discard, c); err != nil {
					open++
				}
			}
			if open > 0 {
				t.Errorf("%d held connections were not closed by the header timeout", open)
			}
		})
	}
}

// dialAs opens n connections to addr as uid (a socket's owner is its
// thread's fsuid).
func dialAs(t *testing.T, uid int, addr string, n int) []net.Conn {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// setfsuid changes this thread only.
	if err := unix.Setfsuid(uid); err != nil {
		t.Fatalf("setfsuid %d: %v", uid, err)
	}
	defer unix.Setfsuid(os.Geteuid())
	var conns []net.Conn
	for range n {
		if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			conns = append(conns, c)
		}
	}
	return conns
}

// sortRefused closes the connections the server refused (their 503
// comes as soon as it accepted them) and returns the ones it holds. All
// are read at once, well within the header timeout.
func sortRefused(t *testing.T, conns []net.Conn) ([]net.Conn, int) {
	t.Helper()
	refused := make([]bool, len(conns))
	gone := make([]bool, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 64)
			k, err := c.Read(buf)
			refused[i] = k > 0 && strings.HasPrefix(string(buf[:k]), "HTTP/1.1 503")
			// A connection the header timeout already closed (the dials
			// took longer than it) is no longer held.
			gone[i] = k == 0 && !errors.Is(err, os.ErrDeadlineExceeded)
			_ = c.SetReadDeadline(time.Time{})
		}()
	}
	wg.Wait()
	var held []net.Conn
	n := 0
	for i, c := range conns {
		switch {
		case refused[i]:
			n++
			c.Close()
		case gone[i]:
			c.Close()
		default:
			held = append(held, c)
		}
	}
	return held, n
}

// countFDs is the number of pid's open descriptors.
func countFDs(pid int) int {
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(fds)
}

// rssMB is pid's resident memory in MB.
func rssMB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb / 1024
		}
	}
	return 0
}

// pidListening finds the process listening on a loopback TCP addr from
// /proc (the test started it; its pid is not otherwise returned).
func pidListening(t *testing.T, addr string) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	data, _ := os.ReadFile("/proc/net/tcp")
	inode := ""
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", p)) {
			inode = f[9]
		}
	}
	if inode == "" {
		t.Fatalf("nothing listens on %s", addr)
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name()); l == "socket:["+inode+"]" {
				return pid
			}
		}
	}
	t.Fatalf("no process holds the listener of %s", addr)
	return 0
}
