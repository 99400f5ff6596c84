package runtime

// Support is how far a backend supports a capability: the value of a row
// of the capability matrix. It is a defined type so that a level cannot be
// passed where a capability name (or any other string) is meant; it
// marshals to JSON as the plain string it holds.
type Support string

// String returns the level as the contract spells it ("supported", ...).
func (s Support) String() string { return string(s) }

// Support levels of a capability.
const (
	Supported    Support = "supported"
	Unsupported  Support = "unsupported"
	Experimental Support = "experimental"
	Unverified   Support = "unverified"
)

// Capability is a row of the capability matrix, named as the contract
// and `avenor backends --json` spell it ("new_sessions", ...). It is a
// defined type so that a capability name cannot be confused with its
// Support level; it marshals to JSON as the plain string it holds.
type Capability string

// String returns the capability's name as the contract spells it.
func (c Capability) String() string { return string(c) }

// Capability names: the rows of the seed's capability matrix.
const (
	CapNewSessions         Capability = "new_sessions"
	CapResume              Capability = "resume"
	CapPrompt              Capability = "prompt"
	CapCancel              Capability = "cancel"
	CapEventStreaming      Capability = "event_streaming"
	CapPermissionRelay     Capability = "permission_relay"
	CapModelSelection      Capability = "model_selection"
	CapExternalServerURL   Capability = "external_server_url"
	CapSubprocessDiscovery Capability = "subprocess_discovery"
	// CapPrewarm: a session opened before its first prompt (a warm pool
	// member of avenor stable) takes that prompt later as if it had just
	// opened.
	CapPrewarm Capability = "prewarm"
	// CapRateLimitReset: a turn the provider refuses for a rate limit ends
	// with a rate_limited error (RateLimited) that says when the limit
	// lifts, so the host can wait and send the turn again on the same
	// session (--wait-on-rate-limit).
	CapRateLimitReset Capability = "rate_limit_reset"
)

// CapabilityNames lists the matrix rows in display order.
var CapabilityNames = []Capability{
	CapNewSessions, CapResume, CapPrompt, CapCancel, CapEventStreaming,
	CapPermissionRelay, CapModelSelection, CapExternalServerURL, CapSubprocessDiscovery, CapPrewarm,
	CapQuestions, CapImages, CapRateLimitReset, CapCompaction,
}

// CapabilityTable is a backend's row of the capability matrix, built with
// Supports and With so that a backend names only what it offers: a
// capability it does not name is Unsupported, as BackendInfo.Capability
// has always read an absent entry. It is a map[Capability]Support, so it
// goes into BackendInfo.Capabilities as it is.
type CapabilityTable map[Capability]Support

// Supports returns the table in which each of caps is Supported.
func Supports(caps ...Capability) CapabilityTable {
	t := make(CapabilityTable, len(caps))
	for _, c := range caps {
		t[c] = Supported
	}
	return t
}

// With sets one capability's level (Experimental or Unverified, say, for
// one that works but is not vouched for) and returns the table, so calls
// chain after Supports.
func (t CapabilityTable) With(c Capability, level Support) CapabilityTable {
	t[c] = level
	return t
}

// Resume scopes (sdk/README.md#capability-rules).
const (
	// ResumeCrossProcess: a fresh plugin process can resume the session by id.
	ResumeCrossProcess = "cross_process"
	// ResumeInProcess: only the live plugin process can continue the session.
	ResumeInProcess = "in_process"
)

// ThinkingLevels is the whole --thinking vocabulary, in order.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// BackendInfo describes one backend.
type BackendInfo struct {
	Name        string
	Description string
	// Capabilities maps a capability name to its support level; absent
	// means Unsupported.
	Capabilities   map[Capability]Support
	ResumeScope    string      // ResumeCrossProcess, ResumeInProcess, or empty
	ThinkingLevels []string    // accepted --thinking values; empty refuses the flag
	EventTypes     []EventType // every event type the backend emits
}

// Capability returns the support level of a capability, Unsupported when absent.
func (b BackendInfo) Capability(name Capability) Support {
	if v, ok := b.Capabilities[name]; ok && v != "" {
		return v
	}
	return Unsupported
}

// AcceptsThinking reports whether level is one of the backend's levels.
func (b BackendInfo) AcceptsThinking(level string) bool {
	for _, l := range b.ThinkingLevels {
		if l == level {
			return true
		}
	}
	return false
}
