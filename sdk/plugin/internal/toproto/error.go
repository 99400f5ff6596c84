package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Error carries err's fault, message and code; nil is nil.
func Error(err error) *pb.Error {
	if err == nil {
		return nil
	}
	return &pb.Error{Fault: string(runtime.FaultOf(err)), Message: err.Error(), Code: string(runtime.CodeOf(err))}
}
