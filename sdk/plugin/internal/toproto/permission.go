package toproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// PermissionRequest asks the host for a decision; its fields cross as JSON.
func PermissionRequest(r runtime.PermissionRequest) (*pb.PermissionRequest, error) {
	raw, err := Object(r.Fields)
	if err != nil {
		return nil, fmt.Errorf("permission request %q: %w", r.ID, err)
	}
	opts := make([]*pb.PermissionOption, len(r.Options))
	for i, o := range r.Options {
		opts[i] = &pb.PermissionOption{OptionId: o.ID, Kind: o.Kind, Name: o.Name, RequiresMessage: o.RequiresMessage}
	}
	return &pb.PermissionRequest{
		RequestId: r.ID, Options: opts, Tool: r.Tool, Question: r.Question,
		RequiresUserInput: r.RequiresUserInput, Json: raw,
	}, nil
}

// PermissionDecision answers request id.
func PermissionDecision(id string, d runtime.PermissionDecision) *pb.PermissionDecision {
	return &pb.PermissionDecision{RequestId: id, Outcome: d.Outcome, OptionId: d.OptionID, Message: d.Message, Kind: d.Kind}
}
