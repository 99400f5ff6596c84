package httpdebug

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawHTTP is one TCP connection to a running server, spoken to by hand so
// the test sees exactly when the server closes it.
type rawHTTP struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialHTTP(t *testing.T, s *Server) *rawHTTP {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawHTTP{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// get sends GET path (HTTP/1.1, keep-alive) and reads the response whole.
func (c *rawHTTP) get(s *Server, path, host, token string) (*http.Response, string) {
	c.t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if token != "" {
		req += TokenHeader + ": " + token + "\r\n"
	}
	if _, err := io.WriteString(c.nc, req+"\r\n"); err != nil {
		c.t.Fatal(err)
	}
	return c.read()
}

func (c *rawHTTP) read() (*http.Response, string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading a body: %v", err)
	}
	resp.Body.Close()
	return resp, string(body)
}

// closedWithin reports whether the server closes the connection within d.
func (c *rawHTTP) closedWithin(d time.Duration) error {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	b, err := c.r.ReadByte()
	switch {
	case err == nil:
		return errors.New("the server sent more: " + string(b))
	case errors.Is(err, io.EOF):
		return nil
	default:
		return err
	}
}

func (s *Server) host() string { return strings.TrimPrefix(s.URL(), "http://") }

// An authenticated keep-alive connection that goes quiet is closed after
// IdleTimeout: idle connections used to stay open for ever, and enough of
// them took every descriptor.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 200 * time.Millisecond
	s := start(t, Config{Run: newOneShot(newFakeRuntime(""), nil)})
	c := dialHTTP(t, s)
	for range 2 { // the connection is reused while it is busy
		if resp, body := c.get(s, "/status", s.host(), s.Token()); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("GET /status: %d close=%v %q", resp.StatusCode, resp.Close, body)
		}
	}
	if err := c.closedWithin(3 * time.Second); err != nil {
		t.Fatalf("idle keep-alive connection after %v: %v", idleTimeout, err)
	}
}

// A request without the right token is answered 401 with Connection:
// close, and the connection closes: a peer cannot hold connections open
// by asking without the token.
func TestRefusedRequestClosesTheConnection(t *testing.T) {
	s := start(t, Config{Run: newOneShot(newFakeRuntime(""), nil)})
	for _, tok := range []string{"", "wrong"} {
		c := dialHTTP(t, s)
		resp, body := c.get(s, "/status", s.host(), tok)
		if resp.StatusCode != http.StatusUnauthorized || body != "unauthorized\n" || !resp.Close { // Close: the response said Connection: close
			t.Fatalf("token %q: %d close=%v %v %q", tok, resp.StatusCode, resp.Close, resp.Header, body)
		}
		if err := c.closedWithin(3 * time.Second); err != nil {
			t.Fatalf("token %q: the refused connection stays open: %v", tok, err)
		}
	}
	c := dialHTTP(t, s)
	resp, _ := c.get(s, "/status", "attacker.example", s.Token())
	if resp.StatusCode != http.StatusMisdirectedRequest || !resp.Close {
		t.Fatalf("foreign Host: %d close=%v", resp.StatusCode, resp.Close)
	}
	if err := c.closedWithin(3 * time.Second); err != nil {
		t.Fatalf("foreign Host: the refused connection stays open: %v", err)
	}
}

// The Host header must name a loopback address (DNS rebinding: a page of
// attacker.example whose name now resolves to 127.0.0.1 sends its own name).
func TestHostHeaderMustBeLoopback(t *testing.T) {
	rt := newFakeRuntime("")
	s := handlerOnly(t, Config{Run: newOneShot(rt, nil)})
	for _, host := range []string{"127.0.0.1:40000", "127.0.0.1", "localhost:40000", "LocalHost:1", "localhost",
		"[::1]:40000", "[::1]", "127.1.2.3:9"} {
		rec := doHost(s, host, "POST", "/cancel")
		if rec.Code != http.StatusOK {
			t.Errorf("Host %q: %d %q", host, rec.Code, rec.Body)
		}
	}
	for _, host := range []string{"attacker.example:40000", "attacker.example", "localhost.attacker.example:1",
		"10.0.0.1:40000", "[2001:db8::1]:1", "0.0.0.0:40000", "", "127.0.0.1:40000:1", "[::1"} {
		rec := doHost(s, host, "POST", "/cancel")
		if rec.Code != http.StatusMisdirectedRequest || !strings.HasPrefix(rec.Body.String(), "misdirected request: the Host header") {
			t.Errorf("Host %q: %d %q", host, rec.Code, rec.Body)
		}
	}
	if n := rt.cancelled(); n != 8 {
		t.Errorf("%d cancels reached the runtime, want 8 (the loopback hosts only)", n)
	}
}

func doHost(s *Server, host, method, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.RemoteAddr = local
	req.Host = host
	req.Header.Set(TokenHeader, s.Token())
	rec := httptest.NewRecorder()
	s.serveHTTP(rec, req)
	return rec
}

// Connections over MaxConnections are answered 503 and closed at once;
// the ones open go on, and a slot freed is usable again.
func TestHTTPConnectionCap(t *testing.T) {
	s := start(t, Config{Run: newOneShot(newFakeRuntime(""), nil)})
	open := make([]*rawHTTP, MaxConnections)
	for i := range open {
		open[i] = dialHTTP(t, s)
	}
	// Each held connection has been accepted once it answers.
	if resp, _ := open[0].get(s, "/status", s.host(), s.Token()); resp.StatusCode != 200 {
		t.Fatalf("GET /status: %d", resp.StatusCode)
	}
	for range 3 {
		c := dialHTTP(t, s)
		resp, body := c.read()
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close ||
			body != "too many http debug connections: 32 are open (the limit, httpdebug.MaxConnections); close one and retry\n" {
			t.Fatalf("connection over the cap: %d close=%v %q", resp.StatusCode, resp.Close, body)
		}
		if err := c.closedWithin(3 * time.Second); err != nil {
			t.Fatalf("connection over the cap stays open: %v", err)
		}
	}
	if resp, _ := open[0].get(s, "/status", s.host(), s.Token()); resp.StatusCode != 200 {
		t.Fatalf("an open connection stopped working: %d", resp.StatusCode)
	}
	open[1].nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, err := tryGet(s); code == 200 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("a freed slot was not reused: %d %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tryGet asks GET /status on a new connection; an answer of the cap's
// 503 may also come as a reset.
func tryGet(s *Server) (int, error) {
	nc, err := net.Dial("tcp", s.host())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, "GET /status HTTP/1.1\r\nHost: "+s.host()+"\r\n"+TokenHeader+": "+s.Token()+"\r\n\r\n"); err != nil {
		return 0, err
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
