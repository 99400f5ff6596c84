//go:build linux

package agentproc

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The three Landlock system calls the launcher makes, on the calling
// thread only: it has locked itself to its OS thread and execs right
// after, so no other thread of it survives to need the restriction. (A
// library applying Landlock to every thread of a Go process wraps thread
// creation, which the race detector cannot follow: -race then reported
// races in unrelated code of every binary linking this package.)

// landlockABIVersion is landlock_create_ruleset's version query.
func landlockABIVersion() (int, error) {
	v, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// landlockCreateRuleset creates a ruleset handling what attr says.
func landlockCreateRuleset(attr *unix.LandlockRulesetAttr) (int, error) {
	fd, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// landlockAddPathBeneath adds a path-beneath rule to the ruleset fd. The
// kernel reads the packed 12-byte struct, the first 12 bytes of attr.
func landlockAddPathBeneath(fd int, attr *unix.LandlockPathBeneathAttr) error {
	_, _, errno := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// landlockRestrictSelf enforces the ruleset fd on the calling thread and
// what it execs.
func landlockRestrictSelf(fd int) error {
	_, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT (ABI 4).
const landlockRuleNetPort = 2

// landlockNetPortAttr is the kernel's struct landlock_net_port_attr.
type landlockNetPortAttr struct {
	AllowedAccess uint64
	Port          uint64
}

// landlockAddNetPort adds a net-port rule to the ruleset fd.
func landlockAddNetPort(fd int, attr *landlockNetPortAttr) error {
	_, _, errno := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), landlockRuleNetPort, uintptr(unsafe.Pointer(attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
