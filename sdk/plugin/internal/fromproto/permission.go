package fromproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// PermissionRequest reads a request for a decision; its fields must be a
// JSON object. On error the request still carries its ID, so that it can
// be answered.
func PermissionRequest(r *pb.PermissionRequest) (runtime.PermissionRequest, error) {
	fields, err := Object(r.GetJson())
	if err != nil {
		return runtime.PermissionRequest{ID: r.GetRequestId()}, fmt.Errorf("permission request %q: %w", r.GetRequestId(), err)
	}
	opts := make([]runtime.PermissionOption, len(r.GetOptions()))
	for i, o := range r.GetOptions() {
		opts[i] = runtime.PermissionOption{ID: o.GetOptionId(), Kind: o.GetKind(), Name: o.GetName(), RequiresMessage: o.GetRequiresMessage()}
	}
	return runtime.PermissionRequest{
		ID: r.GetRequestId(), Options: opts, Tool: r.GetTool(), Question: r.GetQuestion(),
		RequiresUserInput: r.GetRequiresUserInput(), Fields: fields,
	}, nil
}

// PermissionDecision reads the host's answer to a permission request.
func PermissionDecision(d *pb.PermissionDecision) runtime.PermissionDecision {
	return runtime.PermissionDecision{Outcome: d.GetOutcome(), OptionID: d.GetOptionId(), Message: d.GetMessage(), Kind: d.GetKind()}
}
