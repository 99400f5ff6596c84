package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// ProcessInfo is the runtime process a session runs.
func ProcessInfo(p runtime.ProcessInfo) *pb.ProcessInfo {
	return &pb.ProcessInfo{Pid: int32(p.PID), Pgid: int32(p.PGID), Binary: p.Binary, Version: p.Version}
}
