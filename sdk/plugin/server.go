package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Info names a plugin: its family and its version.
type Info struct {
	// Name is the family, e.g. "opencode"; the binary is avenor-plugin-<Name>.
	Name string
	// Version is the plugin's semantic version, e.g. "1.2.0".
	Version string
}

// ValidName reports whether name can name a plugin: lowercase letters,
// digits and _, so that avenor-plugin-<name> has no path separator or dot.
// The host finds, installs and pins plugins by this rule and the kit holds
// a plugin's Describe to it.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Bounds of the plugin side of a session.
const (
	// outboxSize is how many outgoing messages may wait for the stream
	// before Emit blocks (backpressure, never unbounded memory).
	outboxSize = 1024
	// maxBatch is the most events sent in one Events message.
	maxBatch = 256
	// maxBatchBytes bounds the JSON of one Events message: gRPC takes the
	// buffer of a message up to 32 KiB from a 32 KiB pool and of a larger
	// one from a 1 MiB pool, and zeroes the whole buffer each time, on the
	// sending and on the receiving side. 256 chunks of ~130 bytes crossed
	// that line and made clearing 1 MiB per batch the largest single cost
	// of a flood; a batch this size stays below it.
	maxBatchBytes = 28 << 10
	// closeBudget bounds Session.Close when the host has gone away.
	closeBudget = 10 * time.Second
)

// server is the plugin side of the Runtime service (served over gRPC by
// runtimeService, serve.go).
type server struct {
	info     Info
	backends map[string]runtime.Backend
	order    []string
	logger   hclog.Logger

	mu       sync.Mutex
	sessions map[*sessionServer]struct{}

	// linger is how long sessions outlive a host that died (linger.go);
	// 0: they close at once. ppid is the host's pid (0 in process: the
	// host never dies apart from us). lingerEnd stops everything when the
	// window passes with no host back.
	linger      time.Duration
	ppid        int
	lingerEnd   func()
	lingerTimer *time.Timer // under mu; set while the window runs
}

