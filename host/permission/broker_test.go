package permission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// fakeControl is a control plane with a settable claim and clients.
type fakeControl struct {
	claim permission.Claim
	mu    sync.Mutex
	conn  bool
	gone  chan struct{}
}

func newControl(claim permission.Claim, connected bool) *fakeControl {
	c := &fakeControl{claim: claim, conn: connected, gone: make(chan struct{})}
	if !connected {
		close(c.gone)
	}
	return c
}

func (c *fakeControl) Claim() permission.Claim { return c.claim }
func (c *fakeControl) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}
func (c *fakeControl) Disconnected() <-chan struct{} { return c.gone }
func (c *fakeControl) disconnectAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn {
		c.conn = false
		close(c.gone)
	}
}

// recorder collects emitted events.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) emit(ev event.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.evs...)
}

func (r *recorder) first(typ sdk.EventType) event.Event {
	for _, ev := range r.events() {
		if ev.Type() == typ {
			return ev
		}
	}
	return nil
}

// How a precedence case is answered once the request is announced.
type act int

const (
	actNothing        act = iota // nobody answers: ctx ends the wait
	actControl                   // a control client answers through Broker.Answer
	actFile                      // the harness writes .req.response (after any fall-through)
	actDisconnect                // every control client leaves, then the file answers
	actDisconnectNone            // every control client leaves; no file handler: waits for ctx
)

