package runner

import (
	"context"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Permissions resolves a session's permission requests. Record announces the
// request (emitting permission.request through emit) before it returns, and
// the returned function waits for the decision. host/permission's broker
// implements it; a failure of the broker (not ctx) fails the attempt.
type Permissions interface {
	Record(ctx context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error)
}

// PermissionsFunc builds the Permissions of one attempt; nil uses
// BrokerPermissions of a broker with only Options.AutoApprove.
type PermissionsFunc func(sessionID string) Permissions

// BrokerPermissions gives each attempt its own session of b.
func BrokerPermissions(b *permission.Broker) PermissionsFunc {
	return func(sessionID string) Permissions { return b.Session(sessionID) }
}
