package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// startBoard starts a board over an empty scan directory.
func startBoard(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Scan == nil && cfg.Socket == "" {
		cfg.Scan = []string{t.TempDir()}
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

type answer struct {
	code int
	body string
}

// do sends one request; hdr's "Host" sets the Host header.
func do(t *testing.T, s *Server, method, path, body string, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b)}
}

func bearerOf(s *Server) map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.Token()}
}

// Every API route but /api/config needs the token; a wrong one, another
// scheme, or ?token= outside the event stream is 401.
func TestTokenOnEveryRoute(t *testing.T) {
	s := startBoard(t, Config{AllowMutations: true})
	if len(s.Token()) != 32 {
		t.Fatalf("generated token %q: want 16 random bytes in hex", s.Token())
	}
	routes := []struct{ method, path string }{
		{"GET", "/api/sockets"}, {"GET", "/api/status"}, {"GET", "/api/list"}, {"GET", "/api/events"},
		{"GET", "/api/usage"}, {"POST", "/api/cancel"}, {"POST", "/api/prompt"}, {"POST", "/api/answer"},
	}
	bad := []map[string]string{
		nil,
		{"Authorization": "Bearer wrong"},
		{"Authorization": "Bearer " + s.Token() + "x"},
		{"Authorization": "Basic " + s.Token()},
		{"X-Avenor-Token": s.Token()},
		{"Authorization": "Bearer"},
		{"Authorization": "Bearer "},
		{"Authorization": "Bearer" + s.Token()},
	}
	for _, r := range routes {
		for i, h := range bad {
			if got := do(t, s, r.method, r.path, "{}", h); got.code != http.StatusUnauthorized {
				t.Errorf("%s %s with credentials %d: %d %s; want 401", r.method, r.path, i, got.code, got.body)
			}
		}
		if r.path != "/api/events" {
			if got := do(t, s, r.method, r.path+"?token="+s.Token(), "{}", nil); got.code != http.StatusUnauthorized {
				t.Errorf("%s %s?token=: %d; want 401 (the query token is for the event stream only)", r.method, r.path, got.code)
			}
		}
		// With the token the route is reached: here it lacks a socket.
		if got := do(t, s, r.method, r.path, "{}", bearerOf(s)); got.code == http.StatusUnauthorized || got.code == http.StatusForbidden {
			t.Errorf("%s %s with the token: %d %s", r.method, r.path, got.code, got.body)
		}
	}
	// The scheme is case-insensitive (RFC 9110 §11.1).
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		if got := do(t, s, "GET", "/api/sockets", "", map[string]string{"Authorization": scheme + " " + s.Token()}); got.code != 200 {
			t.Errorf("scheme %q: %d %s; want 200", scheme, got.code, got.body)
		}
	}
	if got := do(t, s, "GET", "/api/events?token="+s.Token(), "", nil); got.code != http.StatusBadRequest || !strings.Contains(got.body, "socket parameter is required") {
		t.Errorf("events with ?token=: %d %s; want it authorized (400 for the missing socket)", got.code, got.body)
	}
	got := do(t, s, "GET", "/api/config", "", nil)
	if got.code != 200 || !strings.Contains(got.body, `"auth_required":true`) || !strings.Contains(got.body, `"mutations_allowed":true`) {
		t.Errorf("config without a token: %d %s", got.code, got.body)
	}
	if got := do(t, s, "GET", "/api/sockets", "", bearerOf(s)); got.code != 200 || strings.TrimSpace(got.body) != "[]" {
		t.Errorf("sockets of an empty directory: %d %s", got.code, got.body)
	}
}

// Without AllowMutations every POST is 403, token or not reached.
func TestMutationsNeedAllowMutations(t *testing.T) {
	s := startBoard(t, Config{Token: "sekrit"})
	for _, p := range []string{"/api/cancel", "/api/prompt", "/api/answer"} {
		got := do(t, s, "POST", p, `{"socket":"x","text":"hi","request_id":"r","option_id":"o"}`, map[string]string{"Authorization": "Bearer sekrit"})
		if got.code != http.StatusForbidden || !strings.Contains(got.body, "--allow-mutations") {
			t.Errorf("POST %s read-only: %d %s; want 403 naming --allow-mutations", p, got.code, got.body)
		}
	}
	if got := do(t, s, "GET", "/api/config", "", nil); !strings.Contains(got.body, `"mutations_allowed":false`) {
		t.Errorf("config: %s", got.body)
	}
	if got := do(t, s, "GET", "/api/cancel", "", map[string]string{"Authorization": "Bearer sekrit"}); got.code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/cancel: %d; want 405", got.code)
	}
}

// A loopback board refuses a Host header naming anything else (DNS
// rebinding) and a request a page of another site sends.
func TestHostAndOrigin(t *testing.T) {
	s := startBoard(t, Config{Token: "sekrit"})
	auth := "Bearer sekrit"
	cases := []struct {
		name string
		hdr  map[string]string
		code int
	}{
		{"own address", map[string]string{}, 200},
		{"localhost", map[string]string{"Host": "localhost:1234"}, 200},
		{"ipv6 loopback", map[string]string{"Host": "[::1]:80"}, 200},
		{"rebinding name", map[string]string{"Host": "evil.example:80"}, 403},
		{"lan address", map[string]string{"Host": "192.168.1.5"}, 403},
		{"same origin", map[string]string{"Origin": "http://" + s.Addr()}, 200},
		{"other site", map[string]string{"Origin": "https://evil.example"}, 403},
		{"other localhost port", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Authorization": auth}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			for _, p := range []string{"/api/sockets", "/board/"} {
				if got := do(t, s, "GET", p, "", hdr); got.code != tc.code {
					t.Errorf("GET %s: %d %s; want %d", p, got.code, got.body, tc.code)
				}
			}
		})
	}
}

