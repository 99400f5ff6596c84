package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// ProcessInfo reads the runtime process a session runs.
func ProcessInfo(p *pb.ProcessInfo) runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: int(p.GetPid()), PGID: int(p.GetPgid()), Binary: p.GetBinary(), Version: p.GetVersion()}
}
