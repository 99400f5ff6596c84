package toproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Open is the first message of a session; the options cross as JSON.
func Open(r runtime.OpenRequest) (*pb.Open, error) {
	opts, err := Object(r.Options)
	if err != nil {
		return nil, fmt.Errorf("options of backend %q: %w", r.Backend, err)
	}
	return &pb.Open{
		Backend: r.Backend, Dir: r.Dir, Model: r.Model, Agent: r.Agent, Thinking: r.Thinking,
		ResumeSessionId: r.ResumeSessionID, ServerUrl: r.ServerURL, Env: r.Env,
		OptionsJson: opts, StateDir: r.StateDir, RunId: r.RunID, DirExplicit: r.DirExplicit,
	}, nil
}