// The board dials only the sockets it lists: a socket param outside the
// scan directories, or not *.sock, is 400 before any dial.
func TestSocketParamMustBeWatched(t *testing.T) {
	dir := t.TempDir()
	s := startBoard(t, Config{Scan: []string{dir}, AllowMutations: true})
	for _, p := range []string{"/etc/passwd", "/run/docker.sock", filepath.Join(dir, "sub", "x.sock"), filepath.Join(dir, "x.txt"), dir + "/../x.sock"} {
		got := do(t, s, "GET", "/api/status?socket="+p, "", bearerOf(s))
		if got.code != http.StatusBadRequest || !strings.Contains(got.body, "not one this board watches") {
			t.Errorf("status socket=%s: %d %s; want 400", p, got.code, got.body)
		}
		body, _ := json.Marshal(map[string]string{"socket": p})
		if got := do(t, s, "POST", "/api/cancel", string(body), bearerOf(s)); got.code != http.StatusBadRequest {
			t.Errorf("cancel socket=%s: %d %s; want 400", p, got.code, got.body)
		}
	}
	// A watched path with nothing listening: 502, naming the path.
	stale := filepath.Join(dir, "gone.sock")
	if got := do(t, s, "GET", "/api/status?socket="+stale, "", bearerOf(s)); got.code != http.StatusBadGateway || !strings.Contains(got.body, stale) {
		t.Errorf("status of a stale socket: %d %s; want 502", got.code, got.body)
	}
	for _, b := range []string{`{"socket":`, `{"nope":1}`} {
		if got := do(t, s, "POST", "/api/prompt", b, bearerOf(s)); got.code != http.StatusBadRequest || !strings.Contains(got.body, "invalid json body") {
			t.Errorf("prompt body %s: %d %s", b, got.code, got.body)
		}
	}
	if got := do(t, s, "POST", "/api/answer", `{"socket":"`+stale+`"}`, bearerOf(s)); got.code != http.StatusBadRequest || !strings.Contains(got.body, "missing request_id, option_id") {
		t.Errorf("answer without ids: %d %s", got.code, got.body)
	}
}

func TestStartRefusals(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"token and no-auth", Config{Token: "t", NoAuth: true}, "mutually exclusive"},
		{"lan without token", Config{Addr: "192.0.2.1:0"}, "is not a loopback address: a board reachable from other machines needs --token"},
		{"bad address", Config{Addr: "nonsense"}, "is not host:port"},
		{"no home", Config{Scan: nil, Socket: ""}, "$HOME is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.cfg)
			if err == nil {
				s.Shutdown(context.Background())
				t.Fatalf("Start(%+v) succeeded", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want it to say %q", err, tc.want)
			}
		})
	}
	if !errors.Is(func() error { _, err := Start(context.Background(), Config{Token: "t", NoAuth: true}); return err }(), ErrTokenAndNoAuth) {
		t.Error("token+no-auth is not ErrTokenAndNoAuth")
	}
}

// The token never reaches the log, even at trace level and with requests
// that carry it in the URL.
func TestTokenNotLogged(t *testing.T) {
	var logBuf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Trace})
	s := startBoard(t, Config{Logger: logger, AllowMutations: true})
	do(t, s, "GET", "/api/events?token="+s.Token()+"&socket=/nope", "", nil)
	do(t, s, "GET", "/api/sockets", "", bearerOf(s))
	do(t, s, "GET", "/api/sockets?token="+s.Token(), "", nil)
	do(t, s, "POST", "/api/cancel", "{", bearerOf(s))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	if strings.Contains(logBuf.String(), s.Token()) {
		t.Fatalf("the token is in the log:\n%s", logBuf.String())
	}
}

// The page is embedded, needs no token, and loads nothing from elsewhere.
func TestPageIsEmbeddedAndSelfContained(t *testing.T) {
	s := startBoard(t, Config{})
	got := do(t, s, "GET", "/board/", "", nil)
	if got.code != 200 || !strings.Contains(got.body, "<title>avenor board</title>") {
		t.Fatalf("GET /board/: %d %.200s", got.code, got.body)
	}
	entries, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("assets", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{"http://", "https://", "//fonts.", "@import"} {
			if bytes.Contains(b, []byte(ext)) {
				t.Errorf("assets/%s refers to %q: the page must work offline", e.Name(), ext)
			}
		}
		if got := do(t, s, "GET", "/board/"+e.Name(), "", nil); got.code != 200 {
			t.Errorf("GET /board/%s: %d", e.Name(), got.code)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/?token=abc", nil)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/board/?token=abc" {
		t.Errorf("GET /?token=abc: %d to %q; want a redirect to the page keeping the query", resp.StatusCode, loc)
	}
}
