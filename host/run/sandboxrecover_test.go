package run

import (
	"errors"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestSandboxRecoverSettings: sandbox_recover is refused, naming the
// setting as the user wrote it, without a workspace sandbox and for a
// loop or team; its backend check refuses a backend that cannot resume
// across processes, naming it and why.
func TestSandboxRecoverSettings(t *testing.T) {
	ws := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	ro := sdk.Sandbox{Profile: sdk.SandboxReadOnly, Mechanism: sdk.MechanismBubblewrap}
	on := config.Settings{SandboxRecover: true}
	for _, tc := range []struct {
		name   string
		s      config.Settings
		sb     sdk.Sandbox
		phased bool
		want   string // "": accepted
	}{
		{"off", config.Settings{}, sdk.Sandbox{}, true, ""},
		{"workspace", on, ws, false, ""},
		{"no sandbox", on, sdk.Sandbox{}, false, "--sandbox-recover needs --sandbox workspace: it widens a sandbox after a denial, and no sandbox was asked"},
		{"read-only", on, ro, false, "--sandbox-recover needs --sandbox workspace: under read-only nothing is ever writable"},
		{"phased", on, ws, true, "--sandbox-recover is not available for a loop or team run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := SandboxRecoverSettings(tc.s, tc.sb, tc.phased, FlagName)
			if tc.want == "" {
				if err != nil || rc.On != tc.s.SandboxRecover {
					t.Fatalf("= %+v, %v; want accepted", rc, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	rc, _ := SandboxRecoverSettings(on, ws, false, spawnParam)
	inProcess := sdk.BackendInfo{Name: "claude", Capabilities: sdk.Supports(sdk.CapResume), ResumeScope: sdk.ResumeInProcess}
	err := rc.CheckBackend(inProcess)
	if !errors.Is(err, ErrNoResume) || !strings.HasPrefix(err.Error(), "sandbox_recover: ") || !strings.Contains(err.Error(), "backend claude continues a session only inside the plugin process") {
		t.Errorf("CheckBackend(in_process) = %v, want ErrNoResume naming the param and the backend", err)
	}
	cross := sdk.BackendInfo{Name: "codex-app-server", Capabilities: sdk.Supports(sdk.CapResume), ResumeScope: sdk.ResumeCrossProcess}
	if err := rc.CheckBackend(cross); err != nil {
		t.Errorf("CheckBackend(cross_process) = %v", err)
	}
}

// TestWidenedEvent: a write's event names the path and what became
// writable; a connection's the destination; and the note says what to
// retry.
func TestWidenedEvent(t *testing.T) {
	ev := WidenedEvent(sandbox.Widening{Op: sandbox.OpWrite, Path: "/srv/a/b.txt", AllowWrite: "/srv/a"})
	if ev["event"] != "avenor.sandbox.widened" || ev["path"] != "/srv/a/b.txt" || ev["allow_write"] != "/srv/a" || ev["destination"] != nil {
		t.Errorf("write: %v", ev)
	}
	ev = WidenedEvent(sandbox.Widening{Op: "connect", Destination: "example.com:443"})
	if ev["destination"] != "example.com:443" || ev["path"] != nil {
		t.Errorf("connect: %v", ev)
	}
	a, b := sandbox.Widening{Op: sandbox.OpWrite, AllowWrite: "/srv/a"}, sandbox.Widening{Op: sandbox.OpWrite, AllowWrite: "/srv/b"}
	c := sandbox.Widening{Op: sandbox.OpConnect, Destination: "example.com:443"}
	if n := widenedNote([]sandbox.Widening{a}); !strings.Contains(n, "/srv/a is now writable") || !strings.Contains(n, "Retry") {
		t.Errorf("note %q", n)
	}
	if n := widenedNote([]sandbox.Widening{a, b}); !strings.Contains(n, "/srv/a, /srv/b are now writable") {
		t.Errorf("note %q", n)
	}
	if n := widenedNote([]sandbox.Widening{c}); !strings.Contains(n, "connections to example.com:443 are now allowed") || strings.Contains(n, "writable") {
		t.Errorf("note %q", n)
	}
}
