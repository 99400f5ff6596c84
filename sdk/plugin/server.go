package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Info names a plugin: its family and its version.
type Info struct {
	// Name is the family, e.g. "opencode"; the binary is avenor-plugin-<Name>.
	Name string
	// Version is the plugin's semantic version, e.g. "1.2.0".
	Version string
}

// Bounds of the plugin side of a session.
const (
	// outboxSize is how many outgoing messages may wait for the stream
	// before Emit blocks (backpressure, never unbounded memory).
	outboxSize = 1024
	// maxBatch is the most events sent in one Events message.
	maxBatch = 256
	// closeBudget bounds Session.Close when the host has gone away.
	closeBudget = 10 * time.Second
)

// server is the plugin side of the Runtime service.
type server struct {
	pb.UnimplementedRuntimeServer
	info     Info
	backends map[string]runtime.Backend
	order    []string
	logger   hclog.Logger

	mu       sync.Mutex
	sessions map[*sessionServer]struct{}
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

func (s *server) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	resp := &pb.DescribeResponse{
		PluginName: s.info.Name, PluginVersion: s.info.Version,
		ProtocolVersions: []uint32{ProtocolVersion}, SdkVersion: SDKVersion,
	}
	for _, name := range s.order {
		resp.Backends = append(resp.Backends, backendInfoToProto(s.backends[name].Info()))
	}
	return resp, nil
}

func (s *server) Check(ctx context.Context, req *pb.CheckRequest) (*pb.CheckResponse, error) {
	b, ok := s.backends[req.GetBackend()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "plugin %s does not serve backend %q", s.info.Name, req.GetBackend())
	}
	opts, err := unmarshalObject(req.GetOptionsJson())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "options: %v", err)
	}
	return readinessToProto(b.Check(ctx, runtime.CheckRequest{Backend: req.GetBackend(), Env: req.GetEnv(), Options: opts})), nil
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

func (s *server) Session(stream pb.Runtime_SessionServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.FailedPrecondition, "the first message of a session must be Open")
	}
	ss := &sessionServer{
		server:  s,
		stream:  stream,
		out:     newOutbox(stream, s.logger),
		pending: map[string]chan runtime.PermissionDecision{},
	}
	defer ss.out.close()
	b, ok := s.backends[open.GetBackend()]
	if !ok {
		ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_Closed{Closed: &pb.Closed{Error: errorToProto(
			runtime.Errorf(runtime.FaultUser, "plugin %s does not serve backend %q", s.info.Name, open.GetBackend()))}}})
		return ss.out.flush()
	}
	req, err := openFromProto(open)
	if err != nil {
		ss.out.push(closedMsg(runtime.Errorf(runtime.FaultPlugin, "open: %v", err)))
		return ss.out.flush()
	}
	sess, err := safeOpen(stream.Context(), b, req, ss)
	if err != nil {
		ss.out.push(closedMsg(err))
		return ss.out.flush()
	}
	ss.sess = sess
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	var startFields []byte
	if sf, ok := sess.(runtime.StartFielder); ok {
		if startFields, err = marshalObject(sf.StartFields()); err != nil {
			ss.Logger().Error("session.start fields do not encode; leaving them out", "error", err)
		}
	}
	ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_Opened{Opened: &pb.Opened{
		SessionId: sess.ID(), Process: processToProto(sess.Process()), StartFieldsJson: startFields,
	}}})
	return ss.serve()
}

func closedMsg(err error) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Closed{Closed: &pb.Closed{Error: errorToProto(err)}}}
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
	stream pb.Runtime_SessionServer
	out    *outbox
	sess   runtime.Session

	mu         sync.Mutex
	pending    map[string]chan runtime.PermissionDecision
	turnCancel context.CancelFunc
	turnDone   chan struct{}
	turnID     string
	closeOnce  sync.Once
}

