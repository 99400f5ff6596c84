package permission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// warnings collects the file handler's warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(msg string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// awaitAsk waits for an Ask at most 10 s, so a handler that blocks fails
// the test instead of hanging it.
func awaitAsk(t *testing.T, res <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return within 10s: the handler is blocked")
		return askResult{}
	}
}

// A named pipe at <base>.req.response never blocks the handler: it is not
// an answer, the handler says so once and keeps polling, its timeout fires
// and the .req is removed; a regular file renamed over the pipe is taken.
func TestFileHandlerNonRegularResponse(t *testing.T) {
	_, fr := goldenRequest()
	for _, tc := range []struct {
		name    string
		replace bool // a regular answer is renamed over the pipe
	}{
		{name: "fifo until the timeout"},
		{name: "fifo replaced by an answer", replace: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &warnings{}
			timeout := 300 * time.Millisecond
			if tc.replace {
				timeout = 10 * time.Second
			}
			base := filepath.Join(t.TempDir(), "run.perm")
			h := permission.NewFileHandler(base, permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: timeout, Warn: w.warn})
			res := askAsync(context.Background(), h, fr)
			waitFile(t, h.ReqPath())
			if err := syscall.Mkfifo(h.ResponsePath(), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.replace {
				deadline := time.Now().Add(10 * time.Second)
				for len(w.all()) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				writeResponse(t, h.ResponsePath(), `{"option_id":"deny"}`)
				r := awaitAsk(t, res)
				if r.err != nil || r.a.OptionID != "deny" {
					t.Fatalf("Ask = %+v, %v; want the answer written over the pipe", r.a, r.err)
				}
			} else {
				r := awaitAsk(t, res)
				if !errors.Is(r.err, permission.ErrFileTimeout) {
					t.Fatalf("Ask error = %v, want the timeout", r.err)
				}
				if _, err := os.Stat(h.ReqPath()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf(".req still on disk after the timeout: %v", err)
				}
			}
			msgs := w.all()
			if len(msgs) != 1 || !strings.Contains(msgs[0], h.ResponsePath()+" is a named pipe (FIFO)") ||
				!strings.Contains(msgs[0], "not a regular file") {
				t.Errorf("warnings = %q, want one naming the pipe", msgs)
			}
		})
	}
}

