// Package broken is a deliberately broken backend plugin, for the tests of
// the conformance kit and of `avenor plugin verify`: each of its backends
// advertises a capability and does not deliver it. It is the echo example
// with one thing taken away.
//
//   - broken-resume advertises resume (cross_process) but forgets every
//     session: it never uses its state directory, so resuming fails.
//   - broken-cancel advertises cancel but ignores Cancel: the turn runs on.
//
// Its binary is cmd/avenor-plugin-broken. Nothing outside tests uses it.
package broken

import (
	"context"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Version is the plugin's version.
const Version = "0.0.1-broken"

// Backend names.
const (
	ForgetsSessions = "broken-resume"
	IgnoresCancel   = "broken-cancel"
)

// Backends returns both broken backends.
func Backends() []runtime.Backend {
	return []runtime.Backend{forgetful{}, deaf{}}
}

// forgetful claims resume but keeps nothing.
type forgetful struct{}

func (forgetful) Info() runtime.BackendInfo {
	info := echo.New().Info()
	info.Name, info.Description = ForgetsSessions, "claims resume, forgets every session"
	return info
}

func (forgetful) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return echo.New().Check(ctx, req)
}

func (forgetful) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	req.StateDir = "" // the bug: nothing survives the session
	return echo.New().Open(ctx, req, host)
}

// deaf claims cancel but ignores it.
type deaf struct{}

func (deaf) Info() runtime.BackendInfo {
	info := echo.New().Info()
	info.Name, info.Description = IgnoresCancel, "claims cancel, ignores it"
	return info
}

func (deaf) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	return echo.New().Check(ctx, req)
}

func (deaf) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	s, err := echo.New().Open(ctx, req, host)
	if err != nil {
		return nil, err
	}
	return deafSession{s}, nil
}

type deafSession struct{ runtime.Session }

// Cancel is the bug: it does nothing.
func (deafSession) Cancel(context.Context) error { return nil }
