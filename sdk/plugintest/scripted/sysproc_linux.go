package scripted

import "syscall"

// childSysProcAttr: a process group of its own, so that cancelling reaches
// whatever the child started, and death with the plugin even if the plugin
// is SIGKILLed (Pdeathsig), as a real plugin's runtime CLI would.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
