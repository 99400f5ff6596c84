package runtime

// Support levels of a capability.
const (
	Supported    = "supported"
	Unsupported  = "unsupported"
	Experimental = "experimental"
	Unverified   = "unverified"
)

// Capability names: the rows of the seed's capability matrix.
const (
	CapNewSessions         = "new_sessions"
	CapResume              = "resume"
	CapPrompt              = "prompt"
	CapCancel              = "cancel"
	CapEventStreaming      = "event_streaming"
	CapPermissionRelay     = "permission_relay"
	CapModelSelection      = "model_selection"
	CapExternalServerURL   = "external_server_url"
	CapSubprocessDiscovery = "subprocess_discovery"
)

// CapabilityNames lists the matrix rows in display order.
var CapabilityNames = []string{
	CapNewSessions, CapResume, CapPrompt, CapCancel, CapEventStreaming,
	CapPermissionRelay, CapModelSelection, CapExternalServerURL, CapSubprocessDiscovery,
}

// Resume scopes (ARCHITECTURE §3).
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
	Capabilities   map[string]string
	ResumeScope    string   // ResumeCrossProcess, ResumeInProcess, or empty
	ThinkingLevels []string // accepted --thinking values; empty refuses the flag
	EventTypes     []string // every event type the backend emits
}

// Capability returns the support level of a capability, Unsupported when absent.
func (b BackendInfo) Capability(name string) string {
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
