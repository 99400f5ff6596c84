package fromproto_test

import (
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The permission mode and launch context cross the wire as they were
// given; a nil tool list (the runtime's defaults) stays nil and an empty
// one (no tool) stays empty, and nothing asked for sends no launch message.
func TestOpenLaunchContextRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		lc   runtime.LaunchContext
		mode runtime.PermissionMode
	}{
		{"nothing", runtime.LaunchContext{}, ""},
		{"no tools", runtime.LaunchContext{AllowedTools: []string{}}, runtime.ModePlan},
		{"everything", runtime.LaunchContext{
			AppendSystemPrompt: "be brief", AllowedTools: []string{"Read", "Bash(git:*)"},
			MCPServers: []runtime.MCPServer{
				{Name: "fs", Type: runtime.MCPStdio, Command: "/bin/fs", Args: []string{"-v"}, Env: []runtime.NameValue{{Name: "K", Value: "v"}}},
				{Name: "web", Type: runtime.MCPHTTP, URL: "https://x", Headers: []runtime.NameValue{{Name: "Authorization", Value: "Bearer t"}}},
			},
		}, runtime.ModeAcceptEdits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, err := toproto.Open(runtime.OpenRequest{Backend: "b", PermissionMode: tc.mode, Launch: tc.lc})
			if err != nil {
				t.Fatal(err)
			}
			if tc.lc.IsZero() != (open.GetLaunch() == nil) {
				t.Fatalf("launch message present = %v for %+v", open.GetLaunch() != nil, tc.lc)
			}
			got, err := fromproto.Open(open)
			if err != nil {
				t.Fatal(err)
			}
			if got.PermissionMode != tc.mode || !reflect.DeepEqual(got.Launch, tc.lc) {
				t.Fatalf("got %q %+v, want %q %+v", got.PermissionMode, got.Launch, tc.mode, tc.lc)
			}
		})
	}
}
