package acp

import (
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the sdk's conformance kit over real gRPC against an
// ACP backend driving the fake ACP agent, so what sdk/acp promises every
// ACP plugin (cancel, close, permissions, resume) is checked here, once.
func TestConformance(t *testing.T) {
	b, h := fakeBackend(t)
	plugintest.Run(t, h)
	// A bare session (no sdk/plugin in between) is held to the same rules.
	if err := plugintest.Verify(t.Context(), b, h); err != nil {
		t.Errorf("bare session: %v", err)
	}
}

func fakeBackend(t *testing.T) (runtime.Backend, plugintest.Harness) {
	agent := acptest.BuildFakeAgent(t, t.TempDir(), "fakeagent")
	state := t.TempDir()
	b := NewBackend(BackendSpec{
		Info: runtime.BackendInfo{
			Name: "fake-acp",
			Capabilities: runtime.CapabilityTable{
				runtime.CapNewSessions:     runtime.Supported,
				runtime.CapResume:          runtime.Supported,
				runtime.CapPrompt:          runtime.Supported,
				runtime.CapCancel:          runtime.Supported,
				runtime.CapEventStreaming:  runtime.Supported,
				runtime.CapPermissionRelay: runtime.Supported,
			},
			ResumeScope: runtime.ResumeCrossProcess,
		},
		Binary:      agent,
		InstallHint: "it is built by the test",
	})
	return b, plugintest.Harness{
		Plugin:   plugin.Info{Name: "fake", Version: "0.0.0"},
		Backends: []runtime.Backend{b},
		Prompt:   acptest.Prompt,
		Open: func(req *runtime.OpenRequest) {
			req.Env = map[string]string{"FAKEACP_STATE": state}
		},
		TurnTimeout: 20 * time.Second,
	}
}