func TestPrecedence(t *testing.T) {
	ordinary := []sdk.PermissionOption{{ID: "no", Kind: "reject"}, {ID: "yes", Kind: "allow_once"}, {ID: "yes2", Kind: "allow_always"}}
	for _, tc := range []struct {
		name      string
		auto      bool
		control   *fakeControl
		claim     time.Duration
		file      bool
		userInput bool
		options   []sdk.PermissionOption
		act       act

		resolver string
		source   string // "" when nothing decides
		option   string
	}{
		// auto-approve
		{name: "auto-approve", auto: true, resolver: "automatic", source: "avenor", option: "yes"},
		{name: "auto-approve wins over file", auto: true, file: true, resolver: "automatic", source: "avenor", option: "yes"},
		{name: "auto-approve wins over a connected client", auto: true, control: newControl(permission.ClaimUnknown, true), resolver: "automatic", source: "avenor", option: "yes"},
		{name: "auto-approve wins over a reserved claim", auto: true, control: newControl(permission.ClaimReserved, true), resolver: "automatic", source: "avenor", option: "yes"},
		{name: "auto-approve never answers user input; none", auto: true, userInput: true, act: actNothing, resolver: "none"},
		{name: "auto-approve never answers user input; file", auto: true, userInput: true, file: true, act: actFile, resolver: "file", source: "file", option: "no"},
		{name: "auto-approve never answers user input; control", auto: true, userInput: true, control: newControl(permission.ClaimUnknown, true), act: actControl, resolver: "reserved", source: "control", option: "yes"},
		{name: "auto-approve without an allow option falls through", auto: true, file: true, options: []sdk.PermissionOption{{ID: "no", Kind: "deny"}}, act: actFile, resolver: "file", source: "file", option: "no"},

		// control plane
		{name: "connected client takes it", control: newControl(permission.ClaimUnknown, true), file: true, act: actControl, resolver: "reserved", source: "control", option: "yes"},
		{name: "reserved claim takes it", control: newControl(permission.ClaimReserved, true), act: actControl, resolver: "reserved", source: "control", option: "no"},
		{name: "no client and no claim: file", control: newControl(permission.ClaimUnknown, false), file: true, act: actFile, resolver: "file", source: "file", option: "no"},
		{name: "released claim: file", control: newControl(permission.ClaimReleased, true), file: true, act: actFile, resolver: "file", source: "file", option: "no"},
		{name: "released claim without file: none", control: newControl(permission.ClaimReleased, true), act: actNothing, resolver: "none"},
		{name: "reserved while nobody is connected falls through at once", control: newControl(permission.ClaimReserved, false), file: true, act: actFile, resolver: "reserved", source: "file", option: "no"},
		{name: "claim timeout falls through to file", control: newControl(permission.ClaimUnknown, true), claim: 30 * time.Millisecond, file: true, act: actFile, resolver: "reserved", source: "file", option: "no"},
		{name: "claim timeout falls through to none", control: newControl(permission.ClaimReserved, true), claim: 30 * time.Millisecond, act: actNothing, resolver: "reserved"},
		{name: "late control answer after the claim timeout", control: newControl(permission.ClaimReserved, true), claim: 10 * time.Millisecond, act: actControl, resolver: "reserved", source: "control", option: "yes"},
		{name: "every client leaves: file", control: newControl(permission.ClaimUnknown, true), file: true, act: actDisconnect, resolver: "reserved", source: "file", option: "no"},
		{name: "every client leaves: none", control: newControl(permission.ClaimReserved, true), act: actDisconnectNone, resolver: "reserved"},
		{name: "no deadline: the client's answer after a while", control: newControl(permission.ClaimUnknown, true), file: true, act: actControl, resolver: "reserved", source: "control", option: "yes2"},

		// file and none
		{name: "file handler", file: true, act: actFile, resolver: "file", source: "file", option: "no"},
		{name: "file handler, user input", file: true, userInput: true, act: actFile, resolver: "file", source: "file", option: "no"},
		{name: "control answer while the file handler waits", file: true, act: actControl, resolver: "file", source: "control", option: "yes"},
		{name: "none waits", act: actNothing, resolver: "none"},
		{name: "none, user input", userInput: true, act: actNothing, resolver: "none"},
		{name: "none, late control answer delivered directly", act: actControl, resolver: "none", source: "control", option: "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := permission.Options{AutoApprove: tc.auto, ClaimTimeout: tc.claim, File: fastFile}
			if tc.control != nil {
				opts.Control = tc.control
			}
			base := filepath.Join(t.TempDir(), "run.perm")
			if tc.file {
				opts.FileBase = base
			}
			b := permission.New(opts)
			options := tc.options
			if options == nil {
				options = ordinary
			}
			req := sdk.PermissionRequest{ID: "p1", Tool: "bash", Options: options, RequiresUserInput: tc.userInput}
			rec := &recorder{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := b.Session("ses").Record(ctx, req, rec.emit)
			reqEv := rec.first("permission.request")
			if reqEv == nil || reqEv["resolver"] != tc.resolver {
				t.Fatalf("permission.request = %v, want resolver %q", reqEv, tc.resolver)
			}

			done := make(chan struct{})
			var d sdk.PermissionDecision
			var err error
			go func() {
				defer close(done)
				d, err = wait(ctx)
			}()
			switch tc.act {
			case actControl:
				time.Sleep(40 * time.Millisecond) // past any claim timeout
				if aerr := b.Answer("p1", permission.Answer{OptionID: tc.option}); aerr != nil {
					t.Fatalf("Answer: %v", aerr)
				}
			case actDisconnect:
				tc.control.disconnectAll()
				fallthrough
			case actFile:
				waitFile(t, base+".req")
				writeResponse(t, base+".req.response", `{"option_id":"`+tc.option+`"}`)
			case actDisconnectNone:
				tc.control.disconnectAll()
				fallthrough
			case actNothing:
				time.Sleep(60 * time.Millisecond)
				if _, serr := os.Stat(base + ".req"); !tc.file && serr == nil {
					t.Errorf("a .req was written without a file handler")
				}
				cancel()
			}
			<-done

			resp := rec.first("permission.response")
			if tc.source == "" {
				if !errors.Is(err, context.Canceled) || d.Allowed() || resp != nil {
					t.Fatalf("wait = %+v, %v, response %v; want it waiting until ctx ends", d, err, resp)
				}
				return
			}
			if err != nil || d.OptionID != tc.option || d.Outcome != sdk.OutcomeSelected {
				t.Fatalf("wait = %+v, %v; want option %q", d, err, tc.option)
			}
			if resp == nil || resp["source"] != tc.source || resp["option_id"] != tc.option || resp["request_id"] != "p1" {
				t.Fatalf("permission.response = %v, want source %q option %q", resp, tc.source, tc.option)
			}
			evs := rec.events()
			if len(evs) != 2 || evs[0].Type() != "permission.request" {
				t.Errorf("events = %v, want exactly the request then the response", evs)
			}
			if b.Pending() == nil || len(b.Pending()) != 0 {
				t.Errorf("still pending after the decision: %v", b.Pending())
			}
		})
	}
}

