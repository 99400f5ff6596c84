package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := NewBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

func post(t *testing.T, url string, body any, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(http.MethodPost, url, rd)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err) // may run in a goroutine: no Fatal
		return 0, ""
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func TestBrokerAuth(t *testing.T) {
	b := newTestBroker(t, Config{})
	tok := b.AddRun("run-1")
	b.AddRun("run-2")
	tests := []struct {
		name string
		auth Auth
		want int
	}{
		{"right token", Auth{"run-1", tok}, http.StatusOK},
		{"wrong token", Auth{"run-1", strings.Repeat("0", 32)}, http.StatusUnauthorized},
		{"token of another run", Auth{"run-2", tok}, http.StatusUnauthorized},
		{"empty token", Auth{"run-1", ""}, http.StatusUnauthorized},
		{"unknown run", Auth{"nope", tok}, http.StatusUnauthorized},
		{"prefix of the token", Auth{"run-1", tok[:16]}, http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, b.URL()+"/heartbeat", tc.auth)
			if code != tc.want {
				t.Fatalf("status %d (%s), want %d", code, body, tc.want)
			}
			if strings.Contains(body, tok) {
				t.Fatalf("the answer echoes the token: %s", body)
			}
		})
	}
	// GET routes take the credentials as query parameters.
	for _, q := range []string{"?run_id=run-1&token=" + tok, "?run_id=run-1&token=bad", ""} {
		resp, err := http.Get(b.URL() + "/sessions" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusUnauthorized
		if strings.Contains(q, tok) {
			want = http.StatusOK
		}
		if resp.StatusCode != want {
			t.Errorf("GET /sessions%s: %d, want %d", strings.ReplaceAll(q, tok, "<token>"), resp.StatusCode, want)
		}
	}
}

func TestBrokerRequests(t *testing.T) {
	b := newTestBroker(t, Config{})
	tok := b.AddRun("r")
	a := Auth{"r", tok}
	tests := []struct {
		name   string
		path   string
		body   any
		header []string
		want   int
	}{
		{"body over the cap", "/report", append(append([]byte(`{"run_id":"r","token":"`+tok+`","state":"working","payload":"`), bytes.Repeat([]byte("x"), MaxBodyBytes)...), `"}`...), nil, http.StatusRequestEntityTooLarge},
		{"not JSON", "/report", []byte("{"), nil, http.StatusBadRequest},
		{"bad report state", "/report", ReportRequest{Auth: a, State: "dancing"}, nil, http.StatusBadRequest},
		{"bad finish status", "/finish", FinishRequest{Auth: a, Status: "ok"}, nil, http.StatusBadRequest},
		{"reply without to", "/reply", ReplyRequest{Auth: a}, nil, http.StatusBadRequest},
		{"send to a run elsewhere", "/send", SendRequest{Auth: a, ToRunID: "other", Message: "hi"}, nil, http.StatusNotFound},
		{"send without message", "/send", SendRequest{Auth: a, ToRunID: "r"}, nil, http.StatusBadRequest},
		{"push a bad type", "/push-control", PushRequest{Auth: a, Type: "permission_decision"}, nil, http.StatusBadRequest},
		{"push with the run token", "/push-control", PushRequest{Auth: a, Type: ControlAddContext}, nil, http.StatusOK},
		{"push with the global token", "/push-control", PushRequest{Auth: Auth{RunID: "r"}, Type: ControlContinue}, []string{"Authorization", "Bearer " + b.GlobalToken()}, http.StatusOK},
		{"push with a wrong bearer", "/push-control", PushRequest{Auth: Auth{RunID: "r"}, Type: ControlContinue}, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"push to an unknown run with the global token", "/push-control", PushRequest{Auth: Auth{RunID: "x"}, Type: ControlContinue}, []string{"Authorization", "Bearer " + b.GlobalToken()}, http.StatusNotFound},
		{"decide an unknown permission", "/permission", PermissionAnswer{Auth: a, RequestID: "zzzzz", Behavior: "allow"}, nil, http.StatusNotFound},
		{"decide with a bad behavior", "/permission", PermissionAnswer{Auth: a, RequestID: "zzzzz", Behavior: "maybe"}, nil, http.StatusBadRequest},
		{"wait_reply", "/wait_reply", a, nil, http.StatusNotImplemented},
		{"cancel_message", "/cancel_message", a, nil, http.StatusNotImplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, b.URL()+tc.path, tc.body, tc.header...)
			if code != tc.want {
				t.Fatalf("status %d (%s), want %d", code, body, tc.want)
			}
			var e errorBody
			if code >= 400 && (json.Unmarshal([]byte(body), &e) != nil || e.Error == "") {
				t.Fatalf("error answer is not {\"error\":…}: %s", body)
			}
		})
	}
	resp, err := http.Get(b.URL() + "/register")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /register: %d, want 405", resp.StatusCode)
	}
}

