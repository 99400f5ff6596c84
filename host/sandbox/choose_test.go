package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestChoose: bubblewrap where usable, else Landlock where the kernel
// has it and it can express the profile, else refused naming both; the
// switches force one or disable Landlock; nothing falls back from a
// forced mechanism.
func TestChoose(t *testing.T) {
	okBwrap := func(string) (string, error) { return "/bin/true", nil }
	noBwrap := func(string) (string, error) { return "", exec.ErrNotFound }
	ws := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Writable: []string{"/w"}, DenyRead: []string{"/h/.ssh"}}
	none := ws
	none.Network = sdk.SandboxNetworkNone
	overlap := ws
	overlap.DenyRead = []string{"/w/.env"}
	ports, hosts, model := ws, ws, ws
	ports.Network, hosts.Network, model.Network = "allow=:8080", "allow=api.example.com:443", sdk.SandboxNetworkModel
	for _, tc := range []struct {
		name     string
		sb       sdk.Sandbox
		lookPath func(string) (string, error)
		abi      int
		env      map[string]string
		want     string
		err      string
	}{
		{name: "bubblewrap first", sb: ws, lookPath: okBwrap, abi: 7, want: sdk.MechanismBubblewrap},
		{name: "no bwrap: landlock", sb: ws, lookPath: noBwrap, abi: 7, want: sdk.MechanismLandlock},
		{name: "landlock forced", sb: ws, lookPath: okBwrap, abi: 1, env: map[string]string{MechanismEnv: "landlock"}, want: sdk.MechanismLandlock},
		{name: "bwrap forced", sb: ws, lookPath: okBwrap, abi: 7, env: map[string]string{MechanismEnv: "bwrap"}, want: sdk.MechanismBubblewrap},
		{name: "bwrap forced, absent: no fallback", sb: ws, lookPath: noBwrap, abi: 7, env: map[string]string{MechanismEnv: "bubblewrap"},
			err: "bubblewrap (bwrap not found in PATH); install bubblewrap (apt-get install bubblewrap); nothing was started"},
		{name: "neither", sb: ws, lookPath: noBwrap, abi: 0,
			err: "bubblewrap (bwrap not found in PATH), landlock (this kernel does not enforce Landlock); install bubblewrap (apt-get install bubblewrap) or run on a kernel with Landlock"},
		{name: "landlock disabled by the switch", sb: ws, lookPath: noBwrap, abi: 7, env: map[string]string{DisableLandlockEnv: "1"},
			err: "landlock (disabled by AVENOR_SANDBOX_DISABLE_LANDLOCK=1)"},
		{name: "network none is not landlock's", sb: none, lookPath: noBwrap, abi: 7, err: "landlock cannot take the network away"},
		{name: "network none under bwrap", sb: none, lookPath: okBwrap, abi: 7, want: sdk.MechanismBubblewrap},
		{name: "a deny path inside --dir is not landlock's", sb: overlap, lookPath: noBwrap, abi: 7, err: "landlock cannot hide /w/.env inside the writable /w"},
		{name: "an unknown forced mechanism", sb: ws, lookPath: okBwrap, abi: 7, env: map[string]string{MechanismEnv: "seccomp"}, err: `AVENOR_SANDBOX_MECHANISM="seccomp": valid: bubblewrap, landlock`},
		{name: "a port allow-list under landlock", sb: ports, lookPath: noBwrap, abi: 4, want: sdk.MechanismLandlock},
		{name: "a port allow-list needs landlock ABI 4", sb: ports, lookPath: noBwrap, abi: 3, err: "needs Landlock ABI 4"},
		{name: "a host allow-list is not landlock's", sb: hosts, lookPath: noBwrap, abi: 7, err: "landlock can allow TCP ports only"},
		{name: "model is not landlock's", sb: model, lookPath: noBwrap, abi: 7, err: "landlock cannot tell hosts apart"},
		{name: "a host allow-list under bwrap", sb: hosts, lookPath: okBwrap, abi: 7, want: sdk.MechanismBubblewrap},
		{name: "off needs nothing", sb: sdk.Sandbox{}, lookPath: noBwrap, abi: 0, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Machine{LookPath: tc.lookPath, Getenv: func(k string) string { return tc.env[k] }, LandlockABI: func() int { return tc.abi }}
			got, err := Choose(context.Background(), tc.sb, m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				var missing *MissingError
				if strings.Contains(tc.err, "(") && !errors.As(err, &missing) {
					t.Errorf("err %T is not a *MissingError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Mechanism != tc.want {
				t.Errorf("mechanism %q, want %q", got.Mechanism, tc.want)
			}
		})
	}
}

func TestMechanisms(t *testing.T) {
	m := Machine{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }, LandlockABI: func() int { return 7 }}
	got := Mechanisms(context.Background(), m)
	if len(got) != 2 || got[0].Usable || got[0].Detail != "bwrap not found in PATH" || !got[1].Usable || got[1].Detail != "ABI 7" {
		t.Errorf("got %+v", got)
	}
	m.Getenv = func(k string) string {
		if k == DisableLandlockEnv {
			return "1"
		}
		return ""
	}
	if got := Mechanisms(context.Background(), m); got[1].Usable {
		t.Errorf("landlock usable although disabled: %+v", got)
	}
}
