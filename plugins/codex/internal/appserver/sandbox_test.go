package appserver

import (
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// A sandboxed Open launches the app-server inside the boundary with
// $CODEX_HOME (else ~/.codex) kept writable; none launches it as always.
func TestSandboxKeepsCodexHomeWritable(t *testing.T) {
	sb := runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Writable: []string{"/w"}}
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"CODEX_HOME": "/ch", "HOME": "/h"}, []string{"/ch"}},
		{map[string]string{"CODEX_HOME": "", "HOME": "/h"}, []string{"/h/.codex"}},
	} {
		cfg, err := configFor(runtime.OpenRequest{Dir: "/w", Env: tc.env, Sandbox: sb})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.Boundary.RuntimeDirs, tc.want) || cfg.Boundary.Profile != runtime.SandboxWorkspace {
			t.Errorf("env %v: boundary %+v, want runtime dirs %q", tc.env, cfg.Boundary, tc.want)
		}
	}
	cfg, err := configFor(runtime.OpenRequest{Dir: "/w"})
	if err != nil || cfg.Boundary.Active() {
		t.Fatalf("no sandbox: boundary %+v, %v", cfg.Boundary, err)
	}
}
