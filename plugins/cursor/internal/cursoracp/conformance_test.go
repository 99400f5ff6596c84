package cursoracp

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/sdk/acp/acptest"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

var fakeAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cursoracp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if fakeAgent, err = acptest.FakeAgent(dir, "agent"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestConformance runs the sdk's kit against cursor-acp over real gRPC,
// driving the fake ACP agent with Cursor's profile (authenticate with
// cursor_login included).
func TestConformance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "cursor", Version: "test"},
		Backends: []runtime.Backend{New()},
		Prompt:   acptest.Prompt,
		Open: func(req *runtime.OpenRequest) {
			req.Env = map[string]string{BinaryEnv: fakeAgent, "FAKEACP_PROFILE": "cursor", "FAKEACP_STATE": state}
		},
	})
}
