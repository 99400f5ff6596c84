package run

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Spec is one run for Start: a one-shot run, or a loop or team run. The
// caller has validated it (flags, prompt, dir) and resolved its backends.
type Spec struct {
	// Options are the run's options. A one-shot run runs them as they are;
	// a loop or team run takes Dir, RunID, Label, Timeout, Prompt (the
	// initial prompt), SentinelPath and the phases' common options from
	// them. Events is the NDJSON log (nil: none), written through one
	// batched writer either way.
	Options hostrt.Options
	// Permissions configures the run's permission broker; New sets its
	// CancelRun and SessionID.
	Permissions permission.Options
	// Phased, when set, makes this a loop or team run.
	Phased *Phased
	// RuntimeID is the runtime's id as the control plane names it (a
	// stable runtime's rt_N, stamped on its events); "" for the run of
	// `avenor run`.
	RuntimeID string
	// EventLog, when set, is the path of the runtime's own NDJSON event
	// log, a stable runtime's: its runs share its one writer, and the file
	// is closed while the runtime is parked. Options.Events is then unused.
	EventLog string
	// ControlSocket, when set, serves the one-shot control methods there
	// (docs/control-protocol.md); the broker answers through it.
	ControlSocket string
	// HTTPDebug, when set, starts the HTTP debug adapter for cfg (the
	// caller adds the address, the token and the terminal); Start ends the
	// run's streams and stops it after the run.
	HTTPDebug func(cfg httpdebug.Config) (*httpdebug.Server, error)
	// Attach, when set, is given the run's event writer before the run
	// starts (the live view).
	Attach func(*event.Writer)
}

// Result is how a run ended.
type Result struct {
	ExitCode   int
	StopReason sdk.StopReason
	SessionID  string
	// SentinelErr is why the sentinel could not be written, already told
	// on stderr; nil when it was written or none was asked for.
	SentinelErr error
}

// SetupError is a run that could not start (its control socket or HTTP
// debug adapter did not): nothing ran, no sentinel was written.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// HTTPDebugDrain bounds how long an ending run (or supervisor) waits for
// its HTTP debug event streams to deliver its last events.
const HTTPDebugDrain = 2 * time.Second

// Start assembles the run's Runtime (New), serves it — a supervisor of one
// — on the control socket and the HTTP debug adapter, runs it to its end
// and returns how it ended. ctx cancelled with hostrt.ErrInterrupted as
// its cause ends the run as cancelled. The one-shot and the phased run are
// one Runtime so that they cannot drift apart again.
func Start(ctx context.Context, spec Spec) (Result, error) {
	opts := spec.Options
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	rt, err := New(spec, Deps{})
	if err != nil {
		return Result{}, &SetupError{err}
	}
	defer rt.Close()
	// One control method table serves the socket and the HTTP adapter.
	if spec.HTTPDebug != nil {
		dbgTarget := httpdebug.NewTableTarget(rt, rt.Pending)
		dbg, err := spec.HTTPDebug(httpdebug.Config{Run: dbgTarget, RunID: opts.RunID})
		if err != nil {
			return Result{}, &SetupError{err}
		}
		defer func() {
			// The streams deliver the run's last events, then stop.
			dbgTarget.End()
			ctx, cancel := context.WithTimeout(context.Background(), HTTPDebugDrain)
			defer cancel()
			_ = dbg.Shutdown(ctx)
		}()
	}
	if spec.ControlSocket != "" {
		srv, err := StartControl(spec.ControlSocket, rt, opts.RunID, nil, logger)
		if err != nil {
			return Result{}, &SetupError{err}
		}
		defer srv.Close()
		rt.SetControl(control.Resolver{Server: srv})
	}
	if spec.Attach != nil {
		spec.Attach(rt.Events())
	}
	rt.Start(ctx)
	return rt.Wait(), nil
}

// StartControl starts the control server of `avenor run --control-socket`
// (a phased run's too) on path: a supervisor of one serving t's method
// table, runID naming it. It takes AVENOR_CONTROL_IDENTITY_TOKEN and
// AVENOR_CONTROL_READY_FD out of the environment (docs/configuration.md#other-environment-variables).
// onConns, when set, learns the number of connected control clients.
func StartControl(path string, t control.Target, runID string, onConns func(int), logger hclog.Logger) (*control.Server, error) {
	token, ready, err := control.TakeEnv()
	if err != nil {
		logger.Warn("control socket readiness", "error", err)
	}
	srv := control.NewServer(control.Config{
		Path: path, Logger: logger.Named("control"), IdentityToken: token, Ready: ready, OnConnections: onConns,
	})
	control.RegisterOne(srv, t, runID)
	if err := srv.Start(); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}
