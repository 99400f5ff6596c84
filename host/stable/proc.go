package stable

import (
	"os"
	"strconv"
	"strings"
)

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
