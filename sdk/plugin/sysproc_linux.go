package plugin

import (
	"syscall"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// pluginSysProcAttr: the plugin dies with the host even when the host is
// SIGKILLed (the plugin then stops its runtimes, Serve), and, given a
// cgroup, starts inside it so that nothing it forks escapes. env is the
// plugin's environment.
func pluginSysProcAttr(cg *agentproc.Cgroup, env []string) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// A plugin that lingers after its host died (linger.go) must not die
	// with the host's process group, e.g. a harness's kill of the group:
	// it leads a group of its own. The host's own shutdown still stops it.
	a.Setpgid = lingersIn(env)
	if cg != nil {
		a.UseCgroupFD, a.CgroupFD = true, cg.FD()
	}
	return a
}
