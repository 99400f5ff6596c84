package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TurnEnded reads a turn's end: its result and its error, if any.
func TurnEnded(te *pb.TurnEnded) (runtime.TurnResult, error) {
	res := runtime.TurnResult{
		StopReason: runtime.StopReason(te.GetStopReason()), HasFinalOutput: te.GetHasFinalOutput(),
		FinalOutput: te.GetFinalOutput(), SessionID: te.GetSessionId(),
	}
	if u := te.GetUsage(); u != nil {
		res.Usage = &runtime.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), TotalTokens: u.GetTotalTokens(), CachedReadTokens: u.GetCachedReadTokens()}
	}
	extra, err := Object(te.GetExtraJson())
	if err != nil {
		return res, runtime.Errorf(runtime.FaultPlugin, "turn result extra fields: %v", err)
	}
	res.Extra = extra
	return res, Error(te.GetError())
}
