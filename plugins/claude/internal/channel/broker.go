package channel

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Event kinds the broker hands to its owner.
const (
	EventRegistered = "registered"
	EventReport     = "report"
	EventFinish     = "finish"
	EventReply      = "reply"
	EventPermission = "permission_request"
)

// eventBuffer is how many events may wait for the owner before a sidecar's
// request blocks (backpressure, not loss).
const eventBuffer = 256

// Event is something a sidecar told the broker. Exactly one of the
// pointers matching Kind is set; Auth inside them is cleared, so an Event
// never carries the token.
type Event struct {
	Kind       string
	RunID      string
	Register   *RegisterRequest
	Report     *ReportRequest
	Finish     *FinishRequest
	Reply      *ReplyRequest
	Permission *PermissionRequest
}

// Broker errors.
var (
	ErrUnknownRun = errors.New("unknown run")
	ErrQueueFull  = errors.New("control queue full")
	ErrClosed     = errors.New("broker closed")
)

// Config configures a broker; the zero value is usable.
type Config struct {
	// Logger gets request failures (never tokens). Default: none.
	Logger hclog.Logger
	// After starts the long-poll timer; tests inject a fake clock.
	// Default: a time.Timer. stop releases it.
	After func(d time.Duration) (c <-chan time.Time, stop func())
}

// Broker is the HTTP server one claude-channel session talks to its
// sidecar through. It listens on 127.0.0.1 with a random port.
type Broker struct {
	cfg    Config
	log    hclog.Logger
	global string // accepted as Bearer on /push-control
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	events chan Event
	closed chan struct{}
	once   sync.Once

	mu   sync.Mutex
	runs map[string]*run
}

type run struct {
	token      string
	queue      []Control
	notify     chan struct{} // closed when the queue grows
	registered bool
	lastBeat   time.Time
	finished   bool
	pending    map[string]bool // permission request ids awaiting a decision
	next       int
}

// NewBroker starts a broker on 127.0.0.1:0.
func NewBroker(cfg Config) (*Broker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("channel broker: listening on 127.0.0.1: %w", err)
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, global: NewToken(), ln: ln, served: make(chan struct{}),
		events: make(chan Event, eventBuffer), closed: make(chan struct{}), runs: map[string]*run{}}
	if b.log == nil {
		b.log = hclog.NewNullLogger()
	}
	if b.cfg.After == nil {
		b.cfg.After = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTimer(d)
			return t.C, func() { t.Stop() }
		}
	}
	b.srv = &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.served)
		_ = b.srv.Serve(ln)
	}()
	return b, nil
}

// NewToken is 16 random bytes, hex.
func NewToken() string {
	var t [16]byte
	_, _ = rand.Read(t[:])
	return hex.EncodeToString(t[:])
}

// URL is http://127.0.0.1:<port>.
func (b *Broker) URL() string { return "http://" + b.ln.Addr().String() }

// GlobalToken is the Bearer token /push-control also accepts.
func (b *Broker) GlobalToken() string { return b.global }

// Events delivers what sidecars report, in order.
func (b *Broker) Events() <-chan Event { return b.events }

// AddRun registers a run and returns its token.
func (b *Broker) AddRun(runID string) string {
	tok := NewToken()
	b.mu.Lock()
	b.runs[runID] = &run{token: tok, notify: make(chan struct{}), pending: map[string]bool{}}
	b.mu.Unlock()
	return tok
}

// Push queues a control message for the run's sidecar.
func (b *Broker) Push(runID, typ string, payload any, fromRunID string) (Control, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return Control{}, fmt.Errorf("channel broker: encoding %s payload: %w", typ, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.runs[runID]
	if !ok {
		return Control{}, fmt.Errorf("%w %q", ErrUnknownRun, runID)
	}
	return b.pushLocked(r, Control{Type: typ, Payload: raw, FromRunID: fromRunID})
}

func (b *Broker) pushLocked(r *run, c Control) (Control, error) {
	if len(r.queue) >= MaxQueuedControls {
		return Control{}, fmt.Errorf("%w: %d messages are waiting for the sidecar", ErrQueueFull, MaxQueuedControls)
	}
	r.next++
	c.ID = "ctrl_" + strconv.Itoa(r.next)
	r.queue = append(r.queue, c)
	close(r.notify)
	r.notify = make(chan struct{})
	return c, nil
}

// Decide answers a pending channel permission request: the decision goes
// to the sidecar as a permission_decision control.
func (b *Broker) Decide(runID, requestID string, allow bool) (Control, error) {
	behavior := "deny"
	if allow {
		behavior = "allow"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.runs[runID]
	if !ok {
		return Control{}, fmt.Errorf("%w %q", ErrUnknownRun, runID)
	}
	return b.decideLocked(r, requestID, behavior)
}

func (b *Broker) decideLocked(r *run, requestID, behavior string) (Control, error) {
	if !r.pending[requestID] {
		return Control{}, fmt.Errorf("no pending permission request %q", requestID)
	}
	delete(r.pending, requestID)
	raw, _ := json.Marshal(PermissionDecision{RequestID: requestID, Behavior: behavior})
	return b.pushLocked(r, Control{Type: ControlPermissionDecision, Payload: raw})
}

// Close stops the server, ends long-polls and waits for the serve loop.
func (b *Broker) Close(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		close(b.closed)
		err = b.srv.Shutdown(ctx)
		if err != nil {
			_ = b.srv.Close()
		}
		<-b.served
	})
	return err
}