// A response may name the request it answers: a matching request_id or none
// is taken, another request's id is ignored (with one warning) and the
// handler keeps waiting.
func TestFileHandlerResponseRequestID(t *testing.T) {
	_, fr := goldenRequest() // request 17
	for _, tc := range []struct {
		name  string
		first string // the first response written
		then  string // written after the first's warning; "" none
		want  string // option taken; "" the timeout
		warn  string // part of the one warning; "" none
	}{
		{name: "matching id", first: `{"request_id":"17","option_id":"allow"}`, want: "allow"},
		{name: "no id keeps its meaning", first: `{"option_id":"deny"}`, want: "deny"},
		{name: "another request's answer is not applied", first: `{"request_id":"16","option_id":"allow"}`,
			warn: `answers request "16", not the pending request "17"; ignored`},
		{name: "another request's answer, then this one's", first: `{"request_id":"16","option_id":"allow"}`,
			then: `{"request_id":"17","option_id":"deny"}`, want: "deny", warn: `answers request "16"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &warnings{}
			timeout := 10 * time.Second
			if tc.want == "" {
				timeout = 200 * time.Millisecond
			}
			base := filepath.Join(t.TempDir(), "run.perm")
			h := permission.NewFileHandler(base, permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: timeout, Warn: w.warn})
			res := askAsync(context.Background(), h, fr)
			waitFile(t, h.ReqPath())
			writeResponse(t, h.ResponsePath(), tc.first)
			if tc.then != "" {
				deadline := time.Now().Add(10 * time.Second)
				for len(w.all()) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				writeResponse(t, h.ResponsePath(), tc.then)
			}
			r := awaitAsk(t, res)
			if tc.want == "" {
				if !errors.Is(r.err, permission.ErrFileTimeout) {
					t.Fatalf("Ask = %+v, %v; want the timeout", r.a, r.err)
				}
			} else if r.err != nil || r.a.OptionID != tc.want {
				t.Fatalf("Ask = %+v, %v; want option %q", r.a, r.err, tc.want)
			}
			msgs := w.all()
			switch {
			case tc.warn == "" && len(msgs) != 0:
				t.Errorf("warnings = %q, want none", msgs)
			case tc.warn != "" && (len(msgs) != 1 || !strings.Contains(msgs[0], tc.warn)):
				t.Errorf("warnings = %q, want one containing %q", msgs, tc.warn)
			}
		})
	}
}

func TestParseResponseRequestID(t *testing.T) {
	a, err := permission.ParseResponse([]byte(`{"request_id":"perm_1","option_id":"allow"}`), testOptions)
	if err != nil || a.RequestID != "perm_1" || a.OptionID != "allow" {
		t.Fatalf("ParseResponse = %+v, %v", a, err)
	}
	if _, err := permission.ParseResponse([]byte(`{"request_id":7,"option_id":"allow"}`), testOptions); !errors.Is(err, permission.ErrBadResponse) {
		t.Fatalf("ParseResponse with a numeric request_id = %v, want ErrBadResponse", err)
	}
}

// A warning of the file handler reaches the event stream as
// avenor.warning{source:"permission"}.
func TestFileWarningIsAnEvent(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run.perm")
	b := permission.New(permission.Options{FileBase: base, File: fastFile})
	rec := &recorder{}
	ctx := context.Background()
	wait := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "perm_2", Options: testOptions}, rec.emit)
	res := make(chan error, 1)
	go func() {
		_, err := wait(ctx)
		res <- err
	}()
	waitFile(t, base+".req")
	writeResponse(t, base+".req.response", `{"request_id":"perm_1","option_id":"allow"}`)
	deadline := time.Now().Add(10 * time.Second)
	for rec.first("avenor.warning") == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	writeResponse(t, base+".req.response", `{"request_id":"perm_2","option_id":"deny"}`)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	ev := rec.first("avenor.warning")
	if ev == nil || ev["source"] != "permission" || ev["request_id"] != "perm_2" ||
		!strings.Contains(ev["message"].(string), `answers request "perm_1", not the pending request "perm_2"`) {
		t.Fatalf("avenor.warning = %v", ev)
	}
	if resp := rec.first("permission.response"); resp["option_id"] != "deny" {
		t.Fatalf("permission.response = %v, want deny (perm_2's own answer)", resp)
	}
}

// A second answer to one request is refused with an error that says so,
// whether the first came from the control plane or the file handler, and
// whether or not the request was released yet; accepted answers are never
// dropped.
func TestSecondAnswerRefused(t *testing.T) {
	wantMsg := `permission "perm_1" was already answered`
	check := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, permission.ErrAlreadyAnswered) || err.Error() != wantMsg {
			t.Fatalf("second Answer = %v, want %q", err, wantMsg)
		}
	}
	req := sdk.PermissionRequest{ID: "perm_1", Options: testOptions}

	t.Run("control, before the wait takes it", func(t *testing.T) {
		b := permission.New(permission.Options{})
		ctx := context.Background()
		wait := b.Session("s").Record(ctx, req, (&recorder{}).emit)
		if err := b.Answer("perm_1", permission.Answer{OptionID: "allow"}); err != nil {
			t.Fatal(err)
		}
		check(t, b.Answer("perm_1", permission.Answer{OptionID: "deny"}))
		if d, err := wait(ctx); err != nil || d.OptionID != "allow" {
			t.Fatalf("decision = %+v, %v; want the first answer", d, err)
		}
	})
	t.Run("control, after the decision", func(t *testing.T) {
		b := permission.New(permission.Options{})
		ctx := context.Background()
		wait := b.Session("s").Record(ctx, req, (&recorder{}).emit)
		if err := b.Answer("perm_1", permission.Answer{OptionID: "allow"}); err != nil {
			t.Fatal(err)
		}
		if _, err := wait(ctx); err != nil {
			t.Fatal(err)
		}
		check(t, b.Answer("perm_1", permission.Answer{OptionID: "deny"}))
	})
	t.Run("file, after the decision", func(t *testing.T) {
		base := filepath.Join(t.TempDir(), "run.perm")
		b := permission.New(permission.Options{FileBase: base, File: fastFile})
		ctx := context.Background()
		wait := b.Session("s").Record(ctx, req, (&recorder{}).emit)
		res := make(chan sdk.PermissionDecision, 1)
		go func() {
			d, _ := wait(ctx)
			res <- d
		}()
		waitFile(t, base+".req")
		writeResponse(t, base+".req.response", `{"option_id":"deny"}`)
		if d := <-res; d.OptionID != "deny" {
			t.Fatalf("decision = %+v", d)
		}
		check(t, b.Answer("perm_1", permission.Answer{OptionID: "allow"}))
	})
	t.Run("a request nobody answered is not pending", func(t *testing.T) {
		b := permission.New(permission.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		wait := b.Session("s").Record(ctx, req, (&recorder{}).emit)
		cancel()
		_, _ = wait(ctx)
		if err := b.Answer("perm_1", permission.Answer{OptionID: "allow"}); !errors.Is(err, permission.ErrNotPending) {
			t.Fatalf("Answer = %v, want ErrNotPending", err)
		}
	})
	t.Run("an id used again is answerable again", func(t *testing.T) {
		b := permission.New(permission.Options{})
		ctx := context.Background()
		s := b.Session("s")
		for i := range 2 {
			wait := s.Record(ctx, req, (&recorder{}).emit)
			if err := b.Answer("perm_1", permission.Answer{OptionID: "allow"}); err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			if _, err := wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
