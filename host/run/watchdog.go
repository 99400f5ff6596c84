package run

import (
	"context"
	"fmt"

	"github.com/avenor-go/avenor/host/config"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The turn watchdog's settings (docs/unattended.md): --watchdog,
// --tool-timeout and --watchdog-restarts, the config keys of the same
// names, and a spawn's params.

// WatchdogRestartReason is the avenor.restarted reason of a watchdog's
// restart.
const WatchdogRestartReason = "watchdog"

// WatchdogSettings checks the watchdog's settings and returns the
// runner's Watchdog; name turns a setting's key into what the user wrote
// (FlagName for the command line, a spawn param's name for a spawn).
// Without a watchdog action the zero Watchdog is returned and
// --progress-timeout behaves as it always did.
func WatchdogSettings(s config.Settings, phased bool, name func(string) string) (hostrt.Watchdog, error) {
	if s.Watchdog == "" {
		if s.ToolTimeout > 0 {
			return hostrt.Watchdog{}, fmt.Errorf("%s needs %s warn, cancel or restart: it says what to do with a hung tool call", name("tool_timeout"), name("watchdog"))
		}
		return hostrt.Watchdog{}, nil
	}
	if !hostrt.ValidWatchdogAction(s.Watchdog) {
		return hostrt.Watchdog{}, fmt.Errorf("%s %q is not an action: use warn, cancel or restart", name("watchdog"), s.Watchdog)
	}
	if s.ToolTimeout < 0 || s.ProgressTimeout < 0 {
		return hostrt.Watchdog{}, fmt.Errorf("%s and %s must not be negative", name("tool_timeout"), name("progress_timeout"))
	}
	if s.ToolTimeout == 0 && s.ProgressTimeout == 0 {
		return hostrt.Watchdog{}, fmt.Errorf("%s %s has nothing to watch: set %s (a hung tool call) and/or %s (a turn with no event)", name("watchdog"), s.Watchdog, name("tool_timeout"), name("progress_timeout"))
	}
	if s.WatchdogRestarts < 0 || s.WatchdogRestarts > hostrt.MaxWatchdogRestarts {
		return hostrt.Watchdog{}, fmt.Errorf("%s %d is out of range: 0 to %d", name("watchdog_restarts"), s.WatchdogRestarts, hostrt.MaxWatchdogRestarts)
	}
	w := hostrt.Watchdog{Action: hostrt.WatchdogAction(s.Watchdog), ToolTimeout: s.ToolTimeout, Restarts: s.WatchdogRestarts}
	if w.Action == hostrt.WatchdogRestart {
		if phased {
			return hostrt.Watchdog{}, fmt.Errorf("%s restart is not available for a loop or team run (it restarts a single session); use cancel or warn", name("watchdog"))
		}
		w.CheckBackend = func(info sdk.BackendInfo) error {
			if err := CanResume(info); err != nil {
				return fmt.Errorf("%s restart: %w; use %s cancel, or a backend that resumes across processes", name("watchdog"), err, name("watchdog"))
			}
			return nil
		}
	}
	return w, nil
}

// spawnParam is a setting's name as a spawn's param: the key itself.
func spawnParam(key string) string { return key }

// armWatchdog gives a runner's restart watchdog the runtime's
// restart-with-resume and the run's count of watchdog restarts, which
// goes on across the fresh runners a restart makes.
func (rt *Runtime) armWatchdog(o *hostrt.Options) {
	if o.Watchdog.Action != hostrt.WatchdogRestart {
		return
	}
	limit := o.Watchdog.Restarts
	o.Watchdog.Restart = func(note string) error {
		return rt.Restart(context.Background(), RestartRequest{Note: note, Reason: WatchdogRestartReason})
	}
	o.Watchdog.TakeRestart = func() (int, bool) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.restart.watchdog >= limit {
			return rt.restart.watchdog, false
		}
		rt.restart.watchdog++
		return rt.restart.watchdog, true
	}
}