func TestOnePendingPerSession(t *testing.T) {
	b := permission.New(permission.Options{})
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := b.Session("ses")
	opts := []sdk.PermissionOption{{ID: "yes", Kind: "allow"}}
	first := s.Record(ctx, sdk.PermissionRequest{ID: "1", Options: opts}, rec.emit)
	second := s.Record(ctx, sdk.PermissionRequest{ID: "2", Options: opts}, rec.emit)
	d, err := second(ctx)
	if !errors.Is(err, permission.ErrAlreadyPending) || err.Error() != "another permission request is already pending" || d.Allowed() {
		t.Fatalf("second request = %+v, %v; want the contract's error", d, err)
	}
	// Another session is not blocked.
	other := b.Session("other").Record(ctx, sdk.PermissionRequest{ID: "3", Options: opts}, rec.emit)
	if err := b.Answer("3", permission.Answer{OptionID: "yes"}); err != nil {
		t.Fatal(err)
	}
	if d, err := other(ctx); err != nil || !d.Allowed() {
		t.Fatalf("other session = %+v, %v", d, err)
	}
	// Once the first is decided, the session takes a new request.
	if err := b.Answer("1", permission.Answer{OptionID: "yes"}); err != nil {
		t.Fatal(err)
	}
	if d, err := first(ctx); err != nil || !d.Allowed() {
		t.Fatalf("first = %+v, %v", d, err)
	}
	third := s.Record(ctx, sdk.PermissionRequest{ID: "4", Options: opts}, rec.emit)
	_ = b.Answer("4", permission.Answer{OptionID: "yes"})
	if _, err := third(ctx); err != nil {
		t.Fatalf("third = %v", err)
	}
}

func TestMissingRequestID(t *testing.T) {
	b := permission.New(permission.Options{AutoApprove: true})
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	wait := b.Session("s").Record(ctx, sdk.PermissionRequest{Options: []sdk.PermissionOption{{ID: "y", Kind: "allow"}}}, rec.emit)
	errEv := rec.first("avenor.error")
	if errEv == nil || errEv["source"] != "permission" || errEv["message"] != "permission.request missing request_id" {
		t.Fatalf("avenor.error = %v", errEv)
	}
	if d, err := wait(ctx); !errors.Is(err, context.DeadlineExceeded) || d.Allowed() {
		t.Fatalf("wait = %+v, %v; want it waiting (never auto-approved)", d, err)
	}
}

func TestAnswerErrors(t *testing.T) {
	b := permission.New(permission.Options{})
	if err := b.Answer("nope", permission.Answer{OptionID: "y"}); !errors.Is(err, permission.ErrNotPending) {
		t.Errorf("Answer to nothing = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	wait := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "1", Options: testOptions}, rec.emit)
	if err := b.Answer("1", permission.Answer{OptionID: "maybe"}); !errors.Is(err, permission.ErrUnknownOption) {
		t.Errorf("Answer with an unknown option = %v", err)
	}
	if err := b.Answer("1", permission.Answer{OptionID: "explain"}); !errors.Is(err, permission.ErrMessageRequired) {
		t.Errorf("Answer without a required message = %v", err)
	}
	if err := b.Answer("1", permission.Answer{OptionID: "always", Message: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Answer("1", permission.Answer{OptionID: "deny"}); !errors.Is(err, permission.ErrAlreadyAnswered) {
		t.Errorf("second Answer = %v", err)
	}
	d, err := wait(ctx)
	want := sdk.PermissionDecision{Outcome: "selected", OptionID: "always", Kind: sdk.KindAllowAlways, Message: "ok"}
	if err != nil || d != want {
		t.Fatalf("decision = %+v, %v; want %+v", d, err, want)
	}
}

// A cancelled answer cancels the run and tells the plugin.
func TestCancelledAnswerCancelsRun(t *testing.T) {
	for _, via := range []string{"file", "control"} {
		t.Run(via, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "run.perm")
			var cancelled int
			b := permission.New(permission.Options{FileBase: base, File: fastFile, CancelRun: func() { cancelled++ }})
			rec := &recorder{}
			ctx := context.Background()
			wait := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "9", Options: testOptions}, rec.emit)
			res := make(chan sdk.PermissionDecision, 1)
			go func() {
				d, err := wait(ctx)
				if err != nil {
					t.Errorf("wait: %v", err)
				}
				res <- d
			}()
			waitFile(t, base+".req")
			if via == "file" {
				writeResponse(t, base+".req.response", `{"outcome":"cancelled","option_id":"allow"}`)
			} else if err := b.Answer("9", permission.Answer{Outcome: "cancelled"}); err != nil {
				t.Fatal(err)
			}
			d := <-res
			if d.Outcome != sdk.OutcomeCancelled || d.Allowed() || cancelled != 1 {
				t.Fatalf("decision = %+v, CancelRun called %d times", d, cancelled)
			}
			resp := rec.first("permission.response")
			if resp["outcome"] != "cancelled" || resp["kind"] != "unknown" || resp["source"] != via {
				t.Errorf("permission.response = %v", resp)
			}
			if via == "control" {
				if _, err := os.Stat(base + ".req"); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the .req of a request answered elsewhere is left: %v", err)
				}
			}
		})
	}
}