// hostGone reports whether the host process died (we were reparented),
// waiting up to wait for the reparenting that follows its sockets closing.
func (s *server) hostGone(wait time.Duration) bool {
	if s.ppid == 0 {
		return false
	}
	deadline := time.Now().Add(wait)
	for {
		if os.Getppid() != s.ppid {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startLinger starts the linger window unless it runs: when it passes,
// lingerEnd stops every session and the process.
func (s *server) startLinger() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lingerTimer != nil {
		return
	}
	s.logger.Info("the host is gone; keeping the sessions for a host to take them over", "linger", s.linger.String())
	s.lingerTimer = time.AfterFunc(s.linger, func() {
		s.logger.Info("no host took the sessions over within the linger window; stopping them")
		if s.lingerEnd != nil {
			s.lingerEnd()
		}
	})
}

func newServer(info Info, logger hclog.Logger, backends []runtime.Backend) (*server, error) {
	if info.Name == "" {
		return nil, errors.New("plugin info: Name is required")
	}
	s := &server{info: info, backends: map[string]runtime.Backend{}, logger: logger, sessions: map[*sessionServer]struct{}{}}
	for _, b := range backends {
		name := b.Info().Name
		if name == "" {
			return nil, fmt.Errorf("plugin %s: a backend has no name", info.Name)
		}
		if _, dup := s.backends[name]; dup {
			return nil, fmt.Errorf("plugin %s: backend %q registered twice", info.Name, name)
		}
		s.backends[name] = b
		s.order = append(s.order, name)
	}
	if len(s.backends) == 0 {
		return nil, fmt.Errorf("plugin %s: serves no backend", info.Name)
	}
	return s, nil
}

// closeAll closes every live session; Serve calls it before the process
// exits so no runtime outlives its plugin.
func (s *server) closeAll(budget time.Duration) {
	s.mu.Lock()
	live := make([]*sessionServer, 0, len(s.sessions))
	for ss := range s.sessions {
		live = append(live, ss)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var wg sync.WaitGroup
	for _, ss := range live {
		wg.Add(1)
		go func() { defer wg.Done(); ss.closeSession(ctx) }()
	}
	wg.Wait()
}

// session serves one Session stream.
func (s *server) session(stream grpc.ServerStream) error {
	first, err := fromproto.RecvHostMessage(stream)
	if err != nil {
		return err
	}
	if first.Kind() == fromproto.HostReattach {
		return s.reattach(stream, first.ReattachSessionID())
	}
	if first.Kind() != fromproto.HostOpen {
		return status.Error(codes.FailedPrecondition, "the first message of a session must be Open")
	}
	ss := &sessionServer{
		server:  s,
		stream:  stream,
		out:     newOutbox(stream, s.logger),
		pending: map[string]chan runtime.PermissionDecision{},
		asked:   map[string]chan runtime.QuestionAnswer{},
		closed:  make(chan struct{}),
	}
	// Turns live as long as the session, not its stream: a lingering
	// session's turn goes on after its host's stream broke.
	ss.life, ss.endLife = context.WithCancel(context.Background())
	defer func() {
		if ss.sess == nil { // never opened; an open one ends in closeSession
			ss.endLife()
		}
	}()
	if s.linger > 0 {
		ss.out.keepUnsent()
	}
	out := ss.out
	defer out.close()
	b, ok := s.backends[first.OpenBackend()]
	if !ok {
		ss.out.push(toproto.Closed(
			runtime.Errorf(runtime.FaultUser, "plugin %s does not serve backend %q", s.info.Name, first.OpenBackend())))
		return ss.out.flush()
	}
	req, err := first.Open()
	if err != nil {
		ss.out.push(toproto.Closed(runtime.Errorf(runtime.FaultPlugin, "open: %v", err)))
		return ss.out.flush()
	}
	// A mode or launch-context field the backend does not declare is
	// refused here, for every backend alike, so that none runs broader
	// than asked because its Open ignored a field.
	if err := runtime.CheckLaunch(b.Info(), req.PermissionMode, req.Launch); err != nil {
		ss.out.push(toproto.Closed(runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)))
		return ss.out.flush()
	}
	// Nor does any run outside a sandbox it was asked for.
	if err := runtime.CheckSandbox(b.Info(), req.Sandbox); err != nil {
		ss.out.push(toproto.Closed(runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)))
		return ss.out.flush()
	}
	// A backend may keep Open's context for the session's life (its
	// runtime's process, its turns): it ends with the session, not with
	// this stream, which a lingering session outlives. Only while Open
	// runs does the stream's end abandon it.
	openCtx, abandon := context.WithCancel(ss.life)
	stopAbandon := context.AfterFunc(stream.Context(), abandon)
	sess, err := safeOpen(openCtx, b, req, ss)
	if !stopAbandon() {
		abandon()
	}
	if err != nil {
		abandon()
		ss.out.push(toproto.Closed(err))
		return ss.out.flush()
	}
	ss.sess, ss.info = sess, b.Info()
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	defer s.forget(ss, stream)
	var startFields []byte
	if sf, ok := sess.(runtime.StartFielder); ok {
		if startFields, err = toproto.Object(sf.StartFields()); err != nil {
			ss.Logger().Error("session.start fields do not encode; leaving them out", "error", err)
		}
	}
	var endpoints []runtime.NetDest
	if r, ok := sess.(runtime.ModelEndpointReporter); ok {
		endpoints = r.ModelEndpoints()
	}
	ss.push(toproto.Opened(sess.ID(), sess.Process(), startFields, endpoints))
	return ss.serve(stream)
}

// forget drops ss from the live sessions once the stream that served it
// ends, unless another stream has taken it over since (reattach).
func (s *server) forget(ss *sessionServer, stream grpc.ServerStream) {
	ss.mu.Lock()
	mine := ss.stream == stream
	ss.mu.Unlock()
	if !mine {
		return
	}
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
}

// safeOpen turns a panic in a backend's Open into a plugin-fault error.
func safeOpen(ctx context.Context, b runtime.Backend, req runtime.OpenRequest, h runtime.Host) (sess runtime.Session, err error) {
	defer func() {
		if r := recover(); r != nil {
			h.Logger().Error("panic in Open", "panic", r, "stack", string(debug.Stack()))
			err = runtime.Errorf(runtime.FaultPlugin, "plugin panicked while opening the session: %v", r)
		}
	}()
	return b.Open(ctx, req, h)
}

// sessionServer serves one Session stream; it is also the runtime.Host the
// backend's session calls.
type sessionServer struct {
	server *server
	stream grpc.ServerStream
	out    *outbox
	sess   runtime.Session
	info   runtime.BackendInfo // of the session's backend

	mu         sync.Mutex
	pending    map[string]chan runtime.PermissionDecision
	asked      map[string]chan runtime.QuestionAnswer // questions waiting for their answer
	turnCancel context.CancelFunc
	turnDone   chan struct{}
	turnID     string
	closeOnce  sync.Once
	// life is the session's own lifetime (turns run in it); closed is
	// closed once the session is.
	life    context.Context
	endLife context.CancelFunc
	closed  chan struct{}
	// Lingering (linger.go, under mu): taken is set while the session has
	// no host and closed when one takes it over; lostAt is when its host
	// went. lastEnded is the last turn end sent, pendingMsgs the
	// permission requests still waiting, in order: a new host gets them
	// again if the old one may not have.
	taken       chan struct{}
	claimed     bool
	lostAt      time.Time
	lastEnded   toproto.Message
	pendingMsgs []toproto.Message
	// outMu: the outbox is swapped on a take-over while nothing is pushed.
	outMu sync.RWMutex
}

// push and flush go to the session's current outbox.
func (ss *sessionServer) push(m toproto.Message) {
	ss.outMu.RLock()
	defer ss.outMu.RUnlock()
	ss.out.push(m)
}

func (ss *sessionServer) flush() error {
	ss.outMu.RLock()
	o := ss.out
	ss.outMu.RUnlock()
	return o.flush()
}

func (ss *sessionServer) dropPendingMsgLocked(id string) {
	for i, m := range ss.pendingMsgs {
		if m.RequestID() == id {
			ss.pendingMsgs = append(ss.pendingMsgs[:i], ss.pendingMsgs[i+1:]...)
			return
		}
	}
}

func (ss *sessionServer) serve(stream grpc.ServerStream) error {
	for {
		msg, err := fromproto.RecvHostMessage(stream)
		if err != nil {
			if ss.server.linger > 0 && ss.server.hostGone(lingerParentWait) {
				// The host died: the session and its runtime wait for a
				// host to take them over, or for the window to pass.
				taken := ss.orphan()
				ss.server.startLinger()
				select {
				case <-ss.closed:
				case <-taken:
				}
				return nil
			}
			// The host went away without Close: stop the runtime anyway.
			ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
			ss.closeSession(ctx)
			cancel()
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch msg.Kind() {
		case fromproto.HostPrompt:
			t := msg.Prompt()
			ss.startTurn(t)
		case fromproto.HostCancel:
			if !ss.turnRunning(msg.CancelTurnID()) {
				// A cancel for a turn that already ended must not reach
				// the backend, or it would cancel the next turn.
				ss.Logger().Debug("ignoring a cancel for a turn that is not running", "turn_id", msg.CancelTurnID())
				continue
			}
			go func() {
				if err := ss.sess.Cancel(stream.Context()); err != nil {
					ss.Logger().Warn("cancel failed", "error", err)
				}
			}()
		case fromproto.HostPermissionDecision:
			ss.deliver(msg.Decision())
		case fromproto.HostQuestionAnswer:
			ss.deliverAnswer(msg.QuestionAnswer())
		case fromproto.HostClose:
			ctx, cancel := context.WithTimeout(stream.Context(), closeBudget)
			err := ss.closeSession(ctx)
			cancel()
			ss.push(toproto.Closed(err))
			return ss.flush()
		case fromproto.HostOpen:
			ss.Logger().Warn("ignoring a second Open on an open session")
		}
	}
}

// turnRunning reports whether a turn runs now and, when id is given, is
// that turn.
func (ss *sessionServer) turnRunning(id string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.turnDone == nil {
		return false
	}
	select {
	case <-ss.turnDone:
		return false
	default:
	}
	return id == "" || id == ss.turnID
}

func (ss *sessionServer) startTurn(t runtime.Turn) {
	turnID := t.ID
	if err := runtime.CheckImages(ss.info, t.Images); err != nil {
		// The host checks first; a backend never gets what it cannot take.
		ss.push(toproto.Ended(turnID, runtime.TurnResult{}, runtime.Errorf(runtime.FaultUser, "%v", err).WithCode(runtime.CodeUnsupported)))
		return
	}
	ss.mu.Lock()
	if ss.turnDone != nil {
		select {
		case <-ss.turnDone:
		default:
			ss.mu.Unlock()
			ss.push(toproto.Ended(turnID, runtime.TurnResult{},
				runtime.Errorf(runtime.FaultUser, "a turn is already running in this session")))
			return
		}
	}
	ctx, cancel := context.WithCancel(ss.life)
	done := make(chan struct{})
	ss.turnCancel, ss.turnDone, ss.turnID = cancel, done, turnID
	ss.mu.Unlock()
	// Before the Cancel that may follow this Prompt is read, so the
	// session keeps it even if it lands before Prompt has begun the turn.
	if ts, ok := ss.sess.(runtime.TurnStarter); ok {
		ts.TurnStarting()
	}
	go func() {
		res, err := ss.prompt(ctx, t)
		cancel()
		// The turn is over before the host can hear so: its next Prompt
		// must not find this one still running.
		close(done)
		ended := toproto.Ended(turnID, res, err)
		ss.mu.Lock()
		ss.lastEnded = ended
		ss.mu.Unlock()
		ss.push(ended)
	}()
}

// prompt turns a panic inside a backend's Prompt into a plugin-fault turn
// end, so a bug in one turn is reported instead of killing every session.
func (ss *sessionServer) prompt(ctx context.Context, t runtime.Turn) (res runtime.TurnResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			ss.Logger().Error("panic in Prompt", "panic", r, "stack", string(debug.Stack()))
			res = runtime.TurnResult{StopReason: runtime.StopError}
			err = runtime.Errorf(runtime.FaultPlugin, "plugin %s %s panicked during the turn: %v", ss.server.info.Name, ss.server.info.Version, r)
		}
	}()
	if t.Compact {
		return runtime.Compact(ctx, ss.sess, ss.info)
	}
	return ss.sess.Prompt(ctx, t)
}

