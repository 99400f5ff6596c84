package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Readiness reads the answer to Check.
func Readiness(r *pb.CheckResponse) runtime.Readiness {
	return runtime.Readiness{Ready: r.GetReady(), Binary: r.GetBinary(), Version: r.GetVersion(), Auth: r.GetAuth(), Message: r.GetMessage()}
}
