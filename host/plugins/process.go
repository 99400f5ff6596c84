package plugins

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessAlive says whether pid runs and, when start is known (ProcessStart
// of the process meant), is still that process: a pid recycled by another
// process is a dead one, and so is a zombie. Without /proc it trusts
// kill(0).
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, st, ok := procStat(pid)
	if !ok {
		return true
	}
	if state == "Z" || state == "X" {
		return false
	}
	return start == 0 || st == 0 || st == start
}

// ProcessStart is pid's start time in clock ticks since boot (0: unknown):
// with the pid, it names one process however pids are recycled.
func ProcessStart(pid int) uint64 {
	_, st, _ := procStat(pid)
	return st
}

// procStat reads the state letter and start time of /proc/<pid>/stat.
func procStat(pid int) (state string, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", 0, false
	}
	// After the command: state is field 3, starttime field 22 of stat.
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, true
}
