package runtime

import (
	"strings"
	"testing"
)

func TestCheckSandbox(t *testing.T) {
	declares := BackendInfo{Name: "b", Capabilities: Supports(CapSandbox)}
	lacks := BackendInfo{Name: "b"}
	ws := Sandbox{Profile: SandboxWorkspace, Mechanism: MechanismBubblewrap}
	for _, tc := range []struct {
		name string
		b    BackendInfo
		sb   Sandbox
		err  string
	}{
		{"none on a backend without the capability", lacks, Sandbox{}, ""},
		{"off on a backend without the capability", lacks, Sandbox{Profile: SandboxOff}, ""},
		{"workspace on a backend that declares it", declares, ws, ""},
		{"workspace on a backend that does not", lacks, ws, `backend "b" cannot launch its runtime inside a sandbox`},
		{"unknown profile", declares, Sandbox{Profile: "loose", Mechanism: MechanismBubblewrap}, "invalid sandbox profile"},
		{"unknown mechanism", declares, Sandbox{Profile: SandboxReadOnly, Mechanism: "chroot"}, "mechanism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSandbox(tc.b, tc.sb)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestWithRuntimeDirsOnlyUnderWorkspace(t *testing.T) {
	if got := (Sandbox{Profile: SandboxReadOnly}).WithRuntimeDirs("/rt").RuntimeDirs; got != nil {
		t.Errorf("read-only got runtime dirs %q: nothing is writable under it", got)
	}
	if got := (Sandbox{Profile: SandboxWorkspace}).WithRuntimeDirs("/rt").RuntimeDirs; len(got) != 1 {
		t.Errorf("workspace: got %q", got)
	}
}

func TestParseSandbox(t *testing.T) {
	for v, want := range map[string]SandboxProfile{"": SandboxOff, "off": SandboxOff, "workspace": SandboxWorkspace, "read-only": SandboxReadOnly} {
		if got, err := ParseSandboxProfile(v); err != nil || got != want {
			t.Errorf("%q: got %q, %v", v, got, err)
		}
	}
	if _, err := ParseSandboxProfile("Workspace"); err == nil {
		t.Error("a misspelt profile was accepted")
	}
	if _, err := ParseSandboxNetwork("lan"); err == nil {
		t.Error("an unknown network was accepted")
	}
}
