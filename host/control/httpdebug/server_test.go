package httpdebug

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
)

const local = "127.0.0.1:40000"

func TestTokenIs16RandomBytesHex(t *testing.T) {
	a := handlerOnly(t, Config{Run: newOneShot(newFakeRuntime(""), nil)})
	b := handlerOnly(t, Config{Run: newOneShot(newFakeRuntime(""), nil)})
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	if !hex32.MatchString(a.Token()) || !hex32.MatchString(b.Token()) || a.Token() == b.Token() {
		t.Fatalf("tokens %q and %q", a.Token(), b.Token())
	}
}

func TestNeedsExactlyOneTarget(t *testing.T) {
	if _, err := newServer(Config{}); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no target: %v", err)
	}
	if _, err := newServer(Config{Run: newOneShot(newFakeRuntime(""), nil), Stable: &fakeSupervisor{}}); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("both targets: %v", err)
	}
}

// Every route needs the token; only /events takes it from the query.
func TestTokenRequired(t *testing.T) {
	rt := newFakeRuntime("")
	run := newOneShot(rt, nil)
	run.End() // streams end at once
	s := handlerOnly(t, Config{Run: run})
	routes := []struct{ method, path string }{
		{"GET", "/status"}, {"GET", "/events"}, {"POST", "/cancel"}, {"POST", "/answer-permission"},
		{"GET", "/status/rt_1"}, {"GET", "/runtimes"}, {"GET", "/nowhere"},
	}
	for _, r := range routes {
		for _, tok := range []string{"-", "wrong", strings.ToUpper(s.Token()), s.Token() + "0"} {
			rec := do(s, local, r.method, r.path, "", tok)
			if rec.Code != http.StatusUnauthorized || rec.Body.String() != "unauthorized\n" {
				t.Errorf("%s %s with token %q: %d %q", r.method, r.path, tok, rec.Code, rec.Body)
			}
		}
		if rec := do(s, local, r.method, r.path+"?token="+s.Token(), "", "-"); (rec.Code == http.StatusUnauthorized) != (r.path != "/events") {
			t.Errorf("%s %s?token=: %d %q", r.method, r.path, rec.Code, rec.Body)
		}
	}
	if rec := do(s, local, "GET", "/status", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("right token: %d %q", rec.Code, rec.Body)
	}
	if rt.cancelled() != 0 {
		t.Fatal("an unauthorized /cancel reached the runtime")
	}
}

// Each request's TCP peer must be loopback, token or not.
func TestPeerCheck(t *testing.T) {
	rt := newFakeRuntime("")
	s := handlerOnly(t, Config{Run: newOneShot(rt, nil)})
	for _, peer := range []string{"10.1.2.3:5555", "[2001:db8::1]:80", "[::ffff:192.168.0.1]:1", "bogus"} {
		for _, tok := range []string{"", "-"} {
			rec := do(s, peer, "POST", "/cancel", "", tok)
			if rec.Code != http.StatusForbidden || rec.Body.String() != "forbidden\n" {
				t.Errorf("peer %s: %d %q", peer, rec.Code, rec.Body)
			}
		}
	}
	if rt.cancelled() != 0 {
		t.Fatal("a forbidden /cancel reached the runtime")
	}
	for _, peer := range []string{"127.0.0.1:1", "[::1]:1"} {
		if rec := do(s, peer, "GET", "/status", "", ""); rec.Code != http.StatusOK {
			t.Errorf("peer %s: %d %q", peer, rec.Code, rec.Body)
		}
	}
}

