package control

import (
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/host/permission"
)

// BrokerAnswerer routes answer_permission to the permission broker.
type BrokerAnswerer struct{ Broker *permission.Broker }

// Answer implements PermissionAnswerer.
func (a BrokerAnswerer) Answer(requestID, optionID, message string) error {
	err := a.Broker.Answer(requestID, permission.Answer{OptionID: optionID, Message: message})
	if errors.Is(err, permission.ErrNotPending) {
		return fmt.Errorf("%w: %v", ErrNoPendingPermission, err)
	}
	return err
}

// Pending implements PermissionAnswerer.
func (a BrokerAnswerer) Pending() bool { return len(a.Broker.Pending()) > 0 }

// Resolver is the control plane's side of permission resolution: a request
// goes to the control plane while at least one client is connected, and
// falls through when every client has gone (contract §4.2). No client has
// reserved or released the claim in this protocol version, so the claim
// stays unknown.
type Resolver struct{ Server *Server }

// Claim implements permission.ControlResolver.
func (r Resolver) Claim() permission.Claim { return permission.ClaimUnknown }

// Connected implements permission.ControlResolver.
func (r Resolver) Connected() bool { return r.Server.Connected() }

// Disconnected implements permission.ControlResolver.
func (r Resolver) Disconnected() <-chan struct{} { return r.Server.Disconnected() }
