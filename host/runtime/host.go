package runtime

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// sessionHost is the runtime.Host one attempt's session calls back into: it
// stamps and writes plugin events, tracks activity for the progress
// watchdog, synthesises final output, and hands permission requests to the
// broker in stream order.
type sessionHost struct {
	write       func(event.Event) event.Event // the runner's stamped write
	logger      hclog.Logger
	permissions Permissions
	final       *event.FinalOutput

	// activity gets a non-blocking tick for every event (progress watchdog).
	activity chan struct{}
	// fatal carries a broker failure that must end the attempt.
	fatal chan error

	mu        sync.Mutex
	proc      sdk.ProcessInfo
	onProcess func(sdk.ProcessInfo) // the status snapshot's pid
}

func newSessionHost(write func(event.Event) event.Event, logger hclog.Logger, p Permissions) *sessionHost {
	return &sessionHost{
		write: write, logger: logger, permissions: p, final: &event.FinalOutput{},
		activity: make(chan struct{}, 1), fatal: make(chan error, 1),
	}
}

// emit writes a host or plugin event.
func (h *sessionHost) emit(ev event.Event) {
	stamped := h.write(ev)
	h.final.Observe(stamped)
	select {
	case h.activity <- struct{}{}:
	default:
	}
}

// Emit implements sdk.Host for plugin events.
func (h *sessionHost) Emit(ev sdk.Event) {
	out := make(event.Event, len(ev.Fields)+1)
	for k, v := range ev.Fields {
		out[k] = v
	}
	out["event"] = ev.Type
	h.emit(out)
}

// AskPermission implements sdk.Host; the plugin client prefers RecordPermission.
func (h *sessionHost) AskPermission(ctx context.Context, req sdk.PermissionRequest) (sdk.PermissionDecision, error) {
	return h.RecordPermission(ctx, req)(ctx)
}

// RecordPermission implements sdk.PermissionRecorder.
func (h *sessionHost) RecordPermission(ctx context.Context, req sdk.PermissionRequest) func(context.Context) (sdk.PermissionDecision, error) {
	wait := h.permissions.Record(ctx, req, h.emit)
	return func(ctx context.Context) (sdk.PermissionDecision, error) {
		d, err := wait(ctx)
		if err != nil && ctx.Err() == nil {
			// The broker failed (file handler timeout, bad response…): the
			// attempt fails; nothing is ever allowed by default.
			select {
			case h.fatal <- err:
			default:
			}
		}
		return d, err
	}
}

// RecordProcess implements sdk.ProcessRecorder.
func (h *sessionHost) RecordProcess(p sdk.ProcessInfo) {
	h.mu.Lock()
	h.proc = p
	onProcess := h.onProcess
	h.mu.Unlock()
	if onProcess != nil {
		onProcess(p)
	}
}

func (h *sessionHost) process() sdk.ProcessInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc
}

// Logger implements sdk.Host.
func (h *sessionHost) Logger() hclog.Logger { return h.logger }