func TestOneShotRoutes(t *testing.T) {
	rt := newFakeRuntime("")
	s := handlerOnly(t, Config{Run: newOneShot(rt, nil), RunID: "run1"})

	rec := do(s, local, "GET", "/status", "", "")
	want, _ := json.Marshal(rt.Status())
	if rec.Code != 200 || rec.Body.String() != string(want)+"\n" || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /status: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	for _, tc := range []struct {
		method, path string
		code         int
		body, allow  string
	}{
		{"POST", "/status", 405, "method not allowed\n", "GET"},
		{"POST", "/events", 405, "method not allowed\n", "GET"},
		{"GET", "/cancel", 405, "method not allowed\n", "POST"},
		{"GET", "/answer-permission", 405, "method not allowed\n", "POST"},
		{"GET", "/status/run1", 404, "not found\n", ""},
		{"GET", "/status/", 404, "not found\n", ""},
		{"POST", "/cancel/run1", 404, "not found\n", ""},
		{"GET", "/runtimes", 404, "not found\n", ""},
		{"GET", "/", 404, "not found\n", ""},
		{"GET", "/events?runtime_id=rt_7", 404, "runtime not found\n", ""},
		{"GET", "/events?limit=-1", 400, "limit must be a non-negative integer\n", ""},
		{"GET", "/events?after_seq=x", 400, "after_seq must be a non-negative integer\n", ""},
		{"GET", "/events?replay=maybe", 400, "replay must be true or false\n", ""},
	} {
		rec := do(s, local, tc.method, tc.path, "", "")
		if rec.Code != tc.code || rec.Body.String() != tc.body || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %q allow %q", tc.method, tc.path, rec.Code, rec.Body, rec.Header().Get("Allow"))
		}
	}
	if rt.cancelled() != 0 {
		t.Fatal("cancelled by a wrong request")
	}
	rec = do(s, local, "POST", "/cancel", "", "")
	if rec.Code != 200 || rec.Body.String() != "{\"ok\":true}\n" || rt.cancelled() != 1 {
		t.Fatalf("POST /cancel: %d %q, cancels %d", rec.Code, rec.Body, rt.cancelled())
	}
}

// invalidAnswer is the error the permission broker gives an answer naming
// an option that was not offered.
func invalidAnswer(t *testing.T) error {
	_, err := permission.ValidateAnswer(permission.Answer{OptionID: "maybe"}, []sdk.PermissionOption{{ID: "allow", Kind: "allow_once"}})
	if !errors.Is(err, permission.ErrInvalid) {
		t.Fatalf("ValidateAnswer: %v", err)
	}
	return err
}

