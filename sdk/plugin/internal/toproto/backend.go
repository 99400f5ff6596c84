package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// BackendInfo is a backend's Describe entry.
func BackendInfo(b runtime.BackendInfo) *pb.BackendInfo {
	return &pb.BackendInfo{
		Name:           b.Name,
		Description:    b.Description,
		Capabilities:   b.Capabilities,
		ResumeScope:    b.ResumeScope,
		ThinkingLevels: b.ThinkingLevels,
		EventTypes:     b.EventTypes,
	}
}