func (ss *sessionServer) closeSession(ctx context.Context) error {
	var err error
	ss.closeOnce.Do(func() {
		ss.mu.Lock()
		cancel, done := ss.turnCancel, ss.turnDone
		ss.mu.Unlock()
		if ss.sess != nil {
			err = ss.sess.Close(ctx)
		}
		if cancel != nil {
			cancel()
			select {
			case <-done:
			case <-ctx.Done():
			}
		}
		if ss.endLife != nil {
			ss.endLife()
		}
		if ss.closed != nil {
			close(ss.closed)
		}
	})
	return err
}

func (ss *sessionServer) deliver(id string, d runtime.PermissionDecision) {
	ss.mu.Lock()
	ch, ok := ss.pending[id]
	delete(ss.pending, id)
	ss.dropPendingMsgLocked(id)
	ss.mu.Unlock()
	if !ok {
		ss.Logger().Debug("decision for a request that is no longer pending", "request_id", id)
		return
	}
	ch <- d
}

// Emit implements runtime.Host.
func (ss *sessionServer) Emit(ev runtime.Event) {
	pe, err := toproto.Event(ev)
	if err != nil {
		ss.Logger().Error("dropping an event that does not encode", "error", err)
		return
	}
	ss.outMu.RLock()
	defer ss.outMu.RUnlock()
	ss.out.pushEvent(pe)
}