// pollWait is how long a /poll-control may be held: wait_ms, clamped to
// (0, MaxPollWait]; absent or non-positive means MaxPollWait.
func pollWait(ms int) time.Duration {
	if ms <= 0 || time.Duration(ms)*time.Millisecond > MaxPollWait {
		return MaxPollWait
	}
	return time.Duration(ms) * time.Millisecond
}

// Handler is the broker's routes (exported for in-process tests).
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /sessions", b.sessions)
	mux.HandleFunc("POST /register", b.register)
	mux.HandleFunc("POST /heartbeat", b.heartbeat)
	mux.HandleFunc("POST /push-control", b.pushControl)
	mux.HandleFunc("POST /poll-control", b.pollControl)
	mux.HandleFunc("POST /report", b.report)
	mux.HandleFunc("POST /finish", b.finish)
	mux.HandleFunc("POST /reply", b.reply)
	mux.HandleFunc("POST /send", b.send)
	mux.HandleFunc("POST /permission_request", b.permissionRequest)
	mux.HandleFunc("POST /permission", b.permission)
	for _, p := range []string{"/wait_reply", "/cancel_message"} {
		mux.HandleFunc("POST "+p, func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotImplemented, p+" is not implemented by this broker (a per-session broker has no other runs to wait on)")
		})
	}
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// decode reads a JSON body of at most MaxBodyBytes into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
			return false
		}
		writeError(w, http.StatusBadRequest, "request body is not the expected JSON object: "+err.Error())
		return false
	}
	return true
}

// auth finds the run and checks its token in constant time. The answer
// never says which of the two was wrong.
func (b *Broker) auth(w http.ResponseWriter, a Auth) (*run, bool) {
	b.mu.Lock()
	r, ok := b.runs[a.RunID]
	b.mu.Unlock()
	tok := ""
	if ok {
		tok = r.token
	}
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(a.Token)) != 1 || a.Token == "" {
		writeError(w, http.StatusUnauthorized, "unknown run_id or wrong token")
		return nil, false
	}
	return r, true
}

// deliver hands an event to the owner; it blocks (backpressure) until the
// owner takes it, the request ends or the broker closes.
func (b *Broker) deliver(w http.ResponseWriter, r *http.Request, ev Event) bool {
	select {
	case b.events <- ev:
		return true
	case <-r.Context().Done():
		return false
	case <-b.closed:
		writeError(w, http.StatusServiceUnavailable, "broker is shutting down")
		return false
	}
}

// authed decodes a request body into a new T and authenticates the run it
// names. On failure it has answered the request and ok is false.
func authed[T any, P interface {
	*T
	credentials() *Auth
}](b *Broker, w http.ResponseWriter, r *http.Request) (req P, rn *run, ok bool) {
	req = P(new(T))
	if !decode(w, r, req) {
		return nil, nil, false
	}
	rn, ok = b.auth(w, *req.credentials())
	return req, rn, ok
}

// deliverOK hands ev to the owner, the token cleared first (events never
// carry it), and answers {"ok":true}.
func (b *Broker) deliverOK(w http.ResponseWriter, r *http.Request, a *Auth, ev Event) {
	a.Token = ""
	if b.deliver(w, r, ev) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	}
}

func (b *Broker) register(w http.ResponseWriter, r *http.Request) {
	req, rn, ok := authed[RegisterRequest](b, w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	first := !rn.registered
	rn.registered, rn.lastBeat = true, time.Now()
	b.mu.Unlock()
	req.Auth.Token = ""
	if first && !b.deliver(w, r, Event{Kind: EventRegistered, RunID: req.RunID, Register: req}) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (b *Broker) heartbeat(w http.ResponseWriter, r *http.Request) {
	var req Auth
	if !decode(w, r, &req) {
		return
	}
	rn, ok := b.auth(w, req)
	if !ok {
		return
	}
	b.mu.Lock()
	rn.lastBeat = time.Now()
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (b *Broker) pushControl(w http.ResponseWriter, r *http.Request) {
	var req PushRequest
	if !decode(w, r, &req) {
		return
	}
	var rn *run
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(h), []byte(b.global)) == 1 {
		b.mu.Lock()
		rn = b.runs[req.RunID]
		b.mu.Unlock()
		if rn == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("run %q is not on this broker", req.RunID))
			return
		}
	} else if rn, ok = b.auth(w, req.Auth); !ok {
		return
	}
	if !slices.Contains([]string{ControlContinue, ControlAddContext, ControlRequestStatus, ControlCancel, ControlAgentMessage}, req.Type) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("control type %q is not one of continue, add_context, request_status, cancel, agent_message (permission decisions go to /permission)", req.Type))
		return
	}
	b.mu.Lock()
	c, err := b.pushLocked(rn, Control{Type: req.Type, Payload: req.Payload, FromRunID: req.FromRunID})
	b.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ctrl_id": c.ID})
}

