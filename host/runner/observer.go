package runner

import (
	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Observer learns the facts of a run its owner acts on, typed, as they
// happen: a session opened, its session.start written, a session.end
// written. Its owner (host/run's runtime) never reads the event stream to
// learn them. The methods run on the run's writing goroutine, in stream
// order; they must return quickly and take no lock the run may wait for.
type Observer interface {
	// Opened: an attempt's session is open (or taken over) as sessionID,
	// before its session.start is written and its first prompt sent; both
	// wait for it (stable makes the session durable there, so that a
	// successor can take the turn over).
	Opened(sessionID string)
	// Started: the attempt's session.start was written. A session taken
	// over (Options.Reattach) writes none, and is only Opened.
	Started(sessionID string)
	// Ended: a session.end was written, the last event of an attempt.
	Ended(end SessionEnd)
}

// SessionEnd is a session.end as written.
type SessionEnd struct {
	// SessionID is the ended session's, "" when none opened.
	SessionID string
	// Seq is the event's seq in the stream.
	Seq        int64
	StopReason sdk.StopReason
	// FinalOutput is its final_output, "" when none.
	FinalOutput string
	// Event is the stamped event as written, for the views that show it
	// whole; it must not be modified.
	Event event.Event
}

// sessionEndOf is the fact of a stamped session.end.
func sessionEndOf(ev event.Event) SessionEnd {
	end := SessionEnd{Event: ev}
	end.SessionID, _ = ev[event.KeySessionID].(string)
	end.Seq, _ = ev["seq"].(int64)
	if s, ok := ev["stop_reason"].(string); ok {
		end.StopReason = sdk.StopReason(s)
	}
	end.FinalOutput, _ = ev["final_output"].(string)
	return end
}

// noteEnd tells the observer of a written session.end.
func (r *Runner) noteEnd(typ sdk.EventType, stamped func() event.Event) {
	if ob := r.opts.Observer; ob != nil && typ == event.TypeSessionEnd {
		ob.Ended(sessionEndOf(stamped()))
	}
}
