package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// BackendInfo reads a backend's Describe entry.
func BackendInfo(b *pb.BackendInfo) runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:           b.GetName(),
		Description:    b.GetDescription(),
		Capabilities:   capabilities(b.GetCapabilities()),
		ResumeScope:    b.GetResumeScope(),
		ThinkingLevels: b.GetThinkingLevels(),
		EventTypes:     eventTypes(b.GetEventTypes()),
	}
}

// The wire spells the capability matrix and event types as plain strings;
// runtime's defined types are the same strings, converted one by one. A nil
// input stays nil.

func capabilities(m map[string]string) map[runtime.Capability]runtime.Support {
	if m == nil {
		return nil
	}
	out := make(map[runtime.Capability]runtime.Support, len(m))
	for c, s := range m {
		out[runtime.Capability(c)] = runtime.Support(s)
	}
	return out
}

func eventTypes(ts []string) []runtime.EventType {
	if ts == nil {
		return nil
	}
	out := make([]runtime.EventType, len(ts))
	for i, t := range ts {
		out[i] = runtime.EventType(t)
	}
	return out
}