func (b *Broker) pollControl(w http.ResponseWriter, r *http.Request) {
	req, rn, ok := authed[PollRequest](b, w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	if len(rn.queue) == 0 {
		notify := rn.notify
		b.mu.Unlock()
		timeout, stop := b.cfg.After(pollWait(req.WaitMS))
		select {
		case <-notify:
		case <-timeout:
		case <-r.Context().Done():
		case <-b.closed:
		}
		stop()
		b.mu.Lock()
	}
	msgs := rn.queue
	rn.queue = nil
	b.mu.Unlock()
	if msgs == nil {
		msgs = []Control{}
	}
	writeJSON(w, http.StatusOK, PollResponse{Messages: msgs})
}

func (b *Broker) report(w http.ResponseWriter, r *http.Request) {
	req, _, ok := authed[ReportRequest](b, w, r)
	if !ok {
		return
	}
	if !slices.Contains(ReportStates, req.State) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("state %q is not one of %s", req.State, strings.Join(ReportStates, ", ")))
		return
	}
	b.deliverOK(w, r, &req.Auth, Event{Kind: EventReport, RunID: req.RunID, Report: req})
}

func (b *Broker) finish(w http.ResponseWriter, r *http.Request) {
	req, rn, ok := authed[FinishRequest](b, w, r)
	if !ok {
		return
	}
	if !slices.Contains(FinishStatuses, req.Status) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("status %q is not one of %s", req.Status, strings.Join(FinishStatuses, ", ")))
		return
	}
	b.mu.Lock()
	rn.finished = true
	b.mu.Unlock()
	b.deliverOK(w, r, &req.Auth, Event{Kind: EventFinish, RunID: req.RunID, Finish: req})
}

func (b *Broker) reply(w http.ResponseWriter, r *http.Request) {
	req, _, ok := authed[ReplyRequest](b, w, r)
	if !ok {
		return
	}
	if req.To == "" {
		writeError(w, http.StatusBadRequest, "to is required")
		return
	}
	b.deliverOK(w, r, &req.Auth, Event{Kind: EventReply, RunID: req.RunID, Reply: req})
}

// send delivers an agent_message to another run on this broker. A
// per-session broker knows only its own run, so messages to other runs
// are refused with 404 rather than dropped.
func (b *Broker) send(w http.ResponseWriter, r *http.Request) {
	req, _, ok := authed[SendRequest](b, w, r)
	if !ok {
		return
	}
	if req.ToRunID == "" || req.Message == "" {
		writeError(w, http.StatusBadRequest, "to_run_id and message are required")
		return
	}
	b.mu.Lock()
	target := b.runs[req.ToRunID]
	var c Control
	var err error
	if target != nil {
		raw, _ := json.Marshal(map[string]string{"message": req.Message, "role": req.Role})
		c, err = b.pushLocked(target, Control{Type: ControlAgentMessage, Payload: raw, FromRunID: req.RunID})
	}
	b.mu.Unlock()
	switch {
	case target == nil:
		writeError(w, http.StatusNotFound, fmt.Sprintf("run %q is not connected to this broker (each claude-channel session has its own broker)", req.ToRunID))
	case err != nil:
		writeError(w, http.StatusTooManyRequests, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ctrl_id": c.ID})
	}
}

func (b *Broker) permissionRequest(w http.ResponseWriter, r *http.Request) {
	req, rn, ok := authed[PermissionRequest](b, w, r)
	if !ok {
		return
	}
	if req.RequestID == "" {
		writeError(w, http.StatusBadRequest, "request_id is required")
		return
	}
	b.mu.Lock()
	rn.pending[req.RequestID] = true
	b.mu.Unlock()
	b.deliverOK(w, r, &req.Auth, Event{Kind: EventPermission, RunID: req.RunID, Permission: req})
}

func (b *Broker) permission(w http.ResponseWriter, r *http.Request) {
	req, rn, ok := authed[PermissionAnswer](b, w, r)
	if !ok {
		return
	}
	if req.Behavior != "allow" && req.Behavior != "deny" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("behavior %q is not allow or deny", req.Behavior))
		return
	}
	b.mu.Lock()
	c, err := b.decideLocked(rn, req.RequestID, req.Behavior)
	b.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ctrl_id": c.ID})
}

func (b *Broker) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if _, ok := b.auth(w, Auth{RunID: q.Get("run_id"), Token: q.Get("token")}); !ok {
		return
	}
	b.mu.Lock()
	out := make([]SessionInfo, 0, len(b.runs))
	for id, rn := range b.runs {
		out = append(out, SessionInfo{RunID: id, Registered: rn.registered, LastHeartbeat: rn.lastBeat, Queued: len(rn.queue), Finished: rn.finished})
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(a, b SessionInfo) int { return strings.Compare(a.RunID, b.RunID) })
	writeJSON(w, http.StatusOK, out)
}
