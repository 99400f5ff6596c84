package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Readiness is the answer to Check.
func Readiness(r runtime.Readiness) *pb.CheckResponse {
	return &pb.CheckResponse{Ready: r.Ready, Binary: r.Binary, Version: r.Version, Auth: r.Auth, Message: r.Message}
}
