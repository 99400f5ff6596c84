package ochttp

import (
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the sdk's conformance kit over real gRPC, in
// process, against the fake OpenCode server.
func TestConformance(t *testing.T) {
	f := newFakeServer(t)
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "opencode", Version: "0.0.0-test"},
		Backends: []runtime.Backend{New()},
		Open: func(req *runtime.OpenRequest) {
			// Through the environment, so that Check sees the server too.
			req.Env = map[string]string{ServerURLEnv: f.URL(), PasswordEnv: ""}
		},
		TurnTimeout: 20 * time.Second,
	})
}
