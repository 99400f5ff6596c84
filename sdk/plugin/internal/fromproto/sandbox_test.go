package fromproto_test

import (
	"reflect"
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The sandbox crosses the wire as it was given; none (off) sends no
// sandbox message, so an older plugin sees the Open it always did.
func TestOpenSandboxRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		sb   runtime.Sandbox
		sent bool
	}{
		{"none", runtime.Sandbox{}, false},
		{"off", runtime.Sandbox{Profile: runtime.SandboxOff}, false},
		{"workspace", runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap,
			Writable: []string{"/w", "/x"}, DenyRead: []string{"/h/.ssh"}, Network: runtime.SandboxNetworkNone}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, err := toproto.Open(runtime.OpenRequest{Backend: "b", Sandbox: tc.sb})
			if err != nil {
				t.Fatal(err)
			}
			if (open.GetSandbox() != nil) != tc.sent {
				t.Fatalf("sandbox message present = %v, want %v", open.GetSandbox() != nil, tc.sent)
			}
			got, err := fromproto.Open(open)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.sb
			if !tc.sent {
				want = runtime.Sandbox{}
			}
			if !reflect.DeepEqual(got.Sandbox, want) {
				t.Fatalf("got %+v, want %+v", got.Sandbox, want)
			}
		})
	}
}
