package mcpserver

import (
	"fmt"

	"github.com/avenor-go/avenor/client"
)

// watchdogActions are avenor_spawn's watchdog values.
var watchdogActions = []string{"warn", "cancel", "restart"}

// watchdogParams carries avenor_spawn's watchdog arguments to the spawn
// (docs/unattended.md); the supervisor checks their combinations.
func (a spawnArgs) watchdogParams(p *client.SpawnParams) error {
	for _, d := range []struct {
		name string
		v    timeoutArg
		dst  *any
	}{{"progress_timeout", a.ProgressTimeout, &p.ProgressTimeout}, {"tool_timeout", a.ToolTimeout, &p.ToolTimeout}} {
		if err := d.v.into(d.name, d.dst); err != nil {
			return err
		}
	}
	if a.Watchdog != "" && !contains(watchdogActions, a.Watchdog) {
		return fmt.Errorf("invalid watchdog %q: one of warn, cancel, restart", a.Watchdog)
	}
	p.Watchdog, p.WatchdogRestarts = a.Watchdog, a.WatchdogRestarts
	return nil
}
