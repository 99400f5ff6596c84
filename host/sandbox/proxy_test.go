package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// portOf is the port of a listener's address.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func TestProxy(t *testing.T) {
	defer goleak.VerifyNone(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	defer backend.Close()
	port := portOf(t, backend.Listener.Addr().String())

	var mu sync.Mutex
	var denied []string
	p, err := StartProxy(ProxyConfig{
		Allow:  []sdk.NetDest{{Host: "127.0.0.1", Port: port}},
		OnDeny: func(d string) { mu.Lock(); denied = append(denied, d); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("proxy dir %s: %v %v; want mode 0700", p.dir, fi.Mode(), err)
	}

	t.Run("connect allowed", func(t *testing.T) {
		c := dialProxy(t, p)
		defer c.Close()
		fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port, port)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "hello /tunnel" {
			t.Fatalf("body %q", body)
		}
	})
	t.Run("absolute-form allowed", func(t *testing.T) {
		c := dialProxy(t, p)
		defer c.Close()
		fmt.Fprintf(c, "GET http://127.0.0.1:%d/abs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nProxy-Connection: keep-alive\r\n\r\n", port, port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "hello /abs" {
			t.Fatalf("body %q", body)
		}
	})
	t.Run("denied", func(t *testing.T) {
		for _, req := range []string{
			fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", port+1),
			"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
		} {
			c := dialProxy(t, p)
			fmt.Fprint(c, req)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			if err != nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%q: %v %v; want 403", req, resp, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1)), "example.com:80"}
		if strings.Join(denied, " ") != strings.Join(want, " ") {
			t.Fatalf("denied %v; want %v", denied, want)
		}
	})
	t.Run("bad request", func(t *testing.T) {
		c := dialProxy(t, p)
		defer c.Close()
		fmt.Fprint(c, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%v %v; want 400", resp, err)
		}
	})

	// An open tunnel does not keep Close waiting.
	c := dialProxy(t, p)
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Fatalf("proxy dir left behind: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func dialProxy(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProxyPending: a proxy waiting for its allow-list holds a connection
// until SetAllow, then judges it by that list.
func TestProxyPending(t *testing.T) {
	defer goleak.VerifyNone(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "model") }))
	defer backend.Close()
	port := portOf(t, backend.Listener.Addr().String())
	p, err := StartProxy(ProxyConfig{Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialProxy(t, p)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
	got := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			got <- 0
			return
		}
		got <- resp.StatusCode
	}()
	select {
	case code := <-got:
		t.Fatalf("answered %d before the allow-list was set", code)
	case <-time.After(100 * time.Millisecond):
	}
	p.SetAllow([]sdk.NetDest{{Host: "127.0.0.1", Port: port}})
	if code := <-got; code != 200 {
		t.Fatalf("CONNECT after SetAllow: %d; want 200", code)
	}
}
