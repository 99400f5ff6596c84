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
		Capabilities:   b.GetCapabilities(),
		ResumeScope:    b.GetResumeScope(),
		ThinkingLevels: b.GetThinkingLevels(),
		EventTypes:     b.GetEventTypes(),
	}
}
