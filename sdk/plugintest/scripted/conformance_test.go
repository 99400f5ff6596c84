package scripted_test

import (
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// conformance tells the kit how to drive scripted: every prompt is a script.
var conformance = plugintest.Harness{
	Prompt: func(_ string, kind plugintest.TurnKind) (string, bool) {
		switch kind {
		case plugintest.TurnPlain:
			return "tool measure kind=read\nsay ok", true
		case plugintest.TurnLong:
			return "chunks 500 every=10ms", true
		case plugintest.TurnPermission:
			return "tool write kind=edit\npermission tool=write question=\"May I write?\"", true
		}
		return "", false
	},
}

// TestConformance runs the conformance kit over real gRPC, in process.
func TestConformance(t *testing.T) {
	h := conformance
	h.Plugin = plugin.Info{Name: "scripted", Version: scripted.Version}
	h.Backends = []runtime.Backend{scripted.New()}
	plugintest.Run(t, h)
}

// TestConformanceBinary runs the kit against the built binary.
func TestConformanceBinary(t *testing.T) {
	plugintest.RunBinary(t, pluginBinary(t), conformance)
}

// TestConformanceInProcess runs the kit against the in_process variant: it
// still resumes its own sessions, and the fresh-process check is skipped.
func TestConformanceInProcess(t *testing.T) {
	h := conformance
	h.Plugin = plugin.Info{Name: "scripted", Version: scripted.Version}
	h.Backends = []runtime.Backend{scripted.NewInProcess()}
	plugintest.Run(t, h)
}
