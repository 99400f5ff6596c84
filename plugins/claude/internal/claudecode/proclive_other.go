//go:build !linux

package claudecode

import "syscall"

// processLive reports whether pid runs. Without /proc a zombie pane cannot
// be told from a live one, so kill(0) decides; an orphaned pane's zombie is
// reaped by init (launchd) within moments.
func processLive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
