package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/client"
)

func TestParseTimeout(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{{"30", 30}, {"90s", 90}, {"5m", 300}, {"1h", 3600}, {" 7 ", 7}} {
		if got, err := parseTimeout("timeout", c.in); err != nil || got != c.want {
			t.Errorf("%q: %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0", "-5", "+5", "1.5", "5d", "m", "1e3", "99999999999h", "30 s"} {
		if _, err := parseTimeout("timeout", bad); err == nil || !strings.Contains(err.Error(), "invalid timeout") {
			t.Errorf("%q: want an invalid timeout error, got %v", bad, err)
		}
	}
}

func TestFromRuntimeStatus(t *testing.T) {
	code := func(n int) *int { return &n }
	dir := t.TempDir()
	sen := filepath.Join(dir, "s.done")
	rec := &Record{RunID: "r", Label: "l", Sentinel: sen}
	for _, c := range []struct {
		name string
		rt   client.Runtime
		want string
	}{
		{"running", client.Runtime{Status: "running"}, StatusRunning},
		{"permission", client.Runtime{Status: "running", PendingPermission: true}, StatusWaiting},
		{"parked done", client.Runtime{Status: "idle", Parked: true, ExitCode: code(0)}, StatusDone},
		{"parked timeout", client.Runtime{Status: "idle", Parked: true, ExitCode: code(124)}, StatusTimeout},
		{"parked cancelled", client.Runtime{Status: "idle", Parked: true, ExitCode: code(130)}, StatusKilled},
		{"ended failed", client.Runtime{Status: "ended", ExitCode: code(1)}, StatusFailed},
		{"ended blocked", client.Runtime{Status: "ended", ExitCode: code(5)}, StatusFailed},
	} {
		if got := fromRuntime(rec, c.rt).Status; got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Ended without an exit code: the sentinel decides.
	for first, want := range map[string]string{"DONE": StatusDone, "FAILED": StatusFailed, "BLOCKED": StatusFailed, "TIMEOUT": StatusTimeout, "KILLED": StatusKilled} {
		if err := os.WriteFile(sen, []byte(first+"\nSESSION=s1\nSTOP_REASON=x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := fromRuntime(rec, client.Runtime{Status: "ended"}); got.Status != want || got.StopReason != "x" {
			t.Errorf("sentinel %s: %+v, want %s", first, got, want)
		}
		if got, ok := fromSentinel(rec); !ok || got.Status != want || got.SessionID != "s1" {
			t.Errorf("fromSentinel %s: %+v %v", first, got, ok)
		}
	}
}

func TestGuard(t *testing.T) {
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }), "tok", []string{"Box.Tailnet"})
	for _, c := range []struct {
		name, host, origin, auth string
		want                     int
	}{
		{"ok", "127.0.0.1:3748", "", "Bearer tok", 204},
		{"ipv6 loopback", "[::1]:3748", "", "Bearer tok", 204},
		{"no token", "127.0.0.1:3748", "", "", 401},
		{"empty bearer", "127.0.0.1:3748", "", "Bearer ", 401},
		{"prefix of the token", "127.0.0.1:3748", "", "Bearer to", 401},
		{"foreign host", "example.com", "", "Bearer tok", 403},
		{"allow-listed, any case", "box.TAILNET:1", "", "Bearer tok", 204},
		{"foreign origin", "127.0.0.1", "http://example.com", "Bearer tok", 403},
		{"file origin", "127.0.0.1", "file://", "Bearer tok", 403},
		{"loopback origin", "127.0.0.1", "http://127.0.0.1:8080", "Bearer tok", 204},
		{"unicode host", "lоcalhost", "", "Bearer tok", 403},
	} {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader("{}"))
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.want)
		}
		if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: 401 without WWW-Authenticate: Bearer", c.name)
		}
	}
}

func TestLogEvents(t *testing.T) {
	p := filepath.Join(t.TempDir(), "e.ndjson")
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		name := "agent.message_chunk"
		if i == 10 {
			name = "session.end"
		}
		b.WriteString(`{"event":"` + name + `","seq":` + strconv.Itoa(i) + `,"text":"` + strings.Repeat("x", MaxEventString+10) + `"}` + "\n")
		if i == 5 {
			b.WriteString("not json\n")
		}
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	evs, latest, cut, err := logEvents(p, nil, 0, 3)
	if err != nil || latest != 10 || !cut || len(evs) != 3 || seqOf(evs[0]) != 8 {
		t.Fatalf("latest 3: %d events, latest %d, cut %v, %v", len(evs), latest, cut, err)
	}
	evs, _, _, _ = logEvents(p, nil, 4, 2)
	if len(evs) != 2 || seqOf(evs[0]) != 5 || seqOf(evs[1]) != 6 {
		t.Fatalf("after 4: %v", evs)
	}
	evs, _, _, _ = logEvents(p, []string{"session.end"}, 0, 50)
	if len(evs) != 1 || nameOf(evs[0]) != "session.end" {
		t.Fatalf("types: %v", evs)
	}
	if s, _ := evs[0]["text"].(string); !strings.HasSuffix(s, "…[truncated]") || len(s) > MaxEventString+20 {
		t.Errorf("long string not cut: %d bytes", len(s))
	}
}

// TestWaitBoundsAreAwaits: a wait runs on client.Await, so the documented
// bounds of avenor_status wait_for are client.Await's pace.
func TestWaitBoundsAreAwaits(t *testing.T) {
	if WaitSettle != client.AwaitPoll || WaitPoll != 20*client.AwaitPoll {
		t.Errorf("WaitSettle %v, WaitPoll %v; client.Await reads the status %v after events and every %v without",
			WaitSettle, WaitPoll, client.AwaitPoll, 20*client.AwaitPoll)
	}
}

func TestHTTPToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(file, []byte(" s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MCP_AUTH_TOKEN" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, flag, file, env, want, err string
	}{
		{"flag", "f", "", "e", "f", ""},
		{"file", "", file, "e", "s3cret", ""},
		{"env", "", "", " e ", "e", ""},
		{"none", "", "", "", "", ""},
		{"both", "f", file, "", "", "mutually exclusive"},
		{"empty file", "", empty, "e", "", "is empty"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "", "--auth-token-file: "},
	} {
		got, err := HTTPToken(c.flag, c.file, env(c.env))
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v; want %q, error %q", c.name, got, err, c.want, c.err)
		}
	}
}

func TestCheckAllowedHosts(t *testing.T) {
	if err := CheckAllowedHosts([]string{"box.lan", "example.com"}); err != nil {
		t.Errorf("exact names: %v", err)
	}
	for _, bad := range []string{"", "*.lan", "box:8080", "http://box", "a b"} {
		if err := CheckAllowedHosts([]string{bad}); err == nil || !strings.Contains(err.Error(), "exact host name") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestTimeoutArgInto: a given timeout becomes seconds in its destination,
// an absent one leaves it alone, a bad one is an error naming the argument.
func TestTimeoutArgInto(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   timeoutArg
		want any
		err  string
	}{
		{name: "absent", in: "", want: "unchanged"},
		{name: "seconds", in: "90s", want: 90},
		{name: "minutes", in: "2m", want: 120},
		{name: "bad", in: "soon", want: "unchanged", err: `invalid spend_wall "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst any = "unchanged"
			err := tc.in.into("spend_wall", &dst)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if dst != tc.want {
				t.Errorf("dst = %v, want %v", dst, tc.want)
			}
		})
	}
}
