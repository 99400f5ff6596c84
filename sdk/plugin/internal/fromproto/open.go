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
		DirExplicit: o.GetDirExplicit(), PermissionMode: runtime.PermissionMode(o.GetPermissionMode()), Questions: o.GetQuestions(),
		Launch: launch(o.GetLaunch()), Sandbox: sandbox(o.GetSandbox()),
	}, nil
}

// sandbox reads the boundary the runtime is launched inside; absent is
// none.
func sandbox(s *pb.Sandbox) runtime.Sandbox {
	if s == nil {
		return runtime.Sandbox{}
	}
	return runtime.Sandbox{
		Profile: runtime.SandboxProfile(s.GetProfile()), Mechanism: s.GetMechanism(),
		Writable: s.GetWritable(), DenyRead: s.GetDenyRead(), Network: s.GetNetwork(), ProxySocket: s.GetProxySocket(),
	}
}

// launch reads the launch context; an absent tool list stays nil (the
// runtime's defaults), a present empty one becomes an empty list.
func launch(l *pb.LaunchContext) runtime.LaunchContext {
	if l == nil {
		return runtime.LaunchContext{}
	}
	out := runtime.LaunchContext{AppendSystemPrompt: l.GetAppendSystemPrompt()}
	if t := l.GetAllowedTools(); t != nil {
		out.AllowedTools = append([]string{}, t.GetTools()...)
	}
	for _, s := range l.GetMcpServers() {
		out.MCPServers = append(out.MCPServers, runtime.MCPServer{
			Name: s.GetName(), Type: s.GetType(), Command: s.GetCommand(), Args: s.GetArgs(),
			Env: nameValues(s.GetEnv()), URL: s.GetUrl(), Headers: nameValues(s.GetHeaders()),
		})
	}
	return out
}

func nameValues(in []*pb.NameValue) []runtime.NameValue {
	var out []runtime.NameValue
	for _, nv := range in {
		out = append(out, runtime.NameValue{Name: nv.GetName(), Value: nv.GetValue()})
	}
	return out
}
