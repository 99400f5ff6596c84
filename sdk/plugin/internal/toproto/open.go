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
		PermissionMode: string(r.PermissionMode), Launch: launch(r.Launch), Sandbox: sandbox(r.Sandbox), Questions: r.Questions,
	}, nil
}

// sandbox is the boundary on the wire; nil when none is asked for, so an
// older plugin sees exactly the Open it always did.
func sandbox(s runtime.Sandbox) *pb.Sandbox {
	if !s.Active() {
		return nil
	}
	return &pb.Sandbox{
		Profile: string(s.Profile), Mechanism: s.Mechanism, Writable: s.Writable,
		DenyRead: s.DenyRead, Network: s.Network, ProxySocket: s.ProxySocket,
	}
}

// launch is the launch context on the wire; nil when it asks for nothing,
// so an older plugin sees exactly the Open it always did.
func launch(l runtime.LaunchContext) *pb.LaunchContext {
	if l.IsZero() {
		return nil
	}
	out := &pb.LaunchContext{AppendSystemPrompt: l.AppendSystemPrompt}
	if l.AllowedTools != nil {
		out.AllowedTools = &pb.ToolList{Tools: l.AllowedTools}
	}
	for _, s := range l.MCPServers {
		out.McpServers = append(out.McpServers, &pb.McpServer{
			Name: s.Name, Type: s.Type, Command: s.Command, Args: s.Args, Env: nameValues(s.Env),
			Url: s.URL, Headers: nameValues(s.Headers),
		})
	}
	return out
}

func nameValues(in []runtime.NameValue) []*pb.NameValue {
	var out []*pb.NameValue
	for _, nv := range in {
		out = append(out, &pb.NameValue{Name: nv.Name, Value: nv.Value})
	}
	return out
}
