package permission

import (
	"fmt"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Delivery says whether a decision may have reached a plugin that died.
type Delivery string

const (
	// DeliveryNotSent: the decision never left the host.
	DeliveryNotSent Delivery = "not_sent"
	// DeliveryPossiblySent: the decision was written to the plugin's
	// stream, but the plugin died before it was known to have acted on it.
	DeliveryPossiblySent Delivery = "possibly_sent"
)

// Undelivered reports a decision that could not be delivered because the
// plugin died: an avenor.error{source:"permission"} with request_id,
// option_id, outcome and delivery. Nothing else happens — in particular
// nothing is retried or allowed in its place. cause, when not nil, is the
// transport's error.
func (s *Session) Undelivered(requestID string, d sdk.PermissionDecision, state Delivery, cause error) {
	s.mu.Lock()
	emit := s.emit
	s.mu.Unlock()
	if emit == nil {
		return
	}
	what := "was not sent"
	if state == DeliveryPossiblySent {
		what = "may not have reached it"
	}
	decision := d.Outcome
	if d.OptionID != "" {
		decision += " " + d.OptionID
	}
	msg := fmt.Sprintf("permission decision for request %s (%s) %s: the plugin died", requestID, decision, what)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	ev := errorEvent(msg)
	ev["request_id"] = requestID
	ev["option_id"] = d.OptionID
	ev["outcome"] = d.Outcome
	ev["delivery"] = string(state)
	emit(ev)
}
