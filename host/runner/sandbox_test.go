package runner

import (
	"reflect"
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A sandbox the backend does not declare is refused before Open; none is
// always accepted.
func TestCheckOpenRefusesUndeclaredSandbox(t *testing.T) {
	sb := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	lacks := sdk.BackendInfo{Name: "b"}
	if err := checkOpen(lacks, Options{Sandbox: sb}); err == nil || !strings.Contains(err.Error(), "cannot launch its runtime inside a sandbox") {
		t.Fatalf("err = %v, want the sandbox refused", err)
	}
	if err := checkOpen(lacks, Options{}); err != nil {
		t.Fatalf("no sandbox: %v", err)
	}
	if err := checkOpen(sdk.BackendInfo{Name: "b", Capabilities: sdk.Supports(sdk.CapSandbox)}, Options{Sandbox: sb}); err != nil {
		t.Fatalf("declared: %v", err)
	}
}

func TestSandboxFields(t *testing.T) {
	start := map[string]any{}
	addSandboxFields(start, sdk.Sandbox{})
	if len(start) != 0 {
		t.Fatalf("no sandbox added %v", start)
	}
	addSandboxFields(start, sdk.Sandbox{Profile: sdk.SandboxReadOnly, Mechanism: sdk.MechanismBubblewrap})
	want := map[string]any{"mechanism": "bubblewrap", "profile": "read-only", "network": "host"}
	if !reflect.DeepEqual(start["sandbox"], want) {
		t.Fatalf("sandbox block %v, want %v", start["sandbox"], want)
	}
}
