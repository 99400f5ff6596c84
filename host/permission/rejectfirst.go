package permission

import (
	"context"
	"strings"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// RejectFirst is `avenor probe`'s policy: every permission request is
// answered at once with the first option whose kind starts with "reject",
// else the first option, else cancelled when none is offered (contract
// docs/cli.md#avenor-probe); the request and the answer are recorded as a run records them. It
// is a runner's Permissions (host/runner).
type RejectFirst struct{}

// Record emits the request and the answer and returns the decision.
func (RejectFirst) Record(_ context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	emit(RequestEvent(req, ResolverAutomatic))
	if len(req.Options) == 0 {
		d := sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}
		return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
	}
	opt := req.Options[0]
	for _, o := range req.Options {
		if strings.HasPrefix(strings.ToLower(o.Kind), "reject") {
			opt = o
			break
		}
	}
	emit(ResponseEvent(req.ID, opt.ID, opt.Kind, SourceAvenor))
	d := sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: opt.ID, Kind: sdk.DecisionKind(opt.Kind)}
	return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
}
