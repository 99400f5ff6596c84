package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	goproto "google.golang.org/protobuf/proto"

	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// ErrPluginGone is wrapped by every error that comes from the plugin
// process or its connection disappearing mid-session.
var ErrPluginGone = errors.New("plugin connection lost")

// remoteBackend is a runtime.Backend whose work happens in a plugin.
type remoteBackend struct {
	info   runtime.BackendInfo
	client runtimeClient
	owner  *Client
}

func (b *remoteBackend) Info() runtime.BackendInfo { return b.info }

func (b *remoteBackend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	creq, err := toproto.Check(b.info.Name, req)
	if err != nil {
		return runtime.Readiness{Message: "options: " + err.Error()}
	}
	resp, err := b.client.Check(ctx, creq)
	if err != nil {
		return runtime.Readiness{Message: b.owner.describeErr("check", err).Error()}
	}
	return fromproto.Readiness(resp)
}

// Open starts a session stream, sends Open and waits for Opened (or the
// plugin's refusal). Events the plugin emits while opening are delivered.
func (b *remoteBackend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	open, err := toproto.Open(req)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%v", err)
	}
	streamCtx, cancel := context.WithCancel(context.Background())
	stream, err := b.client.Session(streamCtx, grpc.ForceCodecV2(newRecvCodec()))
	if err != nil {
		cancel()
		return nil, b.owner.describeErr("open session", err)
	}
	s := newRemoteSession(b.owner, stream, cancel, host)
	if err := s.send(toproto.OpenSession(open)); err != nil {
		cancel()
		return nil, b.owner.describeErr("open session", err)
	}
	go s.recvLoop()
	select {
	case o := <-s.opened:
		s.id = o.SessionID
		s.setProcess(o.Process)
		if s.startFields, err = fromproto.Object(o.StartFields); err != nil {
			s.logger().Error("ignoring malformed session.start fields from the plugin", "error", err)
		}
		for _, e := range o.ModelEndpoints {
			d, err := runtime.ParseNetDest(e)
			if err != nil || d.Host == "" || d.Port == 0 {
				// Fail closed: the host allows none of what it cannot read.
				s.logger().Error("ignoring a malformed model endpoint from the plugin", "endpoint", e, "error", err)
				continue
			}
			s.modelEndpoints = append(s.modelEndpoints, d)
		}
		return s, nil
	case err := <-s.closed:
		cancel()
		<-s.done
		if err != nil {
			return nil, err
		}
		return nil, runtime.Errorf(runtime.FaultPlugin, "plugin closed the session while opening it")
	case <-s.done:
		cancel()
		select { // the plugin's own refusal beats the broken stream it left
		case err := <-s.closed:
			if err != nil {
				return nil, err
			}
		default:
		}
		return nil, s.goneErr("open session")
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, ctx.Err()
	}
}

func newRemoteSession(owner *Client, stream grpc.ClientStream, cancel context.CancelFunc, host runtime.Host) *remoteSession {
	return &remoteSession{
		owner: owner, stream: stream, cancel: cancel, host: host,
		turnEnded: make(chan fromproto.TurnEnd, 1), closed: make(chan error, 1),
		opened: make(chan fromproto.Opening, 1), done: make(chan struct{}),
		waits: map[string]context.CancelFunc{}, inflight: map[string]runtime.PermissionDecision{},
	}
}

// remoteSession is the host side of one Session stream.
type remoteSession struct {
	owner  *Client
	stream grpc.ClientStream
	cancel context.CancelFunc
	host   runtime.Host
	id     string

	startFields map[string]any
	// modelEndpoints are what the plugin reported its runtime's model
	// endpoints to be (--sandbox-network model).
	modelEndpoints []runtime.NetDest

	sendMu sync.Mutex

	opened    chan fromproto.Opening
	turnEnded chan fromproto.TurnEnd
	closed    chan error    // why the plugin closed the session; nil: cleanly
	done      chan struct{} // recvLoop returned
	recvErr   error         // set before done is closed

	mu       sync.Mutex
	turnID   string // the turn last prompted; Cancel names it
	sentTurn string // the turn whose Prompt is on the wire
	proc     runtime.ProcessInfo
	waits    map[string]context.CancelFunc // pending permission waits
	// inflight: decisions sent during the current turn, not yet known to
	// have been received (the turn has not ended).
	inflight map[string]runtime.PermissionDecision

	// adopted is a re-attached session's turn in flight: its Prompt only
	// waits (under mu). written says how many of the events a re-attached
	// plugin sends again the host's log has (Reattacher); set before
	// recvLoop runs.
	adopted string
	written func([]runtime.Event) int
}

