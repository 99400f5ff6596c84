package agentproc

import (
	"errors"
	"fmt"
	"syscall"
)

// KillGroup sends SIGKILL to every process in process group pgid. A group
// that no longer exists (ESRCH) is not an error: the goal is that it be gone.
//
// It refuses pgid <= 1 and the caller's own group, because kill(2) reads
// -0 as "my group" and -1 as "every process I may signal"; a zero PGID from a
// Process that never started must not take the plugin down with it.
func KillGroup(pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("agentproc: refusing to kill process group %d: not a child's group", pgid)
	}
	if pgid == syscall.Getpgrp() {
		return fmt.Errorf("agentproc: refusing to kill process group %d: it is this process's own group", pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("agentproc: killing process group %d: %w", pgid, err)
	}
	return nil
}

// signalGroup is KillGroup for any signal, without the guards: it is only
// used on groups this package created.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("agentproc: sending %v to process group %d: %w", sig, pgid, err)
	}
	return nil
}
