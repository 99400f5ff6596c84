package claudecode

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processLive reports whether pid runs: it exists and is not a zombie (a
// pane orphaned by a killed server waits as one for init to reap it).
func processLive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // missing: gone since kill(0); unreadable: trust kill(0)
	}
	// pid (comm) state …; comm may hold spaces and parentheses.
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	f := strings.Fields(rest)
	return len(f) == 0 || f[0] != "Z"
}
