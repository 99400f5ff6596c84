package ocacp

import (
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the sdk's kit against opencode-acp over real gRPC,
// driving the fake ACP agent with OpenCode's profile.
func TestConformance(t *testing.T) {
	tmp := t.TempDir()
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "opencode", Version: "test"},
		Backends: []runtime.Backend{New()},
		Prompt:   acptest.Prompt,
		Open: func(req *runtime.OpenRequest) {
			req.Options = map[string]any{"binary": fakeAgent}
			req.Env = map[string]string{"FAKEACP_PROFILE": "opencode", "FAKEACP_STATE": filepath.Join(tmp, "state"),
				"XDG_CONFIG_HOME": filepath.Join(tmp, "config"), "HOME": tmp}
		},
	})
}
