package appserver

import (
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestNestedSandbox: inside avenor's boundary, on either mechanism,
// Codex's own sandbox is off (it cannot start nested), unless the sandbox
// option or plan narrowed it; without avenor's boundary Codex's config
// decides, as before.
func TestNestedSandbox(t *testing.T) {
	sb := runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Writable: []string{"/w"}}
	// The choice does not hang on avenor's mechanism: under Landlock too
	// avenor's boundary is the one enforced (e2e TestSandboxDeniedCodex).
	ll := sb
	ll.Mechanism = runtime.MechanismLandlock
	for _, tc := range []struct {
		name string
		req  runtime.OpenRequest
		want string
	}{
		{"inside avenor's boundary: Codex's is off", runtime.OpenRequest{Sandbox: sb}, NestedSandbox},
		{"inside avenor's Landlock boundary too", runtime.OpenRequest{Sandbox: ll}, NestedSandbox},
		{"plan under Landlock keeps Codex's read-only", runtime.OpenRequest{Sandbox: ll, PermissionMode: runtime.ModePlan}, "read-only"},
		{"plan keeps Codex's read-only", runtime.OpenRequest{Sandbox: sb, PermissionMode: runtime.ModePlan}, "read-only"},
		{"an explicit option keeps it", runtime.OpenRequest{Sandbox: sb, Options: map[string]any{SandboxOption: "workspace-write"}}, "workspace-write"},
		{"no boundary: Codex's config decides", runtime.OpenRequest{}, ""},
	} {
		tc.req.Dir = "/w"
		cfg, err := configFor(tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.Sandbox != tc.want {
			t.Errorf("%s: thread/start sandbox %q, want %q", tc.name, cfg.Sandbox, tc.want)
		}
	}
}
