//go:build !linux

package plugin

import (
	"syscall"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// pluginSysProcAttr: outside Linux there is neither Pdeathsig nor cgroups;
// the plugin notices its host's death by polling (Serve).
func pluginSysProcAttr(*agentproc.Cgroup, []string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
