package appserver

import (
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// plan is Codex's read-only sandbox, even over a broader sandbox option;
// the modes Codex does not declare are refused.
func TestPermissionModeSandbox(t *testing.T) {
	cfg, err := configFor(runtime.OpenRequest{Dir: "/w", PermissionMode: runtime.ModePlan,
		Options: map[string]any{SandboxOption: "danger-full-access"}})
	if err != nil || cfg.Sandbox != "read-only" {
		t.Fatalf("plan: sandbox %q, %v; want read-only", cfg.Sandbox, err)
	}
	cfg, err = configFor(runtime.OpenRequest{Dir: "/w"})
	if err != nil || cfg.Sandbox != "" {
		t.Fatalf("no mode: sandbox %q, %v; want Codex's own", cfg.Sandbox, err)
	}
	for _, m := range []runtime.PermissionMode{runtime.ModeDefault, runtime.ModeAcceptEdits, runtime.ModeFullAccess} {
		_, err := configFor(runtime.OpenRequest{Dir: "/w", PermissionMode: m})
		if err == nil || !strings.Contains(err.Error(), "supported modes: plan") || runtime.FaultOf(err) != runtime.FaultUser {
			t.Errorf("%s: %v; want it refused naming plan", m, err)
		}
	}
	if _, err := configFor(runtime.OpenRequest{Dir: "/w", Launch: runtime.LaunchContext{AllowedTools: []string{}}}); err == nil {
		t.Errorf("an undeclared tool list was accepted")
	}
}
