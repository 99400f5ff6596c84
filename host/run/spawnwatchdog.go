package run

import (
	"fmt"

	"github.com/avenor-go/avenor/host/control"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// validateWatchdog checks the watchdog's params that need no backend: a
// duration that does not parse, an unknown action, restarts out of range
// are -32602. Combinations (a tool_timeout without a watchdog) are
// refused when the spawn resolves, as avenor run refuses its flags.
func (p *SpawnParams) validateWatchdog() error {
	for _, d := range []struct {
		name string
		raw  []byte
	}{{"progress_timeout", p.ProgressTimeout}, {"tool_timeout", p.ToolTimeout}} {
		if _, err := ParseTimeout(d.raw); err != nil {
			return control.InvalidParams(fmt.Sprintf("%s: %v", d.name, err))
		}
	}
	if p.Watchdog != "" && !hostrt.ValidWatchdogAction(p.Watchdog) {
		return control.InvalidParams(fmt.Sprintf("watchdog %q is not an action: use warn, cancel or restart", p.Watchdog))
	}
	if n := p.WatchdogRestarts; n != nil && (*n < 0 || *n > hostrt.MaxWatchdogRestarts) {
		return control.InvalidParams(fmt.Sprintf("watchdog_restarts %d is out of range: 0 to %d", *n, hostrt.MaxWatchdogRestarts))
	}
	return nil
}

// watchdogKeys adds the watchdog's params the spawn gave to its config
// keys.
func (p SpawnParams) watchdogKeys(out map[string]any) {
	if d, _ := ParseTimeout(p.ProgressTimeout); d > 0 {
		out["progress_timeout"] = d
	}
	if d, _ := ParseTimeout(p.ToolTimeout); d > 0 {
		out["tool_timeout"] = d
	}
	if p.Watchdog != "" {
		out["watchdog"] = p.Watchdog
	}
	if p.WatchdogRestarts != nil {
		out["watchdog_restarts"] = *p.WatchdogRestarts
	}
}
