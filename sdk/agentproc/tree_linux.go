package agentproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): an orphan among its descendants — a shell tool
// whose agent CLI died — is reparented to it instead of to init, so that
// KillDescendants still finds it. A plugin calls it once, at start.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("agentproc: becoming a child subreaper: %w", err)
	}
	return nil
}

// KillDescendants SIGKILLs every descendant of pid and returns how many it
// killed. It walks again until a pass finds none, so a child forked while
// the walk ran is found by the next one. Descendants that were this
// process's children are reaped.
//
// The walk follows the kernel's per-thread children lists
// (/proc/<pid>/task/<tid>/children) down from pid, which costs what the
// tree holds; a kernel without them is walked through every process's
// /proc/<pid>/stat, which costs what the machine holds.
func KillDescendants(pid int) int {
	return killPasses(func() []int { return descendants(pid) })
}

// descendants lists the living descendants of pid, zombies left out.
func descendants(pid int) []int {
	kids, ok := children(pid)
	if !ok {
		return scanDescendants(pid)
	}
	var out []int
	seen := map[int]bool{pid: true}
	for len(kids) > 0 && len(seen) <= maxTreeProcs {
		p := kids[0]
		kids = kids[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		if st, ok := readStat(p); ok && st.state != 'Z' {
			out = append(out, p)
		}
		more, _ := children(p)
		kids = append(kids, more...)
	}
	return out
}

// children reads the children of every thread of pid; ok is false when
// the kernel keeps no children lists (or pid is gone).
func children(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue // the thread ended, or the kernel keeps no children lists
		}
		ok = true
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, ok
}

// scanDescendants finds the descendants of pid among every process's
// parent, for kernels without children lists.
func scanDescendants(pid int) []int {
	procs := listProcs(false)
	var out []int
	for p := range procs {
		if p != pid && descendsFrom(procs, p, pid) {
			out = append(out, p)
		}
	}
	return out
}

// KillMarked SIGKILLs every process other than this one whose environment
// carries token in TreeEnv, and returns how many it killed. It walks /proc
// until a pass finds none. Processes of other users, whose environment
// cannot be read, are never touched; nor are zombies, whose environment
// reads empty.
func KillMarked(token string) int {
	if token == "" {
		return 0
	}
	self := os.Getpid()
	return killPasses(func() []int {
		var out []int
		for _, p := range listPIDs() {
			if p == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ")
			if err == nil && hasTreeToken(env, token) {
				out = append(out, p)
			}
		}
		return out
	})
}

// procStat is what KillDescendants needs of /proc/<pid>/stat.
type procStat struct {
	ppid  int
	state byte
}

// killPasses kills what pick chooses among the living processes, pass after
// pass, until a pass chooses nothing new or maxKillPasses is reached, then
// reaps those of its victims that end up as this process's children. A
// victim still dying when the next pass looks is not killed (or counted)
// again.
func killPasses(pick func() []int) int {
	self := os.Getpid()
	var killed []int
	sent := map[int]bool{}
	for range maxKillPasses {
		fresh := 0
		for _, p := range pick() {
			if p <= 1 || p == self || sent[p] {
				continue
			}
			fresh++
			sent[p] = true
			if killPID(p) {
				killed = append(killed, p)
			}
		}
		if fresh == 0 {
			break
		}
	}
	ReapKilled(killed)
	return len(killed)
}

// killPID SIGKILLs pid through a pidfd when the kernel has them, so that the
// signal cannot reach a process that reused the pid after the walk.
func killPID(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false
		}
		return syscall.Kill(pid, syscall.SIGKILL) == nil
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// ReapKilled waits, for at most reapBudget, for the killed pids to die and
// reaps those that die as this process's children: a subreaper inherits the
// orphans of a killed tree, and would otherwise keep them as zombies. Only
// pids of a tree whose owner is gone belong here, never a child an exec.Cmd
// waits for.
func ReapKilled(pids []int) {
	if len(pids) == 0 {
		return
	}
	self := os.Getpid()
	deadline := time.Now().Add(reapBudget)
	for {
		procs := listProcs(true)
		pending := false
		for _, p := range pids {
			st, ok := procs[p]
			switch {
			case !ok:
			case st.state == 'Z' && st.ppid == self:
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
			case st.state != 'Z':
				pending = true // still dying, or about to be reparented
			}
		}
		if !pending || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listPIDs lists the pids in /proc.
func listPIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// listProcs reads the ppid and state of every process; zombies (dead
// already) only when asked for.
func listProcs(zombies bool) map[int]procStat {
	out := map[int]procStat{}
	for _, pid := range listPIDs() {
		if st, ok := readStat(pid); ok && (zombies || st.state != 'Z') {
			out[pid] = st
		}
	}
	return out
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name in parentheses may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid, state: f[0][0]}, true
}

func descendsFrom(procs map[int]procStat, pid, ancestor int) bool {
	for hops := 0; hops < maxTreeDepth; hops++ {
		st, ok := procs[pid]
		if !ok || st.ppid <= 0 {
			return false
		}
		if st.ppid == ancestor {
			return true
		}
		pid = st.ppid
	}
	return false
}
