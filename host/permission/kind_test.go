package permission_test

import (
	"context"
	"testing"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Kind normalisation lives in sdk/runtime (NormalizeKind, DecisionKind);
// the broker uses nothing else. This pins the contract's table (docs/permission-handler.md#the-file-handler) and
// what the broker makes of each kind.
func TestKindNormalisation(t *testing.T) {
	for _, tc := range []struct {
		kind, norm, decision string
	}{
		{"allow", "allow", sdk.KindAllowOnce},
		{"allow_once", "allow", sdk.KindAllowOnce},
		{"allow_always", "allow", sdk.KindAllowAlways},
		{"ALLOW_ALWAYS", "allow", sdk.KindAllowAlways},
		{"Allow_Once", "allow", sdk.KindAllowOnce},
		{"reject", "reject", sdk.KindReject},
		{"reject_once", "reject", sdk.KindReject},
		{"reject_always", "reject", sdk.KindReject},
		{"deny", "reject", sdk.KindReject},
		{"deny_once", "reject", sdk.KindReject},
		{"DENY_ALWAYS", "reject", sdk.KindReject},
		{"", "unknown", ""},
		{"ask", "unknown", ""},
		{"allowed", "unknown", ""},
		{"allow-once", "unknown", ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if got := sdk.NormalizeKind(tc.kind); got != tc.norm {
				t.Errorf("NormalizeKind(%q) = %q, want %q", tc.kind, got, tc.norm)
			}
			if got := sdk.DecisionKind(tc.kind); got != tc.decision {
				t.Errorf("DecisionKind(%q) = %q, want %q", tc.kind, got, tc.decision)
			}
			if got := permission.ResponseEvent("1", "o", tc.kind, "file")["kind"]; got != tc.norm {
				t.Errorf("permission.response kind for %q = %v, want %q", tc.kind, got, tc.norm)
			}

			// Auto-approve picks an option only when its kind is allow-like.
			b := permission.New(permission.Options{AutoApprove: true})
			req := sdk.PermissionRequest{ID: "1", Options: []sdk.PermissionOption{{ID: "o", Kind: tc.kind}}}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			d, err := b.Session("s").Record(ctx, req, func(event.Event) {})(ctx)
			if tc.norm == "allow" {
				if err != nil || !d.Allowed() || d.Kind != tc.decision {
					t.Errorf("auto-approve of kind %q = %+v, %v; want allowed %s", tc.kind, d, err, tc.decision)
				}
			} else if err == nil || d.Allowed() {
				t.Errorf("auto-approve of kind %q = %+v, %v; want it left waiting", tc.kind, d, err)
			}
		})
	}
}
