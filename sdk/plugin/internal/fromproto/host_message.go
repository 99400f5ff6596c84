package fromproto

import (
	"google.golang.org/grpc"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// What a plugin reads of the requests and session stream messages a host
// sends.

// Check reads a Check request; on error (options that are not a JSON
// object) the request still names its backend and env.
func Check(r *pb.CheckRequest) (runtime.CheckRequest, error) {
	req := runtime.CheckRequest{Backend: r.GetBackend(), Env: r.GetEnv()}
	opts, err := Object(r.GetOptionsJson())
	if err != nil {
		return req, err
	}
	req.Options = opts
	return req, nil
}

// HostKind says which message a host sent on a session stream.
type HostKind int

// The messages a host sends; HostOther is one this plugin does not know.
const (
	HostOther HostKind = iota
	HostOpen
	HostReattach
	HostPrompt
	HostCancel
	HostPermissionDecision
	HostClose
	HostQuestionAnswer
)

// HostMessage is one message a host sent on a session stream, read by its
// Kind's method.
type HostMessage struct{ m *pb.HostMessage }

// RecvHostMessage receives the next message of stream.
func RecvHostMessage(stream grpc.ServerStream) (HostMessage, error) {
	m := new(pb.HostMessage)
	if err := stream.RecvMsg(m); err != nil {
		return HostMessage{}, err
	}
	return HostMessage{m}, nil
}

// Kind is which message m is.
func (m HostMessage) Kind() HostKind {
	switch m.m.Msg.(type) {
	case *pb.HostMessage_Open:
		return HostOpen
	case *pb.HostMessage_Reattach:
		return HostReattach
	case *pb.HostMessage_Prompt:
		return HostPrompt
	case *pb.HostMessage_Cancel:
		return HostCancel
	case *pb.HostMessage_PermissionDecision:
		return HostPermissionDecision
	case *pb.HostMessage_Close:
		return HostClose
	case *pb.HostMessage_QuestionAnswer:
		return HostQuestionAnswer
	}
	return HostOther
}

// OpenBackend is the backend a HostOpen message names.
func (m HostMessage) OpenBackend() string { return m.m.GetOpen().GetBackend() }

// Open reads a HostOpen message (see the function Open).
func (m HostMessage) Open() (runtime.OpenRequest, error) { return Open(m.m.GetOpen()) }

// ReattachSessionID is the session a HostReattach message takes over.
func (m HostMessage) ReattachSessionID() string { return m.m.GetReattach().GetSessionId() }

// Prompt reads a HostPrompt message.
func (m HostMessage) Prompt() runtime.Turn {
	p := m.m.GetPrompt()
	t := runtime.Turn{ID: p.GetTurnId(), Text: p.GetText(), Compact: p.GetCompact()}
	for _, im := range p.GetImages() {
		t.Images = append(t.Images, runtime.Image{Path: im.GetPath(), MediaType: im.GetMediaType()})
	}
	return t
}

// CancelTurnID is the turn a HostCancel message cancels.
func (m HostMessage) CancelTurnID() string { return m.m.GetCancel().GetTurnId() }

// Decision reads a HostPermissionDecision message: the request it
// answers and the decision.
func (m HostMessage) Decision() (requestID string, d runtime.PermissionDecision) {
	pd := m.m.GetPermissionDecision()
	return pd.GetRequestId(), PermissionDecision(pd)
}
