package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Error reads an error with its fault (the plugin's when none is
// given) and code; nil is nil.
func Error(e *pb.Error) error {
	if e == nil {
		return nil
	}
	fault := runtime.Fault(e.GetFault())
	if fault == "" {
		fault = runtime.FaultPlugin
	}
	return &runtime.Error{Fault: fault, Message: e.GetMessage(), Code: runtime.Code(e.GetCode())}
}
