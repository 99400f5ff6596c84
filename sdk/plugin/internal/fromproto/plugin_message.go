package fromproto

import (
	"google.golang.org/protobuf/proto"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// What a host reads of the messages a plugin sends on a session stream.

// Opening is what a plugin says of a session it opened or handed over
// (Opened). The counts keep their wire types: the host puts them in an
// event as they are.
type Opening struct {
	SessionID string
	Process   runtime.ProcessInfo
	// StartFields is the JSON of the session.start fields (Object reads it).
	StartFields []byte
	// Reattached: a lingering session handed to a new host, with the turn
	// it runs, the events it kept while no host was there, how long that
	// was, and how many events it sends again first.
	Reattached     bool
	TurnID         string
	TurnRunning    bool
	BufferedEvents uint32
	GapMs          int64
	ReplayEvents   uint32
	// ModelEndpoints are the runtime's model endpoints as the plugin
	// reported them (host:port entries, unchecked: ParseNetDest reads them).
	ModelEndpoints []string
}

// Opened reads the answer to Open or Reattach.
func Opened(o *pb.Opened) Opening {
	return Opening{
		SessionID: o.GetSessionId(), Process: ProcessInfo(o.GetProcess()), StartFields: o.GetStartFieldsJson(),
		Reattached: o.GetReattached(), TurnID: o.GetTurnId(), TurnRunning: o.GetTurnRunning(),
		BufferedEvents: o.GetBufferedEvents(), GapMs: o.GetGapMs(), ReplayEvents: o.GetReplayEvents(),
		ModelEndpoints: o.GetModelEndpoints(),
	}
}

// TurnEnd is the end of one turn: its id, result and error (TurnEnded).
type TurnEnd struct {
	TurnID string
	Result runtime.TurnResult
	Err    error
}

// Ended reads a turn's end.
func Ended(te *pb.TurnEnded) TurnEnd {
	res, err := TurnEnded(te)
	return TurnEnd{TurnID: te.GetTurnId(), Result: res, Err: err}
}

// Closed reads why the plugin closed the session; nil: it closed cleanly.
func Closed(c *pb.Closed) error { return Error(c.GetError()) }

// Kind says which message a plugin sent on a session stream.
type Kind int

// The messages a plugin sends; KindOther is one this host does not know.
const (
	KindOther Kind = iota
	KindOpened
	KindEvents
	KindPermissionRequest
	KindTurnEnded
	KindProcess
	KindClosed
	KindQuestionRequest
)

// Message is one message a plugin sent on a session stream, read by its
// Kind's method.
type Message struct{ m *pb.PluginMessage }

// ReadMessage decodes one PluginMessage; the error is the proto decoder's.
func ReadMessage(b []byte) (Message, error) {
	m := &pb.PluginMessage{}
	if err := proto.Unmarshal(b, m); err != nil {
		return Message{}, err
	}
	return Message{m}, nil
}

// Kind is which message m is.
func (m Message) Kind() Kind {
	switch m.m.Msg.(type) {
	case *pb.PluginMessage_Opened:
		return KindOpened
	case *pb.PluginMessage_Events:
		return KindEvents
	case *pb.PluginMessage_PermissionRequest:
		return KindPermissionRequest
	case *pb.PluginMessage_TurnEnded:
		return KindTurnEnded
	case *pb.PluginMessage_Process:
		return KindProcess
	case *pb.PluginMessage_Closed:
		return KindClosed
	case *pb.PluginMessage_QuestionRequest:
		return KindQuestionRequest
	}
	return KindOther
}

// Opened reads a KindOpened message.
func (m Message) Opened() Opening { return Opened(m.m.GetOpened()) }

// Events reads a KindEvents message's events with d, the receiving
// session's decoder; bad hears each event that does not decode, which is
// left out.
func (m Message) Events(d *ObjectDecoder, bad func(error)) []runtime.Event {
	pes := m.m.GetEvents().GetEvents()
	batch := make([]runtime.Event, 0, len(pes))
	for _, pe := range pes {
		ev, err := Event(pe, d)
		if err != nil {
			bad(err)
			continue
		}
		batch = append(batch, ev)
	}
	return batch
}

// PermissionRequest reads a KindPermissionRequest message (see the
// function PermissionRequest).
func (m Message) PermissionRequest() (runtime.PermissionRequest, error) {
	return PermissionRequest(m.m.GetPermissionRequest())
}

// TurnEnded reads a KindTurnEnded message.
func (m Message) TurnEnded() TurnEnd { return Ended(m.m.GetTurnEnded()) }

// Process reads a KindProcess message.
func (m Message) Process() runtime.ProcessInfo { return ProcessInfo(m.m.GetProcess()) }

// Closed reads a KindClosed message: why the plugin closed the session,
// nil when it closed cleanly.
func (m Message) Closed() error { return Closed(m.m.GetClosed()) }
