//go:build !linux

package scripted

import "syscall"

// childSysProcAttr: a process group of its own; outside Linux there is no
// Pdeathsig, and the child of a SIGKILLed test plugin outlives it until its
// own life ends.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
