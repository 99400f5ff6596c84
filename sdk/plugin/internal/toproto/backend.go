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

// Description answers Describe: the plugin, the protocol versions it
// speaks, its SDK version and its backends in order.
func Description(name, version string, protocols []uint32, sdkVersion string, backends []runtime.BackendInfo) *pb.DescribeResponse {
	resp := &pb.DescribeResponse{
		PluginName: name, PluginVersion: version,
		ProtocolVersions: protocols, SdkVersion: sdkVersion,
	}
	for _, b := range backends {
		resp.Backends = append(resp.Backends, BackendInfo(b))
	}
	return resp
}
