package geminiacp

import (
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the sdk's kit against gemini-acp over real gRPC,
// driving the fake ACP agent with Gemini's profile.
func TestConformance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "gemini", Version: "test"},
		Backends: []runtime.Backend{New()},
		Prompt:   acptest.Prompt,
		Open: func(req *runtime.OpenRequest) {
			req.Env = map[string]string{BinaryEnv: fakeAgent, "FAKEACP_PROFILE": "gemini", "FAKEACP_STATE": state}
		},
	})
}