// EmitJSON implements runtime.JSONEmitter: the fields go on the wire as
// they are, with no map built or encoded. The host checks them.
func (ss *sessionServer) EmitJSON(typ runtime.EventType, fields []byte) {
	// Under outMu as Emit: a re-attach swaps the outbox, and an event
	// pushed into the old one while it drains would be lost.
	ss.outMu.RLock()
	defer ss.outMu.RUnlock()
	ss.out.pushEvent(toproto.EventJSON(typ, fields))
}

// AskPermission implements runtime.Host.
func (ss *sessionServer) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	if req.ID == "" {
		return runtime.PermissionDecision{}, runtime.Errorf(runtime.FaultPlugin, "permission request without an id")
	}
	pm, err := toproto.Ask(req)
	if err != nil {
		return runtime.PermissionDecision{}, runtime.Errorf(runtime.FaultPlugin, "%v", err)
	}
	ch := make(chan runtime.PermissionDecision, 1)
	ss.mu.Lock()
	if _, dup := ss.pending[req.ID]; dup {
		ss.mu.Unlock()
		return runtime.PermissionDecision{}, runtime.Errorf(runtime.FaultPlugin, "permission request %q is already pending", req.ID)
	}
	ss.pending[req.ID] = ch
	ss.pendingMsgs = append(ss.pendingMsgs, pm)
	ss.mu.Unlock()
	ss.push(pm)
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		ss.mu.Lock()
		delete(ss.pending, req.ID)
		ss.dropPendingMsgLocked(req.ID)
		ss.mu.Unlock()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
}