func (s *remoteSession) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// StartFields implements runtime.StartFielder.
func (s *remoteSession) StartFields() map[string]any { return s.startFields }

// ModelEndpoints implements runtime.ModelEndpointReporter.
func (s *remoteSession) ModelEndpoints() []runtime.NetDest { return s.modelEndpoints }

func (s *remoteSession) Process() runtime.ProcessInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

func (s *remoteSession) setProcess(p runtime.ProcessInfo) {
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if r, ok := s.host.(runtime.ProcessRecorder); ok {
		r.RecordProcess(p)
	}
}

func (s *remoteSession) send(m goproto.Message) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.stream.SendMsg(m)
}

// Prompt sends the turn and waits for its end. It returns early with
// ctx.Err() when ctx is done — the caller then decides to Cancel or to kill
// the plugin — and with an error wrapping ErrPluginGone when the plugin dies.
func (s *remoteSession) Prompt(ctx context.Context, turn runtime.Turn) (runtime.TurnResult, error) {
	// A prompt the wire cannot carry would break the stream and read as the
	// plugin's failure: it is the caller's, said before anything is sent.
	if err := runtime.CheckPrompt("prompt", turn.Text); err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, userFault{err}
	}
	s.mu.Lock()
	adopt := s.adopted != "" && s.adopted == turn.ID
	s.adopted = ""
	s.mu.Unlock()
	if !adopt {
		// A turn end left over from an earlier, abandoned turn is stale.
		select {
		case <-s.turnEnded:
		default:
		}
	}
	// The turn id is set and the Prompt sent under sendMu, so a Cancel
	// that names this turn always reaches the plugin after its Prompt.
	s.sendMu.Lock()
	s.mu.Lock()
	s.turnID = turn.ID
	s.mu.Unlock()
	var err error
	if !adopt { // an adopted turn runs already: wait for its end
		err = s.stream.SendMsg(toproto.Prompt(turn))
	}
	if err == nil {
		s.mu.Lock()
		s.sentTurn = turn.ID
		s.mu.Unlock()
	}
	s.sendMu.Unlock()
	if err != nil {
		return runtime.TurnResult{StopReason: runtime.StopError}, s.goneErr("prompt")
	}
	for {
		select {
		case te := <-s.turnEnded:
			if te.TurnID != turn.ID {
				continue
			}
			return s.turnResult(te)
		case <-s.done:
			select { // a turn end that arrived just before the stream broke wins
			case te := <-s.turnEnded:
				if te.TurnID == turn.ID {
					return s.turnResult(te)
				}
			default:
			}
			return runtime.TurnResult{StopReason: runtime.StopError}, s.goneErr("turn")
		case <-ctx.Done():
			return runtime.TurnResult{}, ctx.Err()
		}
	}
}

func (s *remoteSession) turnResult(te fromproto.TurnEnd) (runtime.TurnResult, error) {
	res, err := te.Result, te.Err
	if res.SessionID != "" {
		s.mu.Lock()
		s.id = res.SessionID
		s.mu.Unlock()
	}
	return res, err
}

func (s *remoteSession) Cancel(ctx context.Context) error {
	s.sendMu.Lock()
	s.mu.Lock()
	turnID := s.turnID
	s.mu.Unlock()
	err := s.stream.SendMsg(toproto.Cancel(turnID))
	s.sendMu.Unlock()
	if err != nil {
		return s.goneErr("cancel")
	}
	return nil
}

// PromptSent reports whether turnID's Prompt is on the wire, so that a
// Cancel called now reaches the plugin right after it — the moment the
// backend may not have begun the turn yet. The conformance kit uses it to
// check that such a Cancel is not lost.
func (s *remoteSession) PromptSent(turnID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentTurn == turnID
}

