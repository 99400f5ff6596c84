package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Error carries err's fault, message, code and rate-limit reset; nil is nil.
func Error(err error) *pb.Error {
	if err == nil {
		return nil
	}
	e := &pb.Error{Fault: string(runtime.FaultOf(err)), Message: err.Error(), Code: string(runtime.CodeOf(err))}
	if t := runtime.ResetOf(err); !t.IsZero() {
		e.ResetAtUnixMs = t.UnixMilli()
	}
	return e
}
