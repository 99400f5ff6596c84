package runner

import (
	"fmt"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// startNetProxy starts the filtering proxy a runtime launched inside sb
// reaches the network through (docs/sandbox.md#network), and is sb with
// its socket: only under bubblewrap with --sandbox-network model or
// allow=… (Landlock enforces its port allow-list itself; host and none
// need no proxy). The proxy lives as long as the session's runtime:
// stopNetProxy ends it with the plugin.
func (h *sessionHost) startNetProxy(sb sdk.Sandbox) (sdk.Sandbox, error) {
	if !sb.Active() || sb.Mechanism != sdk.MechanismBubblewrap {
		return sb, nil
	}
	profile, err := sdk.ParseNetProfile(sb.Network)
	if err != nil || !profile.Filtered() {
		return sb, err
	}
	// Under model the endpoints come from the plugin once it opened the
	// session (setModelEndpoints); the proxy holds connections till then.
	p, err := sandbox.StartProxy(sandbox.ProxyConfig{Allow: profile.Allow, OnDeny: h.connectDenied,
		Pending: profile.Kind == sdk.SandboxNetworkModel})
	if err != nil {
		return sb, fmt.Errorf("--sandbox-network %s: %w", sb.Network, err)
	}
	h.mu.Lock()
	old := h.proxy
	h.proxy = p
	h.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	sb.ProxySocket = p.Socket()
	return sb, nil
}

// setModelEndpoints gives a --sandbox-network model proxy the endpoints
// the plugin reported for sess (sdk.ModelEndpointReporter). None is an
// error naming the way out: the runtime could reach nothing, its model
// included. Without a model proxy it does nothing.
func (h *sessionHost) setModelEndpoints(backend string, sb sdk.Sandbox, sess sdk.Session) error {
	h.mu.Lock()
	p := h.proxy
	h.mu.Unlock()
	if p == nil || sb.Network != sdk.SandboxNetworkModel {
		return nil
	}
	var eps []sdk.NetDest
	if r, ok := sess.(sdk.ModelEndpointReporter); ok {
		eps = r.ModelEndpoints()
	}
	p.SetAllow(eps)
	if len(eps) == 0 {
		return fmt.Errorf("backend %s reported no model endpoint for --sandbox-network model (its runtime's configuration names no base URL it can read), so its runtime could reach nothing; name the endpoint with --sandbox-network allow=host:port", backend)
	}
	return nil
}

// stopNetProxy stops the session's proxy, if it has one; idempotent.
func (h *sessionHost) stopNetProxy() {
	h.mu.Lock()
	p := h.proxy
	h.proxy = nil
	h.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
}

// connectDenied writes the avenor.sandbox.denied event of a connection
// the proxy refused, once per destination and attempt.
func (h *sessionHost) connectDenied(destination string) {
	h.emitDenied(h.deniedOf().connect(destination))
}

// connect is the event of a refused connection to destination, nil when
// it was reported already or the bound is reached.
func (d *denials) connect(destination string) []event.Event {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := [3]string{"", sandbox.OpConnect, destination}
	if d.seen[key] || len(d.seen) >= MaxDenialEvents {
		return nil
	}
	d.seen[key] = true
	return []event.Event{{"event": string(event.TypeSandboxDenied), "op": sandbox.OpConnect, "destination": destination}}
}