// Close asks the plugin to close the session and waits for it, bounded by ctx.
func (s *remoteSession) Close(ctx context.Context) error {
	defer s.cancel()
	if err := s.send(toproto.Close()); err != nil {
		return nil // the stream is gone: nothing left to close on this side
	}
	select {
	case err := <-s.closed:
		return err
	case <-s.done:
		select {
		case err := <-s.closed:
			return err
		default:
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing session %s: %w", s.ID(), ctx.Err())
	}
}

func (s *remoteSession) goneErr(doing string) error {
	<-s.done
	return s.owner.goneErr(doing, s.recvErr)
}

func (s *remoteSession) recvLoop() {
	em := newEmitter(s.host)
	defer func() {
		// Every event received is emitted before anyone learns that the
		// stream ended.
		em.stop()
		s.mu.Lock()
		for _, c := range s.waits {
			c()
		}
		inflight := s.inflight
		s.inflight = map[string]runtime.PermissionDecision{}
		s.mu.Unlock()
		if s.recvErr != nil && status.Code(s.recvErr) != codes.Canceled {
			for id, d := range inflight {
				s.undelivered(id, d, runtime.DeliveryPossiblySent, s.recvErr)
			}
		}
		close(s.done)
	}()
	var dec fromproto.ObjectDecoder // this loop's alone
	// A host that takes JSON gets each event's bytes as they crossed the
	// wire, decoded by nobody; it reports malformed ones.
	_, takesJSON := s.host.(runtime.JSONEmitter)
	replay := 0 // events sent again by a re-attached plugin, still to come
	var raw rawPluginMessage
	names := map[string]runtime.EventType{}
	for {
		if err := s.stream.RecvMsg(&raw); err != nil {
			s.recvErr = err
			return
		}
		if takesJSON && replay == 0 {
			if batch, ok := wireEvents(raw.b, nil, names); ok {
				em.emitWire(batch)
				continue
			}
		}
		msg, err := fromproto.ReadMessage(raw.b)
		if err != nil {
			// What gRPC's own decoding says of a message it cannot read.
			s.recvErr = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
			return
		}
		if msg.Kind() != fromproto.KindEvents {
			// Whatever follows events in the stream — a permission
			// request, a turn end, the close — acts only once they were
			// all emitted, as when this loop emitted them itself.
			em.drain()
		}
		switch msg.Kind() {
		case fromproto.KindOpened:
			o := msg.Opened()
			if o.Reattached {
				replay = int(o.ReplayEvents)
				if o.TurnRunning || o.BufferedEvents > 0 {
					// Before anything the plugin kept, the log says where
					// the new host took over a turn (one that goes on, or
					// ended while no host was there); a parked session's
					// log keeps its session.end last.
					em.emit([]runtime.Event{{Type: runtime.EventSupervisorReattached, Fields: map[string]any{
						"buffered": o.BufferedEvents, "gap_ms": o.GapMs,
					}}})
					em.drain()
				}
			}
			s.opened <- o
		case fromproto.KindEvents:
			// The replay after a re-attach is decoded: the host says how
			// many of those events its log already has.
			batch := msg.Events(&dec, func(err error) {
				s.logger().Error("dropping a malformed event from the plugin", "error", err)
			})
			if replay > 0 {
				// The first Events after a re-attach are the replay.
				replay = 0
				if s.written != nil {
					batch = batch[min(max(s.written(batch), 0), len(batch)):]
				}
			}
			em.emit(batch)
		case fromproto.KindPermissionRequest:
			s.permission(msg.PermissionRequest())
		case fromproto.KindQuestionRequest:
			s.question(msg.QuestionRequest())
		case fromproto.KindTurnEnded:
			// A turn ended: any permission still pending for it is moot,
			// and every decision sent for it was received.
			s.mu.Lock()
			for id, c := range s.waits {
				c()
				delete(s.waits, id)
			}
			clear(s.inflight)
			s.mu.Unlock()
			te := msg.TurnEnded()
			select {
			case s.turnEnded <- te:
			default:
				<-s.turnEnded // drop a stale one nobody read
				s.turnEnded <- te
			}
		case fromproto.KindProcess:
			s.setProcess(msg.Process())
		case fromproto.KindClosed:
			select {
			case s.closed <- msg.Closed():
			default:
			}
		}
	}
}

// permission records the request in stream order (when the host can), then
// waits for the decision without holding up the stream.
func (s *remoteSession) permission(req runtime.PermissionRequest, err error) {
	if err != nil {
		s.logger().Error("malformed permission request; answering cancelled", "error", err)
		_ = s.send(toproto.Decide(req.ID, runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.waits[req.ID] = cancel
	s.mu.Unlock()
	var wait func(context.Context) (runtime.PermissionDecision, error)
	if r, ok := s.host.(runtime.PermissionRecorder); ok {
		wait = r.RecordPermission(ctx, req)
	} else {
		wait = func(ctx context.Context) (runtime.PermissionDecision, error) { return s.host.AskPermission(ctx, req) }
	}
	go func() {
		defer cancel()
		d, err := wait(ctx)
		s.mu.Lock()
		delete(s.waits, req.ID)
		s.mu.Unlock()
		if err != nil && d.Outcome == "" {
			d = runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}
		}
		abandoned := err != nil // the wait ended without a decision (turn over, plugin gone)
		if err := s.send(toproto.Decide(req.ID, d)); err != nil {
			if !abandoned {
				// Only a real decision that failed to leave is news; a
				// wait abandoned because the plugin died has nothing to
				// deliver.
				s.undelivered(req.ID, d, runtime.DeliveryNotSent, err)
			}
			return
		}
		// Sent, but not surely acted on until the turn ends: if the plugin
		// dies first, the decision may or may not have reached the runtime.
		s.mu.Lock()
		s.inflight[req.ID] = d
		s.mu.Unlock()
	}()
}

// question records the question in stream order (when the host can), then
// waits for its answer without holding up the stream. A host that cannot
// hear questions answers "no answer" at once.
func (s *remoteSession) question(req runtime.QuestionRequest, err error) {
	if err != nil {
		s.logger().Error("malformed question; answering that there is no answer", "error", err)
		_ = s.send(toproto.AnswerQuestion(req.ID, runtime.QuestionAnswer{}))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	key := questionWaitKey(req.ID) // apart from the permission request of the same id
	s.mu.Lock()
	s.waits[key] = cancel
	s.mu.Unlock()
	var wait func(context.Context) (runtime.QuestionAnswer, error)
	if r, ok := s.host.(runtime.QuestionRecorder); ok {
		wait = r.RecordQuestion(ctx, req)
	} else {
		wait = func(ctx context.Context) (runtime.QuestionAnswer, error) {
			return runtime.AskQuestion(ctx, s.host, req)
		}
	}
	go func() {
		defer cancel()
		a, err := wait(ctx)
		s.mu.Lock()
		delete(s.waits, key)
		s.mu.Unlock()
		if err != nil {
			a = runtime.QuestionAnswer{}
		}
		if err := s.send(toproto.AnswerQuestion(req.ID, a)); err != nil {
			s.logger().Warn("the answer to a question was not sent", "request_id", req.ID, "error", err)
		}
	}()
}

func questionWaitKey(id string) string { return "question\x00" + id }

func (s *remoteSession) undelivered(id string, d runtime.PermissionDecision, state string, cause error) {
	if r, ok := s.host.(runtime.DeliveryReporter); ok {
		r.PermissionUndelivered(id, d, state, cause)
	}
}

func (s *remoteSession) logger() hclog.Logger {
	if s.host != nil {
		if l := s.host.Logger(); l != nil {
			return l
		}
	}
	return hclog.NewNullLogger()
}

// userFault is err as the user's fault: it matches err and a *runtime.Error
// with FaultUser.
type userFault struct{ err error }

func (e userFault) Error() string { return e.err.Error() }
func (e userFault) Unwrap() []error {
	return []error{e.err, &runtime.Error{Fault: runtime.FaultUser, Message: e.err.Error()}}
}