func (ss *sessionServer) serve() error {
	for {
		msg, err := ss.stream.Recv()
		if err != nil {
			// The host went away without Close: stop the runtime anyway.
			ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
			ss.closeSession(ctx)
			cancel()
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch m := msg.Msg.(type) {
		case *pb.HostMessage_Prompt:
			ss.startTurn(m.Prompt.GetTurnId(), m.Prompt.GetText())
		case *pb.HostMessage_Cancel:
			if !ss.turnRunning(m.Cancel.GetTurnId()) {
				// A cancel for a turn that already ended must not reach
				// the backend, or it would cancel the next turn.
				ss.Logger().Debug("ignoring a cancel for a turn that is not running", "turn_id", m.Cancel.GetTurnId())
				continue
			}
			go func() {
				if err := ss.sess.Cancel(ss.stream.Context()); err != nil {
					ss.Logger().Warn("cancel failed", "error", err)
				}
			}()
		case *pb.HostMessage_PermissionDecision:
			ss.deliver(m.PermissionDecision)
		case *pb.HostMessage_Close:
			ctx, cancel := context.WithTimeout(ss.stream.Context(), closeBudget)
			err := ss.closeSession(ctx)
			cancel()
			ss.out.push(closedMsg(err))
			return ss.out.flush()
		case *pb.HostMessage_Open:
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

func (ss *sessionServer) startTurn(turnID, text string) {
	ss.mu.Lock()
	if ss.turnDone != nil {
		select {
		case <-ss.turnDone:
		default:
			ss.mu.Unlock()
			ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_TurnEnded{TurnEnded: turnEndedToProto(turnID, runtime.TurnResult{},
				runtime.Errorf(runtime.FaultUser, "a turn is already running in this session"))}})
			return
		}
	}
	ctx, cancel := context.WithCancel(ss.stream.Context())
	done := make(chan struct{})
	ss.turnCancel, ss.turnDone, ss.turnID = cancel, done, turnID
	ss.mu.Unlock()
	go func() {
		res, err := ss.prompt(ctx, runtime.Turn{ID: turnID, Text: text})
		cancel()
		// The turn is over before the host can hear so: its next Prompt
		// must not find this one still running.
		close(done)
		ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_TurnEnded{TurnEnded: turnEndedToProto(turnID, res, err)}})
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
	})
	return err
}

func (ss *sessionServer) deliver(d *pb.PermissionDecision) {
	ss.mu.Lock()
	ch, ok := ss.pending[d.GetRequestId()]
	delete(ss.pending, d.GetRequestId())
	ss.mu.Unlock()
	if !ok {
		ss.Logger().Debug("decision for a request that is no longer pending", "request_id", d.GetRequestId())
		return
	}
	ch <- decisionFromProto(d)
}

// Emit implements runtime.Host.
func (ss *sessionServer) Emit(ev runtime.Event) {
	pe, err := eventToProto(ev)
	if err != nil {
		ss.Logger().Error("dropping an event that does not encode", "error", err)
		return
	}
	ss.out.pushEvent(pe)
}

// AskPermission implements runtime.Host.
func (ss *sessionServer) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	if req.ID == "" {
		return runtime.PermissionDecision{}, runtime.Errorf(runtime.FaultPlugin, "permission request without an id")
	}
	msg, err := permissionRequestToProto(req)
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
	ss.mu.Unlock()
	ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_PermissionRequest{PermissionRequest: msg}})
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		ss.mu.Lock()
		delete(ss.pending, req.ID)
		ss.mu.Unlock()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
}

// RecordProcess implements runtime.ProcessRecorder: tell the host the
// runtime process changed.
func (ss *sessionServer) RecordProcess(p runtime.ProcessInfo) {
	ss.out.push(&pb.PluginMessage{Msg: &pb.PluginMessage_Process{Process: processToProto(p)}})
}

// Logger implements runtime.Host.
func (ss *sessionServer) Logger() hclog.Logger { return ss.server.logger }
