package appserver

import (
	"os"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestConformance runs the sdk's conformance kit over real gRPC, in
// process, with this test binary as a behavioural fake codex ("auto" mode
// of fakecodex_test.go). One CODEX_HOME serves every session, so a fresh
// app-server process resumes a thread an earlier one made.
func TestConformance(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	plugintest.Run(t, plugintest.Harness{
		Plugin:   plugin.Info{Name: "codex", Version: "0.1.0"},
		Backends: []runtime.Backend{New()},
		Open: func(req *runtime.OpenRequest) {
			req.Options = map[string]any{"binary": exe}
			req.Env = map[string]string{FakeModeEnv: "auto", "CODEX_HOME": home, "GORACE": "atexit_sleep_ms=0"}
		},
		TurnTimeout: 20 * time.Second,
	})
}
