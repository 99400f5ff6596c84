//go:build !linux

package agentproc

import "syscall"

// forwardChildAttr: no forwarder runs outside Linux (it serves bubblewrap
// only), and there is no Pdeathsig.
func forwardChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
