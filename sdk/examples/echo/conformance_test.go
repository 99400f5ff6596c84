package echo_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the conformance kit over real gRPC, in process. The
// default prompts suit echo: a prompt mentioning "permission" asks one.
func TestConformance(t *testing.T) {
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "echo", Version: echo.Version},
		Backends: []runtime.Backend{echo.New()},
	})
}

// TestConformanceBinary runs the kit against the built binary, which adds
// what only a process shows: a crash mid-turn, resume in a fresh process.
func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := filepath.Join(t.TempDir(), "avenor-plugin-echo")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/avenor-plugin-echo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	plugintest.RunBinary(t, bin, plugintest.Harness{})
}
