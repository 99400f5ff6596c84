package appserver

import (
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// plan is Codex's read-only sandbox, even over a broader sandbox option;
// accept-edits is relayed as is; the modes Codex does not declare are
// refused.
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
	for _, m := range []runtime.PermissionMode{runtime.ModeDefault, runtime.ModeFullAccess} {
		_, err := configFor(runtime.OpenRequest{Dir: "/w", PermissionMode: m})
		if err == nil || !strings.Contains(err.Error(), "supported modes: accept-edits, plan") || runtime.FaultOf(err) != runtime.FaultUser {
			t.Errorf("%s: %v; want it refused naming accept-edits and plan", m, err)
		}
	}
	// accept-edits: nothing native; the broker decides the relayed
	// approvals by the mode, and Codex's own sandbox is its config's.
	if cfg, err := configFor(runtime.OpenRequest{Dir: "/w", PermissionMode: runtime.ModeAcceptEdits}); err != nil || cfg.Sandbox != "" {
		t.Errorf("accept-edits: sandbox %q, %v; want Codex's own", cfg.Sandbox, err)
	}
	if _, err := configFor(runtime.OpenRequest{Dir: "/w", Launch: runtime.LaunchContext{AllowedTools: []string{}}}); err == nil {
		t.Errorf("an undeclared tool list was accepted")
	}
}
