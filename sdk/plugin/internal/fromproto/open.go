package fromproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Open reads the first message of a session; its options must be a JSON
// object.
func Open(o *pb.Open) (runtime.OpenRequest, error) {
	opts, err := Object(o.GetOptionsJson())
	if err != nil {
		return runtime.OpenRequest{}, fmt.Errorf("options: %w", err)
	}
	return runtime.OpenRequest{
		Backend: o.GetBackend(), Dir: o.GetDir(), Model: o.GetModel(), Agent: o.GetAgent(),
		Thinking: o.GetThinking(), ResumeSessionID: o.GetResumeSessionId(), ServerURL: o.GetServerUrl(),
		Env: o.GetEnv(), Options: opts, StateDir: o.GetStateDir(), RunID: o.GetRunId(),
		DirExplicit: o.GetDirExplicit(),
	}, nil
}
