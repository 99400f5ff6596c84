package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TurnEnded reports the end of turn turnID: its result, or err with its
// fault and code (a stop reason of error when the result has none).
func TurnEnded(turnID string, res runtime.TurnResult, err error) *pb.TurnEnded {
	extra, merr := Object(res.Extra)
	te := &pb.TurnEnded{
		TurnId: turnID, StopReason: string(res.StopReason), HasFinalOutput: res.HasFinalOutput,
		FinalOutput: res.FinalOutput, ExtraJson: extra, SessionId: res.SessionID,
	}
	if res.Usage != nil {
		u := res.Usage
		te.Usage = &pb.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens, CachedReadTokens: u.CachedReadTokens}
	}
	if err == nil && merr != nil {
		err = runtime.Errorf(runtime.FaultPlugin, "turn result extra fields: %v", merr)
	}
	if err != nil {
		te.Error = Error(err)
		if te.StopReason == "" {
			te.StopReason = string(runtime.StopError)
		}
	}
	return te
}
