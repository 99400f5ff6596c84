package toproto

import (
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The messages a plugin sends on a session stream. The plugin's stream
// plumbing (its outbox, the linger buffer, the replay ring) carries them as
// Message and EncodedEvent values and asks them only what it needs to
// know, so the generated types stay here.

// Message is one message a plugin sends on a session stream; the zero
// Message is none. Copies share the message.
type Message struct{ p *pb.PluginMessage }

// Proto is the message to send.
func (m Message) Proto() *pb.PluginMessage { return m.p }

// IsZero reports whether m is no message.
func (m Message) IsZero() bool { return m.p == nil }

// Size is m's encoded size.
func (m Message) Size() int { return proto.Size(m.p) }

// IsEvents reports whether m is a batch of events.
func (m Message) IsEvents() bool { return m.p.GetEvents() != nil }

// EventCount is the number of events m carries.
func (m Message) EventCount() int { return len(m.p.GetEvents().GetEvents()) }

// DropFirstEvent removes the first event of a batch from m and returns its
// encoded size; 0 when m carries none.
func (m Message) DropFirstEvent() int {
	ev := m.p.GetEvents()
	if len(ev.GetEvents()) == 0 {
		return 0
	}
	n := proto.Size(ev.Events[0])
	ev.Events = ev.Events[1:]
	return n
}

// AppendEvents appends the events m carries to dst.
func (m Message) AppendEvents(dst []EncodedEvent) []EncodedEvent {
	for _, e := range m.p.GetEvents().GetEvents() {
		dst = append(dst, EncodedEvent{e})
	}
	return dst
}

// RequestID is the id of the permission request or question m carries, or "".
func (m Message) RequestID() string {
	if q := m.p.GetQuestionRequest(); q != nil {
		return q.GetRequestId()
	}
	return m.p.GetPermissionRequest().GetRequestId()
}

// EncodedEvent is one event ready for the wire (Event, EventJSON).
type EncodedEvent struct{ p *pb.Event }

// Size is e's encoded size.
func (e EncodedEvent) Size() int { return proto.Size(e.p) }

// Bytes is the length of e's type and JSON: what it adds to a batch, near
// enough, without encoding it.
func (e EncodedEvent) Bytes() int { return len(e.p.GetJson()) + len(e.p.GetType()) }

// Batch gathers events into one Events message; the zero Batch is empty.
type Batch struct{ evs []*pb.Event }

// Add appends e.
func (b *Batch) Add(e EncodedEvent) { b.evs = append(b.evs, e.p) }

// Len is the number of events gathered.
func (b *Batch) Len() int { return len(b.evs) }

// Take returns the events gathered as one message and empties b.
func (b *Batch) Take() Message {
	m := Message{&pb.PluginMessage{Msg: &pb.PluginMessage_Events{Events: &pb.Events{Events: b.evs}}}}
	b.evs = nil
	return m
}

// Opened answers Open: the session's id, its process and the fields its
// session.start carries (JSON, may be nil).
func Opened(sessionID string, p runtime.ProcessInfo, startFields []byte, modelEndpoints []runtime.NetDest) Message {
	var eps []string
	for _, d := range modelEndpoints {
		eps = append(eps, d.String())
	}
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_Opened{Opened: &pb.Opened{
		SessionId: sessionID, Process: ProcessInfo(p), StartFieldsJson: startFields, ModelEndpoints: eps,
	}}}}
}

// Reattach is what a plugin tells a host that takes a lingering session
// over.
type Reattach struct {
	SessionID   string
	Process     runtime.ProcessInfo
	TurnID      string
	TurnRunning bool
	// BufferedEvents follow, kept while no host was there; ReplayEvents
	// were sent before the old host went and come first, again.
	BufferedEvents, ReplayEvents int
	// Gap is how long the session had no host.
	Gap time.Duration
}

// Reattached answers Reattach.
func Reattached(r Reattach) Message {
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_Opened{Opened: &pb.Opened{
		SessionId: r.SessionID, Process: ProcessInfo(r.Process), Reattached: true,
		TurnId: r.TurnID, TurnRunning: r.TurnRunning, BufferedEvents: uint32(r.BufferedEvents), GapMs: r.Gap.Milliseconds(),
		ReplayEvents: uint32(r.ReplayEvents),
	}}}}
}

// Closed says the session is closed, by err when not nil.
func Closed(err error) Message {
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_Closed{Closed: &pb.Closed{Error: Error(err)}}}}
}

// Ended says turn turnID ended (TurnEnded).
func Ended(turnID string, res runtime.TurnResult, err error) Message {
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_TurnEnded{TurnEnded: TurnEnded(turnID, res, err)}}}
}

// Events is one batch of the events evs.
func Events(evs []EncodedEvent) Message {
	var b Batch
	b.evs = make([]*pb.Event, 0, len(evs))
	for _, e := range evs {
		b.Add(e)
	}
	return b.Take()
}

// EventJSON is an event whose fields are JSON already (runtime.JSONEmitter):
// they cross as they are.
func EventJSON(typ runtime.EventType, fields []byte) EncodedEvent {
	return EncodedEvent{&pb.Event{Type: string(typ), Json: fields}}
}

// Ask asks the host for a permission decision on r; its fields cross as
// JSON.
func Ask(r runtime.PermissionRequest) (Message, error) {
	pr, err := PermissionRequest(r)
	if err != nil {
		return Message{}, err
	}
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_PermissionRequest{PermissionRequest: pr}}}, nil
}

// ProcessChanged tells the host the runtime process changed.
func ProcessChanged(p runtime.ProcessInfo) Message {
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_Process{Process: ProcessInfo(p)}}}
}

// IsZero reports whether e is no event.
func (e EncodedEvent) IsZero() bool { return e.p == nil }
