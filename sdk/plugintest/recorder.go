package plugintest

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// entry is one thing the session did, in the order the host saw it.
type entry struct {
	event *runtime.Event
	perm  *runtime.PermissionRequest
}

// answerFunc decides a permission request; false means never answer (the
// wait ends only when the turn does).
type answerFunc func(runtime.PermissionRequest) (runtime.PermissionDecision, bool)

// recorder is the kit's runtime.Host: it records events and permission
// requests in stream order and answers requests with its policy.
type recorder struct {
	logger hclog.Logger

	mu      sync.Mutex
	entries []entry
	changed chan struct{} // closed and replaced on every append
	answer  answerFunc
}

var (
	_ runtime.Host               = (*recorder)(nil)
	_ runtime.PermissionRecorder = (*recorder)(nil)
)

func newRecorder(logger hclog.Logger, answer answerFunc) *recorder {
	if answer == nil {
		answer = never
	}
	return &recorder{logger: logger, changed: make(chan struct{}), answer: answer}
}

func never(runtime.PermissionRequest) (runtime.PermissionDecision, bool) {
	return runtime.PermissionDecision{}, false
}

func (r *recorder) add(e entry) {
	r.mu.Lock()
	r.entries = append(r.entries, e)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *recorder) Emit(ev runtime.Event) { r.add(entry{event: &ev}) }

func (r *recorder) Logger() hclog.Logger { return r.logger }

func (r *recorder) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return r.RecordPermission(ctx, req)(ctx)
}

// RecordPermission records the request in stream order, as the avenor host
// does, and returns the wait for its decision.
func (r *recorder) RecordPermission(_ context.Context, req runtime.PermissionRequest) func(context.Context) (runtime.PermissionDecision, error) {
	r.add(entry{perm: &req})
	r.mu.Lock()
	answer := r.answer
	r.mu.Unlock()
	return func(ctx context.Context) (runtime.PermissionDecision, error) {
		if d, ok := answer(req); ok {
			return d, nil
		}
		<-ctx.Done()
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, ctx.Err()
	}
}

// snapshot returns what was recorded so far.
func (r *recorder) snapshot() []entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]entry(nil), r.entries...)
}

func (r *recorder) events() []runtime.Event {
	var out []runtime.Event
	for _, e := range r.snapshot() {
		if e.event != nil {
			out = append(out, *e.event)
		}
	}
	return out
}

func (r *recorder) permissions() []runtime.PermissionRequest {
	var out []runtime.PermissionRequest
	for _, e := range r.snapshot() {
		if e.perm != nil {
			out = append(out, *e.perm)
		}
	}
	return out
}

// waitInTurn waits until cond holds for the recorded entries; false when
// ctx ends first, or the turn t ends with cond still false.
func (r *recorder) waitInTurn(ctx context.Context, t *turnRun, cond func([]entry) bool) bool {
	for {
		r.mu.Lock()
		ok := cond(r.entries)
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.done:
			r.mu.Lock()
			defer r.mu.Unlock()
			return cond(r.entries) // what the turn recorded before it ended counts
		case <-ctx.Done():
			return false
		}
	}
}
