package agentproc

import "syscall"

// sysProcAttr starts the CLI in a group apart from the plugin's — its
// reaper's, pgid, or else a new one it leads — so that signals reach the
// helpers it spawns and a Ctrl-C at the host's terminal does not; it dies
// with the plugin even if the plugin is SIGKILLed (Pdeathsig); and, given a
// cgroup, it starts inside it (clone3 CLONE_INTO_CGROUP), so not even its
// first fork escapes.
func sysProcAttr(cg *Cgroup, pgid int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
	if cg != nil {
		a.UseCgroupFD, a.CgroupFD = true, cg.FD()
	}
	return a
}