func TestPollWait(t *testing.T) {
	for _, tc := range []struct {
		ms   int
		want time.Duration
	}{
		{0, MaxPollWait}, {-5, MaxPollWait}, {1, time.Millisecond}, {1500, 1500 * time.Millisecond},
		{2000, 2 * time.Second}, {2001, MaxPollWait}, {1 << 40, MaxPollWait},
	} {
		if got := pollWait(tc.ms); got != tc.want {
			t.Errorf("pollWait(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}

// fakeClock hands the test each long-poll timer.
type fakeClock struct {
	started chan time.Duration
	fire    chan time.Time
}

func (c *fakeClock) after(d time.Duration) (<-chan time.Time, func()) {
	c.started <- d
	return c.fire, func() {}
}

// The long-poll is bounded by MaxPollWait and ends early when a message
// is pushed; no real time passes.
func TestLongPoll(t *testing.T) {
	clock := &fakeClock{started: make(chan time.Duration, 1), fire: make(chan time.Time)}
	b := newTestBroker(t, Config{After: clock.after})
	tok := b.AddRun("r")
	poll := func(waitMS int) chan string {
		out := make(chan string, 1)
		go func() {
			_, body := post(t, b.URL()+"/poll-control", PollRequest{Auth: Auth{"r", tok}, WaitMS: waitMS})
			out <- body
		}()
		return out
	}
	for _, tc := range []struct {
		name   string
		waitMS int
		want   time.Duration
		wake   func()
		msgs   int
	}{
		{"timer fires", 60000, MaxPollWait, func() { clock.fire <- time.Now() }, 0},
		{"message pushed", 500, 500 * time.Millisecond, func() {
			if _, err := b.Push("r", ControlContinue, map[string]string{"message": "hi"}, ""); err != nil {
				t.Error(err)
			}
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := poll(tc.waitMS)
			if d := <-clock.started; d != tc.want {
				t.Errorf("long-poll timer %v, want %v", d, tc.want)
			}
			tc.wake()
			var resp PollResponse
			if err := json.Unmarshal([]byte(<-out), &resp); err != nil || len(resp.Messages) != tc.msgs {
				t.Fatalf("poll answer %+v (%v), want %d messages", resp, err, tc.msgs)
			}
		})
	}
	// Queued messages come back at once, in order, without a timer.
	for _, typ := range []string{ControlContinue, ControlAddContext} {
		if _, err := b.Push("r", typ, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	var resp PollResponse
	_ = json.Unmarshal([]byte(<-poll(0)), &resp)
	if len(resp.Messages) != 2 || resp.Messages[0].Type != ControlContinue || resp.Messages[1].ID == resp.Messages[0].ID {
		t.Fatalf("queued messages %+v", resp.Messages)
	}
}

// Close ends a long-poll in flight (real clock).
func TestCloseEndsLongPoll(t *testing.T) {
	b, err := NewBroker(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tok := b.AddRun("r")
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		post(t, b.URL()+"/poll-control", PollRequest{Auth: Auth{"r", tok}})
	}()
	time.Sleep(50 * time.Millisecond)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if el := time.Since(start); el > MaxPollWait {
		t.Fatalf("Close waited %v for the long-poll", el)
	}
}

func TestQueueBound(t *testing.T) {
	b := newTestBroker(t, Config{})
	b.AddRun("r")
	for i := range MaxQueuedControls + 1 {
		_, err := b.Push("r", ControlContinue, nil, "")
		if (err != nil) != (i == MaxQueuedControls) {
			t.Fatalf("push %d: %v", i, err)
		}
	}
}

// Events carry no token; permission requests become decisions.
func TestBrokerEventsAndPermission(t *testing.T) {
	b := newTestBroker(t, Config{})
	tok := b.AddRun("r")
	a := Auth{"r", tok}
	go post(t, b.URL()+"/permission_request", PermissionRequest{Auth: a, RequestID: "abcde", ToolName: "Bash"})
	ev := <-b.Events()
	if ev.Kind != EventPermission || ev.Permission.RequestID != "abcde" || ev.Permission.Token != "" {
		t.Fatalf("event %+v", ev)
	}
	if code, body := post(t, b.URL()+"/permission", PermissionAnswer{Auth: a, RequestID: "abcde", Behavior: "allow"}); code != 200 {
		t.Fatalf("/permission: %d %s", code, body)
	}
	// Decided once only.
	if _, err := b.Decide("r", "abcde", false); err == nil {
		t.Fatal("a second decision was accepted")
	}
	_, body := post(t, b.URL()+"/poll-control", PollRequest{Auth: a})
	var resp PollResponse
	_ = json.Unmarshal([]byte(body), &resp)
	if len(resp.Messages) != 1 || resp.Messages[0].Type != ControlPermissionDecision || !strings.Contains(string(resp.Messages[0].Payload), `"behavior":"allow"`) {
		t.Fatalf("poll %s", body)
	}
	go post(t, b.URL()+"/finish", FinishRequest{Auth: a, Status: "done", Summary: "s"})
	if ev := <-b.Events(); ev.Kind != EventFinish || ev.Finish.Token != "" || ev.Finish.Summary != "s" {
		t.Fatalf("event %+v", ev)
	}
}
