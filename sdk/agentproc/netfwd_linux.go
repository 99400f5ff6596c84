package agentproc

import "syscall"

// forwardChildAttr makes the runtime die with the forwarder (Pdeathsig,
// which follows the thread that started it: netForwardMain locks it).
func forwardChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
