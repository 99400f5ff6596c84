//go:build unix

package mcpconfig

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on the directory itself, so two avenor
// sessions editing the same project's .mcp.json do not lose each other's
// entries, and no lock file is left behind.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
