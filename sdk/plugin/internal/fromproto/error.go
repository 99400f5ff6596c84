package fromproto

import (
	"time"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Error reads an error with its fault (the plugin's when none is
// given), code and rate-limit reset; nil is nil.
func Error(e *pb.Error) error {
	if e == nil {
		return nil
	}
	fault := runtime.Fault(e.GetFault())
	if fault == "" {
		fault = runtime.FaultPlugin
	}
	out := &runtime.Error{Fault: fault, Message: e.GetMessage(), Code: runtime.Code(e.GetCode())}
	if ms := e.GetResetAtUnixMs(); ms > 0 {
		out.ResetAt = time.UnixMilli(ms)
	}
	return out
}
