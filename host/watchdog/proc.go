package watchdog

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// Bounds of one /proc scan.
const (
	// MaxProcs bounds the processes one scan reads; a machine with more is
	// read up to it (the rest are not seen, so a tool among them is judged
	// busy, never hung, for want of a sample).
	MaxProcs = 65536
	// MaxCmdline bounds, in bytes, the command line kept of a process for
	// the evidence.
	MaxCmdline = 256
)

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// Key names one process for its life: a pid and its start time, so that a
// reused pid is another process.
type Key struct {
	PID   int
	Start uint64
}

// Proc is one process as a scan read it.
type Proc struct {
	PID, PPID int
	// Start is the process's start time in clock ticks since boot.
	Start uint64
	// Comm is its command name (/proc/<pid>/stat).
	Comm string
	// CPU is its CPU time and its reaped children's, in clock ticks.
	CPU uint64
	// IO is rchar+wchar: bytes read and written, pipes and sockets
	// included. IOKnown is false when /proc/<pid>/io could not be read.
	IO      uint64
	IOKnown bool
}

// Key is the process's Key.
func (p Proc) Key() Key { return Key{p.PID, p.Start} }

// Usage is what a process has used so far.
type Usage struct{ CPU, IO uint64 }

// ReadProcs scans procRoot ("/proc") for every process, at most MaxProcs;
// zombies are left out. Processes that end during the scan are skipped.
func ReadProcs(procRoot string) []Proc {
	d, err := os.Open(procRoot)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]Proc, 0, min(len(names), MaxProcs))
	for _, n := range names {
		if len(out) >= MaxProcs {
			break
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		p, ok := readProc(procRoot, pid)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// readProc reads one process's stat and io.
func readProc(procRoot string, pid int) (Proc, bool) {
	dir := procRoot + "/" + strconv.Itoa(pid) + "/"
	b, err := os.ReadFile(dir + "stat")
	if err != nil {
		return Proc{}, false
	}
	p, ok := ParseStat(b)
	if !ok || p.PID != pid {
		return Proc{}, false
	}
	if io, err := os.ReadFile(dir + "io"); err == nil {
		p.IO, p.IOKnown = ParseIO(io)
	}
	return p, true
}

// ParseStat parses /proc/<pid>/stat; false for a zombie or a line it
// cannot read. The command name may hold spaces and parentheses: the
// fields after it start after the last ')'.
func ParseStat(b []byte) (Proc, bool) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return Proc{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return Proc{}, false
	}
	f := strings.Fields(string(b[closing+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return Proc{}, false
	}
	num := func(n int) uint64 {
		v, _ := strconv.ParseUint(f[n-3], 10, 64)
		return v
	}
	ppid, _ := strconv.Atoi(f[1])
	return Proc{
		PID: pid, PPID: ppid, Comm: string(b[open+1 : closing]),
		CPU:   num(14) + num(15) + num(16) + num(17),
		Start: num(22),
	}, true
}

// ParseIO parses /proc/<pid>/io: rchar+wchar; false when neither is there.
func ParseIO(b []byte) (uint64, bool) {
	var sum uint64
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "rchar" && k != "wchar") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err == nil {
			sum += n
			found = true
		}
	}
	return sum, found
}

// Subtree returns the processes of all that descend from one of roots
// (the roots themselves left out) and started at or after since (clock
// ticks since boot): the processes a tool call started, and theirs.
func Subtree(all []Proc, roots []int, since uint64) []Proc {
	parent := make(map[int]int, len(all))
	for _, p := range all {
		parent[p.PID] = p.PPID
	}
	isRoot := map[int]bool{}
	for _, r := range roots {
		if r > 0 {
			isRoot[r] = true
		}
	}
	var out []Proc
	for _, p := range all {
		if isRoot[p.PID] || p.Start < since {
			continue
		}
		// Walk up; a cycle or a chain longer than the table cannot be
		// a descent.
		for q, n := p.PPID, 0; q > 1 && n <= len(all); q, n = parent[q], n+1 {
			if isRoot[q] {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Clock turns wall times into /proc's clock ticks since boot.
type Clock struct {
	wall  time.Time
	ticks uint64
}

// NewClock reads the uptime under procRoot once; false when it cannot.
func NewClock(procRoot string) (Clock, bool) {
	b, err := os.ReadFile(procRoot + "/uptime")
	if err != nil {
		return Clock{}, false
	}
	up, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	sec, err := strconv.ParseFloat(up, 64)
	if err != nil || sec < 0 {
		return Clock{}, false
	}
	return Clock{wall: time.Now(), ticks: uint64(sec * float64(time.Second/clockTick))}, true
}

// Ticks is t in clock ticks since boot (0 for a time before boot).
func (c Clock) Ticks(t time.Time) uint64 {
	d := int64(t.Sub(c.wall) / clockTick)
	if d < 0 && uint64(-d) > c.ticks {
		return 0
	}
	return uint64(int64(c.ticks) + d)
}

// Cmdline is the command line of pid, NULs as spaces, at most MaxCmdline
// bytes; "" when it cannot be read.
func Cmdline(procRoot string, pid int) string {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) > MaxCmdline {
		b = b[:MaxCmdline]
	}
	return strings.ToValidUTF8(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), "?")
}
