package runtime

import "strings"

// PermissionOption is one choice offered to whoever answers a request.
type PermissionOption struct {
	ID              string `json:"optionId"`
	Kind            string `json:"kind"`
	Name            string `json:"name,omitempty"`
	RequiresMessage bool   `json:"requiresMessage,omitempty"`
}

// PermissionRequest is a runtime asking to do something.
type PermissionRequest struct {
	ID       string // unique within the session; for ACP the JSON-RPC id
	Options  []PermissionOption
	Tool     string // best effort
	Question string // best effort
	// RequiresUserInput requests are never auto-approved.
	RequiresUserInput bool
	// Raw backend fields copied into the permission.request event.
	Fields map[string]any
}

// Outcomes of a permission decision.
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// Normalised decision kinds.
const (
	KindAllowOnce   = "allow_once"
	KindAllowAlways = "allow_always"
	KindReject      = "reject"
)

// PermissionDecision is the broker's answer.
type PermissionDecision struct {
	Outcome  string // OutcomeSelected or OutcomeCancelled
	OptionID string
	Kind     string // KindAllowOnce, KindAllowAlways, KindReject; empty when cancelled
	Message  string
}

// Allowed reports whether the decision permits the action.
func (d PermissionDecision) Allowed() bool {
	return d.Outcome == OutcomeSelected && (d.Kind == KindAllowOnce || d.Kind == KindAllowAlways)
}

// NormalizeKind maps an option kind to "allow", "reject" or "unknown"
// (docs/permission-handler.md#the-file-handler): allow, allow_once, allow_always → allow; reject, deny and
// their _once/_always variants → reject; case-insensitive.
func NormalizeKind(kind string) string {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "allow", "allow_once", "allow_always":
		return "allow"
	case "reject", "reject_once", "reject_always", "deny", "deny_once", "deny_always":
		return "reject"
	}
	return "unknown"
}

// DecisionKind is the typed decision kind for an option kind: allow_always
// stays allow_always, other allow kinds are allow_once, reject kinds reject.
func DecisionKind(optionKind string) string {
	switch NormalizeKind(optionKind) {
	case "allow":
		if strings.EqualFold(strings.TrimSpace(optionKind), "allow_always") {
			return KindAllowAlways
		}
		return KindAllowOnce
	case "reject":
		return KindReject
	}
	return ""
}
