package toproto

import (
	"time"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The messages a plugin sends on a session stream.

// Opened answers Open: the session's id, its process and the fields its
// session.start carries (JSON, may be nil).
func Opened(sessionID string, p runtime.ProcessInfo, startFields []byte) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Opened{Opened: &pb.Opened{
		SessionId: sessionID, Process: ProcessInfo(p), StartFieldsJson: startFields,
	}}}
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
func Reattached(r Reattach) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Opened{Opened: &pb.Opened{
		SessionId: r.SessionID, Process: ProcessInfo(r.Process), Reattached: true,
		TurnId: r.TurnID, TurnRunning: r.TurnRunning, BufferedEvents: uint32(r.BufferedEvents), GapMs: r.Gap.Milliseconds(),
		ReplayEvents: uint32(r.ReplayEvents),
	}}}
}

// Closed says the session is closed, by err when not nil.
func Closed(err error) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Closed{Closed: &pb.Closed{Error: Error(err)}}}
}

// Ended says turn turnID ended (TurnEnded).
func Ended(turnID string, res runtime.TurnResult, err error) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_TurnEnded{TurnEnded: TurnEnded(turnID, res, err)}}
}

// Events is one batch of events.
func Events(evs []*pb.Event) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Events{Events: &pb.Events{Events: evs}}}
}

// EventJSON is an event whose fields are JSON already (runtime.JSONEmitter):
// they cross as they are.
func EventJSON(typ runtime.EventType, fields []byte) *pb.Event {
	return &pb.Event{Type: typ, Json: fields}
}

// Asked asks the host for a permission decision.
func Asked(r *pb.PermissionRequest) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_PermissionRequest{PermissionRequest: r}}
}

// ProcessChanged tells the host the runtime process changed.
func ProcessChanged(p runtime.ProcessInfo) *pb.PluginMessage {
	return &pb.PluginMessage{Msg: &pb.PluginMessage_Process{Process: ProcessInfo(p)}}
}