func TestAnswerPermission(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ans     *fakeAnswerer
		body    string
		code    int
		resp    string
		answers int
	}{
		{"accepted", &fakeAnswerer{pending: true}, `{"request_id":"r1","option_id":"allow","message":"ok"}`, 200, "{\"accepted\":true}\n", 1},
		{"runtime id of the run", &fakeAnswerer{pending: true}, `{"request_id":"r1","option_id":"allow","runtime_id":"run1"}`, 200, "{\"accepted\":true}\n", 1},
		{"nothing pending", &fakeAnswerer{}, `{"request_id":"r1","option_id":"allow"}`, 409, "no pending permission\n", 0},
		{"no answerer", nil, `{"request_id":"r1","option_id":"allow"}`, 409, "no pending permission\n", 0},
		{"another request pending", &fakeAnswerer{pending: true, err: fmt.Errorf("%w: r0", ErrNoPendingPermission)}, `{"request_id":"r1","option_id":"allow"}`, 409, "no pending permission\n", 1},
		{"already answered", &fakeAnswerer{pending: true, err: permission.ErrAlreadyAnswered}, `{"request_id":"r1","option_id":"allow"}`, 409, "no pending permission\n", 1},
		{"option not offered", &fakeAnswerer{pending: true, err: invalidAnswer(t)}, `{"request_id":"r1","option_id":"maybe"}`, 400, "invalid permission message\n", 1},
		{"broken json", &fakeAnswerer{pending: true}, `{"request_id":`, 400, "invalid json\n", 0},
		{"empty body", &fakeAnswerer{pending: true}, ``, 400, "invalid json\n", 0},
		{"trailing garbage", &fakeAnswerer{pending: true}, `{"request_id":"r1","option_id":"allow"} x`, 400, "invalid json\n", 0},
		{"not an object", &fakeAnswerer{pending: true}, `["r1","allow"]`, 400, "invalid permission message\n", 0},
		{"id not a string", &fakeAnswerer{pending: true}, `{"request_id":1,"option_id":"allow"}`, 400, "invalid permission message\n", 0},
		{"no option", &fakeAnswerer{pending: true}, `{"request_id":"r1"}`, 400, "invalid permission message\n", 0},
		{"no request id", &fakeAnswerer{pending: true}, `{"option_id":"allow"}`, 400, "invalid permission message\n", 0},
		{"other runtime", &fakeAnswerer{pending: true}, `{"request_id":"r1","option_id":"allow","runtime_id":"rt_2"}`, 404, "runtime not found\n", 0},
		{"failure", &fakeAnswerer{pending: true, err: errors.New("broker gone")}, `{"request_id":"r1","option_id":"allow"}`, 500, "broker gone\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newOneShot(newFakeRuntime(""), nil)
			if tc.ans != nil {
				target = newOneShot(newFakeRuntime(""), tc.ans)
			}
			s := handlerOnly(t, Config{Run: target, RunID: "run1"})
			rec := do(s, local, "POST", "/answer-permission", tc.body, "")
			if rec.Code != tc.code || rec.Body.String() != tc.resp {
				t.Fatalf("%d %q, want %d %q", rec.Code, rec.Body, tc.code, tc.resp)
			}
			if tc.ans != nil && len(tc.ans.got) != tc.answers {
				t.Fatalf("answers %q", tc.ans.got)
			}
		})
	}
	ans := &fakeAnswerer{pending: true}
	s := handlerOnly(t, Config{Run: newOneShot(newFakeRuntime(""), ans)})
	do(s, local, "POST", "/answer-permission", `{"request_id":"r1","option_id":"deny","message":"not that"}`, "")
	if len(ans.got) != 1 || ans.got[0] != "r1 deny not that" {
		t.Fatalf("answer passed on as %q", ans.got)
	}
	big := `{"request_id":"r1","option_id":"allow","message":"` + strings.Repeat("x", maxAnswerBody) + `"}`
	if rec := do(s, local, "POST", "/answer-permission", big, ""); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d %q", rec.Code, rec.Body)
	}
}

// fakeSupervisor is a stable supervisor over OneShot targets: rt_1 and
// rt_2, and an all-runtimes stream from a writer of its own.
type fakeSupervisor struct {
	runtimes map[string]*fakeRuntime
	targets  map[string]Target
	all      *event.Writer
}

func newFakeSupervisor(perms map[string]*fakeAnswerer) *fakeSupervisor {
	f := &fakeSupervisor{runtimes: map[string]*fakeRuntime{}, targets: map[string]Target{},
		all: event.NewWriter(nil, event.Stamp{Now: fixedNow}, event.Options{})}
	for _, id := range []string{"rt_1", "rt_2"} {
		rt := newFakeRuntime(id)
		f.runtimes[id] = rt
		var a *fakeAnswerer
		if perms != nil {
			a = perms[id]
		}
		if a != nil {
			f.targets[id] = entryTarget{newOneShot(rt, a), id}
		} else {
			f.targets[id] = entryTarget{newOneShot(rt, nil), id}
		}
	}
	f.targets["rt_gone"] = goneTarget{}
	return f
}

func (f *fakeSupervisor) Runtime(id string) (Target, bool) {
	t, ok := f.targets[id]
	return t, ok
}

func (f *fakeSupervisor) List() any {
	return []map[string]any{{"runtime_id": "rt_1", "status": "running"}, {"runtime_id": "rt_2", "status": "idle"}}
}

func (f *fakeSupervisor) SubscribeAll() (Subscription, error) { return f.all.Subscribe(0), nil }

// entryTarget is a TableTarget whose status is a stable runtime entry.
type entryTarget struct {
	*TableTarget
	id string
}

