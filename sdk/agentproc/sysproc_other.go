//go:build !linux

package agentproc

import "syscall"

// sysProcAttr starts the CLI in a group of its own; outside Linux there is
// neither Pdeathsig nor cgroups.
func sysProcAttr(*Cgroup) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
