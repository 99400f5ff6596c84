//go:build !linux

package agentproc

import (
	"errors"
	"os/exec"
)

// startReaper: outside Linux there is no reaper (no pidfds, no /proc); a
// CLI leads its own process group.
func startReaper(string, string, string) (*exec.Cmd, error) {
	return nil, errors.New("agentproc: no runtime reaper on this system")
}