func (e entryTarget) Status() any { return map[string]any{"runtime_id": e.id, "status": "running"} }

// goneTarget's runtime went away between the lookup and the call.
type goneTarget struct{}

func (goneTarget) Status() any { return nil }
func (goneTarget) Subscribe(SubscribeOptions) (Subscription, error) {
	return nil, fmt.Errorf("rt_gone: %w", ErrRuntimeNotFound)
}
func (goneTarget) Cancel() error { return fmt.Errorf("rt_gone: %w", ErrRuntimeNotFound) }
func (goneTarget) AnswerPermission(string, string, string) error {
	return fmt.Errorf("rt_gone: %w", ErrRuntimeNotFound)
}

func TestStableRoutes(t *testing.T) {
	a1 := &fakeAnswerer{pending: true}
	sup := newFakeSupervisor(map[string]*fakeAnswerer{"rt_1": a1})
	s := handlerOnly(t, Config{Stable: sup})
	list := "[{\"runtime_id\":\"rt_1\",\"status\":\"running\"},{\"runtime_id\":\"rt_2\",\"status\":\"idle\"}]\n"
	for _, tc := range []struct {
		method, path, body string
		code               int
		resp               string
	}{
		{"GET", "/runtimes", "", 200, list},
		{"GET", "/status", "", 200, list},
		{"POST", "/runtimes", "", 405, "method not allowed\n"},
		{"GET", "/status/rt_2", "", 200, "{\"runtime_id\":\"rt_2\",\"status\":\"running\"}\n"},
		{"GET", "/status/rt_9", "", 404, "runtime not found\n"},
		{"GET", "/status/", "", 400, "runtime_id required\n"},
		{"POST", "/status/rt_2", "", 405, "method not allowed\n"},
		{"POST", "/cancel", "", 400, "runtime_id required in stable mode; use POST /cancel/<runtime_id>\n"},
		{"POST", "/cancel/", "", 400, "runtime_id required\n"},
		{"POST", "/cancel/rt_9", "", 404, "runtime not found\n"},
		{"POST", "/cancel/rt_gone", "", 404, "runtime not found\n"},
		{"GET", "/cancel/rt_2", "", 405, "method not allowed\n"},
		{"POST", "/cancel/rt_2", "", 200, "{\"ok\":true}\n"},
		{"POST", "/answer-permission", `{"request_id":"r1","option_id":"allow"}`, 400, "runtime_id required\n"},
		{"POST", "/answer-permission", `{"request_id":"r1","option_id":"allow","runtime_id":"rt_9"}`, 404, "runtime not found\n"},
		{"POST", "/answer-permission", `{"request_id":"r1","option_id":"allow","runtime_id":"rt_gone"}`, 404, "runtime not found\n"},
		{"POST", "/answer-permission", `{"request_id":"r1","option_id":"allow","runtime_id":"rt_2"}`, 409, "no pending permission\n"},
		{"POST", "/answer-permission", `{"request_id":"r1","option_id":"allow","runtime_id":"rt_1"}`, 200, "{\"accepted\":true}\n"},
		{"GET", "/events?replay=true", "", 400, "runtime_id required\n"},
		{"GET", "/events?after_seq=3", "", 400, "runtime_id required\n"},
		{"GET", "/events?runtime_id=rt_9", "", 404, "runtime not found\n"},
		{"GET", "/events?runtime_id=rt_gone", "", 404, "runtime not found\n"},
	} {
		rec := do(s, local, tc.method, tc.path, tc.body, "")
		if rec.Code != tc.code || rec.Body.String() != tc.resp {
			t.Errorf("%s %s %s: %d %q, want %d %q", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.code, tc.resp)
		}
	}
	if sup.runtimes["rt_2"].cancelled() != 1 || sup.runtimes["rt_1"].cancelled() != 0 {
		t.Fatal("POST /cancel/rt_2 cancelled the wrong runtimes")
	}
	if len(a1.got) != 1 || a1.got[0] != "r1 allow " {
		t.Fatalf("rt_1 answers %q", a1.got)
	}
}

