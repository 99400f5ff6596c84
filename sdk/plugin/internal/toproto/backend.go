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
		Capabilities:   capabilities(b.Capabilities),
		ResumeScope:    b.ResumeScope,
		ThinkingLevels: b.ThinkingLevels,
		EventTypes:     eventTypes(b.EventTypes),
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

// The wire spells the capability matrix and event types as plain strings;
// runtime's defined types are the same strings, converted one by one. A nil
// input stays nil, as the generated getters return it.

func capabilities(m map[runtime.Capability]runtime.Support) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for c, s := range m {
		out[string(c)] = string(s)
	}
	return out
}

func eventTypes(ts []runtime.EventType) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}
