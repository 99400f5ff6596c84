package control

import (
	"errors"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/permission"
)

// BrokerAnswerer routes answer_permission to the permission broker.
type BrokerAnswerer struct{ Broker *permission.Broker }

// Answer implements PermissionAnswerer.
func (a BrokerAnswerer) Answer(requestID, optionID, message string) error {
	return a.AnswerAs("", requestID, optionID, message)
}

// AnswerAs implements SourcedAnswerer.
func (a BrokerAnswerer) AnswerAs(source, requestID, optionID, message string) error {
	err := a.Broker.Answer(requestID, permission.Answer{OptionID: optionID, Message: message, Source: source})
	if errors.Is(err, permission.ErrNotPending) {
		return fmt.Errorf("%w: %v", ErrNoPendingPermission, err)
	}
	return err
}

// SourcedAnswerer is a PermissionAnswerer that also takes answer_permission's
// optional source hint (one of permission.AnswerSources): the front door a
// person answered on, which permission.response then names.
type SourcedAnswerer interface {
	AnswerAs(source, requestID, optionID, message string) error
}

// CheckAnswerSource refuses a source hint outside permission.AnswerSources
// with -32602; "" (no hint) passes.
func CheckAnswerSource(source string) error {
	if permission.ValidAnswerSource(source) {
		return nil
	}
	return InvalidParams(fmt.Sprintf("source %q is not one of %s; omit it (control) or name the front door",
		source, strings.Join(permission.AnswerSources, ", ")))
}

// Pending implements PermissionAnswerer.
func (a BrokerAnswerer) Pending() bool { return len(a.Broker.Pending()) > 0 }

// Resolver is the control plane's side of permission resolution: a request
// goes to the control plane while at least one client is connected, and
// falls through when every client has gone (docs/permission-handler.md#precedence). No client has
// reserved or released the claim in this protocol version, so the claim
// stays unknown.
type Resolver struct{ Server *Server }

// Claim implements permission.ControlResolver.
func (r Resolver) Claim() permission.Claim { return permission.ClaimUnknown }

// Connected implements permission.ControlResolver.
func (r Resolver) Connected() bool { return r.Server.Connected() }

// Disconnected implements permission.ControlResolver.
func (r Resolver) Disconnected() <-chan struct{} { return r.Server.Disconnected() }