// AskQuestion implements runtime.QuestionAsker: the question goes to the
// host in event order and its answer comes back as a QuestionAnswer.
func (ss *sessionServer) AskQuestion(ctx context.Context, req runtime.QuestionRequest) (runtime.QuestionAnswer, error) {
	if req.ID == "" {
		return runtime.QuestionAnswer{}, runtime.Errorf(runtime.FaultPlugin, "question without an id")
	}
	qm, err := toproto.AskQuestion(req)
	if err != nil {
		return runtime.QuestionAnswer{}, runtime.Errorf(runtime.FaultPlugin, "%v", err)
	}
	ch := make(chan runtime.QuestionAnswer, 1)
	ss.mu.Lock()
	if _, dup := ss.asked[req.ID]; dup {
		ss.mu.Unlock()
		return runtime.QuestionAnswer{}, runtime.Errorf(runtime.FaultPlugin, "question %q is already pending", req.ID)
	}
	ss.asked[req.ID] = ch
	ss.pendingMsgs = append(ss.pendingMsgs, qm)
	ss.mu.Unlock()
	ss.push(qm)
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		ss.mu.Lock()
		delete(ss.asked, req.ID)
		ss.dropPendingMsgLocked(req.ID)
		ss.mu.Unlock()
		return runtime.QuestionAnswer{}, ctx.Err()
	}
}

func (ss *sessionServer) deliverAnswer(id string, a runtime.QuestionAnswer) {
	ss.mu.Lock()
	ch, ok := ss.asked[id]
	delete(ss.asked, id)
	ss.dropPendingMsgLocked(id)
	ss.mu.Unlock()
	if !ok {
		ss.Logger().Debug("answer to a question that is no longer pending", "request_id", id)
		return
	}
	ch <- a
}

// RecordProcess implements runtime.ProcessRecorder: tell the host the
// runtime process changed.
func (ss *sessionServer) RecordProcess(p runtime.ProcessInfo) {
	ss.push(toproto.ProcessChanged(p))
}

// Logger implements runtime.Host.
func (ss *sessionServer) Logger() hclog.Logger { return ss.server.logger }
