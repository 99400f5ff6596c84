//go:build !linux

package agentproc

import "syscall"

// sysProcAttr starts the CLI in a group apart from the plugin's (pgid, or
// else a new one it leads); outside Linux there is neither Pdeathsig nor
// cgroups.
func sysProcAttr(_ *Cgroup, pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}