// A file handler failure fails the wait (the runtime fails the attempt)
// and never allows.
func TestFileFailureIsAnError(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run.perm")
	b := permission.New(permission.Options{FileBase: base, File: permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: 40 * time.Millisecond}})
	rec := &recorder{}
	ctx := context.Background()
	d, err := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "1", Options: testOptions}, rec.emit)(ctx)
	if !errors.Is(err, permission.ErrFileTimeout) || d.Allowed() || d.Outcome != sdk.OutcomeCancelled {
		t.Fatalf("wait = %+v, %v", d, err)
	}
	if rec.first("permission.response") != nil {
		t.Error("a failed request got a permission.response")
	}
}

// The .req names the session: the request's own session_id, else
// Options.SessionID, else the Session's id.
func TestRequestSessionID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields map[string]any
		fn     func() string
		sess   string
		want   string
	}{
		{name: "the session's id", sess: "ses_a", want: "ses_a"},
		{name: "Options.SessionID", sess: "", fn: func() string { return "ses_live" }, want: "ses_live"},
		{name: "the request's field", sess: "ses_a", fn: func() string { return "ses_live" }, fields: map[string]any{"session_id": "ses_req"}, want: "ses_req"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "run.perm")
			b := permission.New(permission.Options{FileBase: base, File: fastFile, SessionID: tc.fn})
			ctx, cancel := context.WithCancel(context.Background())
			wait := b.Session(tc.sess).Record(ctx, sdk.PermissionRequest{ID: "1", Options: testOptions, Fields: tc.fields}, func(event.Event) {})
			done := make(chan struct{})
			go func() { defer close(done); _, _ = wait(ctx) }()
			waitFile(t, base+".req")
			fr, err := permission.ReadRequest(base)
			cancel()
			<-done
			if err != nil || fr.SessionID != tc.want || fr.Payload["session_id"] != tc.want {
				t.Fatalf(".req session = %q (payload %v), %v; want %q", fr.SessionID, fr.Payload["session_id"], err, tc.want)
			}
		})
	}
}

func TestUndelivered(t *testing.T) {
	b := permission.New(permission.Options{AutoApprove: true})
	rec := &recorder{}
	s := b.Session("s")
	ctx := context.Background()
	d, _ := s.Record(ctx, sdk.PermissionRequest{ID: "5", Options: testOptions}, rec.emit)(ctx)
	s.Undelivered("5", d, permission.DeliveryPossiblySent, errors.New("plugin connection lost"))
	ev := rec.first("avenor.error")
	if ev == nil || ev["source"] != "permission" || ev["delivery"] != "possibly_sent" || ev["request_id"] != "5" || ev["option_id"] != "allow" {
		t.Fatalf("avenor.error = %v", ev)
	}
	want := "permission decision for request 5 (selected allow) may not have reached it: the plugin died: plugin connection lost"
	if ev["message"] != want {
		t.Errorf("message = %q, want %q", ev["message"], want)
	}
}
