package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/event"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Recovery with approval (docs/sandbox.md#recovery): the setting
// sandbox_recover (--sandbox-recover, the config key, a spawn's param),
// refused up front where it cannot work, and the runtime's side of it: the
// run's count of requests across its restarts, and the restart with the
// boundary widened by what was approved.

// SandboxRestartReason is the avenor.restarted reason of a restart that
// widened the sandbox.
const SandboxRestartReason = "sandbox_widened"

// SandboxRecoverSettings checks sandbox_recover against the run's
// boundary sb and returns the runner's SandboxRecovery; name turns a
// setting's key into what the user wrote. It is refused without a
// sandbox, under read-only (which makes nothing writable), and for a loop
// or team run (whose phases are runs of their own); the backend is
// checked when its plugin describes itself (CheckBackend). Without the
// setting the zero SandboxRecovery is returned.
func SandboxRecoverSettings(s config.Settings, sb sdk.Sandbox, phased bool, name func(string) string) (hostrt.SandboxRecovery, error) {
	if !s.SandboxRecover {
		return hostrt.SandboxRecovery{}, nil
	}
	switch {
	case !sb.Active():
		return hostrt.SandboxRecovery{}, fmt.Errorf("%s needs %s workspace: it widens a sandbox after a denial, and no sandbox was asked", name("sandbox_recover"), name("sandbox"))
	case sb.Profile != sdk.SandboxWorkspace:
		return hostrt.SandboxRecovery{}, fmt.Errorf("%s needs %s workspace: under %s nothing is ever writable; drop one of them", name("sandbox_recover"), name("sandbox"), sb.Profile)
	case phased:
		return hostrt.SandboxRecovery{}, fmt.Errorf("%s is not available for a loop or team run (it resumes a single session); run the prompt on its own", name("sandbox_recover"))
	}
	return hostrt.SandboxRecovery{On: true, CheckBackend: func(info sdk.BackendInfo) error {
		return checkRecoverBackend(info, name)
	}}, nil
}

// checkRecoverBackend refuses sandbox_recover on a backend that cannot
// resume its session in a fresh plugin process: the widened boundary
// takes a fresh process, and the session would be lost.
func checkRecoverBackend(info sdk.BackendInfo, name func(string) string) error {
	if err := CanResume(info); err != nil {
		return fmt.Errorf("%s: %w; a widened sandbox needs a fresh process that resumes the session: drop it, or use a backend that resumes across processes", name("sandbox_recover"), err)
	}
	return nil
}

// checkSpawnRecover refuses, before anything of the spawn runs,
// sandbox_recover where it cannot work: its plugin is started to describe
// itself and stopped again, only when it was asked.
func (sp Spawned) checkSpawnRecover(ctx context.Context) error {
	if !sp.Backend.Settings.SandboxRecover {
		return nil
	}
	if _, err := SandboxRecoverSettings(sp.Backend.Settings, sp.Backend.Sandbox, sp.Phased != nil, spawnParam); err != nil {
		return fmt.Errorf("%w; nothing was started", err)
	}
	info, err := describe(ctx, sp.Backend.Backend)
	if err != nil {
		return err
	}
	if err := checkRecoverBackend(info, spawnParam); err != nil {
		return fmt.Errorf("%w; nothing was started", err)
	}
	return nil
}

// recoverBook is a runtime's sandbox requests across its restarts: the
// widenings asked about, at most hostrt.MaxSandboxRecoveries.
type recoverBook struct {
	asked map[string]bool
}

// armRecover gives a runner's recovery the runtime's count of requests and
// its restart with the boundary widened.
func (rt *Runtime) armRecover(o *hostrt.Options) {
	if !o.SandboxRecover.On {
		return
	}
	o.SandboxRecover.Take = func(key string) bool {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.recovered.asked == nil {
			rt.recovered.asked = map[string]bool{}
		}
		if rt.recovered.asked[key] || len(rt.recovered.asked) >= hostrt.MaxSandboxRecoveries {
			return false
		}
		rt.recovered.asked[key] = true
		return true
	}
	o.SandboxRecover.Widen = rt.widen
}

// widen restarts the runtime's run with its boundary widened by ws, each
// approved, and nothing else: an avenor.sandbox.widened for each precedes
// the avenor.restarted, and the fresh turn's prompt tells the agent what
// it may retry.
func (rt *Runtime) widen(ws []sandbox.Widening) error {
	spec := rt.Spec()
	sb := spec.Options.Sandbox
	var evs []event.Event
	var allowed []sandbox.Widening
	for _, w := range ws {
		var err error
		if sb, err = sandbox.Widen(sb, w); err != nil {
			return err
		}
		evs = append(evs, WidenedEvent(w))
		allowed = append(allowed, w)
	}
	if len(evs) == 0 {
		return errors.New("nothing was approved")
	}
	spec.Options.Sandbox = sb
	return rt.Restart(context.Background(), RestartRequest{Spec: &spec, Note: widenedNote(allowed), Reason: SandboxRestartReason, Events: evs})
}

// widenedNote is the fresh turn's prompt after a widening: what is now
// writable or reachable, and to retry.
func widenedNote(ws []sandbox.Widening) string {
	var paths, dests []string
	for _, w := range ws {
		if w.Destination != "" {
			dests = append(dests, w.Destination)
		} else {
			paths = append(paths, w.AllowWrite)
		}
	}
	var parts []string
	if len(paths) > 0 {
		verb := "is"
		if len(paths) > 1 {
			verb = "are"
		}
		parts = append(parts, fmt.Sprintf("%s %s now writable", strings.Join(paths, ", "), verb))
	}
	if len(dests) > 0 {
		parts = append(parts, "connections to "+strings.Join(dests, ", ")+" are now allowed")
	}
	return fmt.Sprintf("A person approved widening your sandbox: %s. Retry what was denied, then go on with your task.", strings.Join(parts, "; "))
}

// WidenedEvent is the avenor.sandbox.widened of w (docs/events.md): op and
// path with allow_write, or op and destination; the session_id is stamped
// when it is written.
func WidenedEvent(w sandbox.Widening) event.Event {
	ev := event.Event{"event": string(event.TypeSandboxWidened), "op": w.Op}
	if w.Destination != "" {
		ev["destination"] = w.Destination
	} else {
		ev["path"], ev["allow_write"] = w.Path, w.AllowWrite
	}
	return ev
}
