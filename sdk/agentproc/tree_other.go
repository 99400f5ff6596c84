//go:build !linux

package agentproc

import (
	"fmt"
	"runtime"
	"time"
)

// BecomeSubreaper is Linux-only; elsewhere a tree is owned through its
// process group alone.
func BecomeSubreaper() error {
	return fmt.Errorf("agentproc: child subreapers are Linux-only (this is %s)", runtime.GOOS)
}

// KillDescendants needs /proc; elsewhere it kills nothing.
func KillDescendants(pid int) int { return 0 }

// KillMarked needs /proc; elsewhere it kills nothing.
func KillMarked(token string) int { return 0 }

// ReapKilled needs /proc; elsewhere it does nothing.
func ReapKilled(pids []int) {}

// Cgroup is Linux-only; NewCgroup always fails elsewhere.
type Cgroup struct{}

// NewCgroup fails with ErrNoCgroup outside Linux.
func NewCgroup(prefix string) (*Cgroup, error) {
	return nil, fmt.Errorf("%w: cgroups are Linux-only (this is %s)", ErrNoCgroup, runtime.GOOS)
}

func (c *Cgroup) Path() string                      { return "" }
func (c *Cgroup) FD() int                           { return -1 }
func (c *Cgroup) Kill() ([]int, error)              { return nil, nil }
func (c *Cgroup) Remove(within time.Duration) error { return nil }
func (c *Cgroup) Empty() bool                       { return true }
