package permission

// Claim is the control plane's claim on permission requests (docs/permission-handler.md#precedence).
type Claim int

const (
	// ClaimUnknown: no client said anything; a request goes to the control
	// plane when at least one client is connected.
	ClaimUnknown Claim = iota
	// ClaimReserved: a client reserved permission requests; they go to the
	// control plane even while no client is connected.
	ClaimReserved
	// ClaimReleased: the clients let the other resolvers answer.
	ClaimReleased
)

// ControlResolver is the control plane's side of resolution, implemented by
// host/control. The broker asks it, when a request arrives, whether the
// control plane takes the request (resolver "reserved"); the control plane's
// answer_permission comes back through Broker.Answer.
type ControlResolver interface {
	// Claim reports the current claim.
	Claim() Claim
	// Connected reports whether at least one control client is connected.
	Connected() bool
	// Disconnected returns a channel that is closed while no control client
	// is connected. The broker selects on it to fall through to the file
	// handler, or to none, once every client has gone.
	Disconnected() <-chan struct{}
}

// takes reports whether the control plane takes a request now.
func takes(c ControlResolver) bool {
	if c == nil {
		return false
	}
	switch c.Claim() {
	case ClaimReserved:
		return true
	case ClaimUnknown:
		return c.Connected()
	}
	return false
}
