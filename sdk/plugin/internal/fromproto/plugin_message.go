package fromproto

import (
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
}

// Opened reads the answer to Open or Reattach.
func Opened(o *pb.Opened) Opening {
	return Opening{
		SessionID: o.GetSessionId(), Process: ProcessInfo(o.GetProcess()), StartFields: o.GetStartFieldsJson(),
		Reattached: o.GetReattached(), TurnID: o.GetTurnId(), TurnRunning: o.GetTurnRunning(),
		BufferedEvents: o.GetBufferedEvents(), GapMs: o.GetGapMs(), ReplayEvents: o.GetReplayEvents(),
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
