package plugintest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// A plugin holds itself to the contract with one test: Run serves what its
// main passes to plugin.Serve in process, over real gRPC, and checks every
// behaviour the host relies on as a named subtest
// (TestConformance/echo/session/cancel_ends_the_turn_promptly, …).
// Capabilities the backend does not advertise are skipped, not failed.
func ExampleRun() {
	// In the plugin's main_test.go:
	testConformance := func(t *testing.T) {
		plugintest.Run(t, plugintest.Harness{
			Plugin:   plugin.Info{Name: echo.Name, Version: echo.Version},
			Backends: []runtime.Backend{echo.New()},
			// A backend driving a real agent CLI gives Open a fake one
			// on PATH, and Prompt the prompts that make it use a tool or
			// ask a permission.
		})
	}
	_ = testConformance
}

// VerifyInProcess runs the checks Run runs, outside a test, and returns
// them as a Report: what `avenor plugin verify` prints, for a plugin's own
// tooling. Here the echo example plugin passes every check that applies to
// it.
func ExampleVerifyInProcess() {
	rep, err := plugintest.VerifyInProcess(context.Background(), plugintest.Harness{
		Plugin:   plugin.Info{Name: echo.Name, Version: echo.Version},
		Backends: []runtime.Backend{echo.New()},
	})
	if err != nil { // the plugin could not be started at all
		fmt.Println(err)
		return
	}
	fmt.Println("plugin:", rep.Plugin.Name)
	fmt.Println("checked:", rep.Count(plugintest.Pass) > 0)
	fmt.Println("failed:", rep.Count(plugintest.Fail))
	fmt.Println("conforms:", rep.Err() == nil)
	// Output:
	// plugin: echo
	// checked: true
	// failed: 0
	// conforms: true
}
