package stable

import (
	"fmt"
	"slices"

	hostrun "github.com/avenor-go/avenor/host/run"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// asksLaunch reports whether the spawn's runtime runs under a permission
// mode, a launch context or a sandbox (the params' or the config's): a
// warm runtime, opened without them, cannot serve it.
func asksLaunch(b hostrun.SpawnBackend) bool {
	return b.Asked.Mode != "" || !b.Asked.Context.IsZero() || b.Sandbox.Active()
}

// checkResumeLaunch refuses a spawn resuming sessionID under a permission
// mode or launch context other than the one the parked runtime holding
// that session in its live plugin runs under: the session would go on in
// that plugin's process, started with the old ones, and no backend changes
// them inside a running process. (Resumed in a fresh process — avenor
// run --resume, a parked runtime without a live plugin — every backend
// that declares a mode applies the new one, as at a new session.)
func (s *Supervisor) checkResumeLaunch(sessionID string, b hostrun.SpawnBackend) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.runtimes {
		f := rt.run.Facts()
		if f.SessionID != sessionID || f.HandedTo != "" || f.State != hostrun.Parked || !f.HeldAlive {
			continue
		}
		o := rt.run.Spec().Options
		if !hostrun.SameSandbox(o.Sandbox, b.Sandbox) {
			return fmt.Errorf("session %s is held by parked runtime %s, whose plugin launched its runtime inside another sandbox; a live session cannot change it: spawn with the same sandbox params, or resume the session once runtime %s has ended", sessionID, rt.id, rt.id)
		}
		if o.PermissionMode == b.Asked.Mode && sameContext(o.LaunchContext, b.Asked.Context) {
			return nil
		}
		was := string(o.PermissionMode)
		if was == "" {
			was = "none"
		}
		return fmt.Errorf("session %s is held by parked runtime %s, whose plugin was started under permission mode %s and its launch context; a live session cannot change them: spawn with the same permission_mode and launch params, or resume the session once runtime %s has ended", sessionID, rt.id, was, rt.id)
	}
	return nil
}

// sameContext reports whether a and b ask for the same launch context.
func sameContext(a, b sdk.LaunchContext) bool {
	if a.AppendSystemPrompt != b.AppendSystemPrompt || (a.AllowedTools == nil) != (b.AllowedTools == nil) ||
		!slices.Equal(a.AllowedTools, b.AllowedTools) || len(a.MCPServers) != len(b.MCPServers) {
		return false
	}
	for i := range a.MCPServers {
		if a.MCPServers[i].Name != b.MCPServers[i].Name {
			return false
		}
	}
	return true
}