// Stable streams: one runtime's with runtime_id, everyone's without.
func TestStableEvents(t *testing.T) {
	sup := newFakeSupervisor(nil)
	s := start(t, Config{Stable: sup})
	c := client(t)
	one := request(t, c, s, "GET", "/events?runtime_id=rt_1", "")
	defer one.Body.Close()
	all := request(t, c, s, "GET", "/events", "")
	defer all.Body.Close()
	line1 := sup.runtimes["rt_1"].write(t, event.Event{"event": "agent.message_chunk", "content": map[string]any{"text": "one"}})
	sup.runtimes["rt_2"].write(t, event.Event{"event": "agent.message_chunk", "content": map[string]any{"text": "two"}})
	if _, err := sup.all.Write(event.Event{"event": "agent.status", "runtime_id": "rt_2", "phase": "working"}); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, one.Body); got != "event: event\ndata: "+string(line1)+"\n\n" {
		t.Fatalf("rt_1 stream: %q", got)
	}
	if got := readFrame(t, all.Body); !strings.Contains(got, `"runtime_id":"rt_2"`) {
		t.Fatalf("all stream: %q", got)
	}
}

func TestTokenFileAndStderr(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "token")
	var stderr bytes.Buffer
	s := start(t, Config{Run: newOneShot(newFakeRuntime(""), nil), TokenFile: path, Stderr: &stderr})
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(path); string(b) != s.Token()+"\n" {
		t.Fatalf("token file holds %q, token %q", b, s.Token())
	}
	if d, _ := os.Stat(filepath.Dir(path)); d.Mode().Perm() != 0o700 {
		t.Fatalf("token file directory mode %v", d.Mode())
	}
	if stderr.String() != "avenor: http debug listening on "+s.URL()+"\n" {
		t.Fatalf("stderr without a terminal: %q", stderr.String())
	}
	// The token from the file opens the server.
	c := client(t)
	tok, _ := os.ReadFile(path)
	req, _ := http.NewRequest("GET", s.URL()+"/status", nil)
	req.Header.Set(TokenHeader, strings.TrimSpace(string(tok)))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /status with the file's token: %d", resp.StatusCode)
	}
	s.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("token file left after Close: %v", err)
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "sub", "*")); len(ms) != 0 {
		t.Fatalf("files left: %v", ms)
	}

	// Shown on a terminal; a file replaced since is not removed.
	stderr.Reset()
	s2 := start(t, Config{Run: newOneShot(newFakeRuntime(""), nil), TokenFile: path, Stderr: &stderr, ShowToken: true})
	want := "avenor: http debug listening on " + s2.URL() + "\navenor: http debug token: " + s2.Token() + "\n"
	if stderr.String() != want {
		t.Fatalf("stderr on a terminal: %q, want %q", stderr.String(), want)
	}
	if err := os.WriteFile(path, []byte("someone else's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if b, _ := os.ReadFile(path); string(b) != "someone else's\n" {
		t.Fatalf("a replaced token file was touched: %q", b)
	}
}

func TestTokenFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Config{Addr: ":0", Run: newOneShot(newFakeRuntime(""), nil), TokenFile: dir})
	if err == nil || !strings.Contains(err.Error(), "http debug token file "+dir) {
		t.Fatalf("token file that is a directory: %v", err)
	}
}

// Close while requests run: it waits for every handler.
func TestCloseDuringRequests(t *testing.T) {
	s := start(t, Config{Stable: newFakeSupervisor(nil)})
	c := client(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", s.URL()+"/events", nil)
			req.Header.Set(TokenHeader, s.Token())
			if resp, err := c.Do(req); err == nil {
				_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
				resp.Body.Close()
			}
		}()
	}
	s.Close()
	wg.Wait()
}
