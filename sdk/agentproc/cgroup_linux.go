package agentproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cgroup is a cgroup v2 this process created to hold one process tree. A
// process started into it (SysProcAttr.UseCgroupFD with FD) and everything
// it forks stay in it whatever session or group they move to, so Kill ends
// the whole tree and nothing else.
type Cgroup struct {
	dir string
	fd  *os.File
}

// cgroupSeq makes the names of this process's cgroups unique.
var cgroupSeq atomic.Uint64

// NewCgroup creates a cgroup named <prefix>-<pid>-<n> below the calling
// process's own cgroup v2. It fails with an error wrapping ErrNoCgroup when
// cgroups are unusable here: no cgroup v2 hierarchy, no write access to our
// cgroup (not root and not delegated), or CgroupsEnv=off. Callers fall back
// to the process group, the subreaper and TreeEnv.
func NewCgroup(prefix string) (*Cgroup, error) {
	if os.Getenv(CgroupsEnv) == "off" {
		return nil, fmt.Errorf("%w: %s=off", ErrNoCgroup, CgroupsEnv)
	}
	own, err := ownCgroupDir()
	if err != nil {
		return nil, err
	}
	sweepStaleEvery(own, prefix)
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), cgroupSeq.Add(1))
	dir := filepath.Join(own, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: creating %s: %v", ErrNoCgroup, dir, err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("%w: opening %s: %v", ErrNoCgroup, dir, err)
	}
	return &Cgroup{dir: dir, fd: fd}, nil
}

// Path is the cgroup's directory.
func (c *Cgroup) Path() string { return c.dir }

// FD is the cgroup directory's descriptor, for SysProcAttr.CgroupFD.
func (c *Cgroup) FD() int { return int(c.fd.Fd()) }

// Kill SIGKILLs every process in the cgroup and below it: cgroup.kill where
// the kernel has it (5.14), else each pid listed in cgroup.procs, pass after
// pass until the cgroup is empty.
//
// The processes killed are returned, for ReapKilled.
func (c *Cgroup) Kill() ([]int, error) {
	killed := c.procs()
	err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
	if err == nil {
		return killed, nil
	}
	killed = nil
	for range maxKillPasses {
		pids := c.procs()
		if len(pids) == 0 {
			return killed, nil
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		killed = append(killed, pids...)
	}
	return killed, fmt.Errorf("agentproc: killing cgroup %s: processes keep appearing", c.dir)
}

// Remove waits up to within for the cgroup to empty and removes it. A
// cgroup that will not empty is left in place (an empty directory once its
// processes are reaped) and reported.
func (c *Cgroup) Remove(within time.Duration) error {
	_ = c.fd.Close()
	deadline := time.Now().Add(within)
	for {
		err := removeTree(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agentproc: removing cgroup %s: %w", c.dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeTree removes an empty cgroup and the cgroups below it (a SIGKILLed
// plugin leaves its runtime's), deepest first: a cgroup with children
// cannot be removed.
func removeTree(dir string) error {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = removeTree(filepath.Join(dir, e.Name()))
		}
	}
	return os.Remove(dir)
}

// SweepEvery bounds how often one process sweeps one cgroup directory for
// stale cgroups: a supervisor creates a cgroup for every plugin it
// launches, and reading its directory of hundreds of cgroups at each
// launch took ~9 % of its CPU while 200 runtimes spawned — for litter that
// only a SIGKILLed process leaves.
const SweepEvery = time.Minute

// sweeps remembers when this process last swept each directory for each
// prefix; sweepNow is the clock.
var (
	sweeps   = map[string]time.Time{}
	sweepsMu sync.Mutex
	sweepNow = time.Now
)

// sweepStaleEvery sweeps dir for prefix's stale cgroups unless this
// process did within SweepEvery.
func sweepStaleEvery(dir, prefix string) {
	key, now := dir+"\x00"+prefix, sweepNow()
	sweepsMu.Lock()
	last, swept := sweeps[key]
	due := !swept || now.Sub(last) >= SweepEvery
	if due {
		sweeps[key] = now
	}
	sweepsMu.Unlock()
	if due {
		sweepStale(dir, prefix)
	}
}

// sweepStale removes the empty cgroups named <prefix>-<pid>-<n> in dir
// whose creator is dead: a process SIGKILLed before it could remove its
// own. A live creator's cgroups, and populated ones, are left alone.
func sweepStale(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !e.IsDir() || !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		if pidStr == self {
			continue // ours: we live
		}
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 1 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		c := &Cgroup{dir: filepath.Join(dir, e.Name())}
		if c.Empty() {
			_ = removeTree(c.dir)
		}
	}
}

// Empty reports whether no process is left in the cgroup or below it.
func (c *Cgroup) Empty() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return true
	}
	return strings.Contains(string(b), "populated 0")
}

func (c *Cgroup) procs() []int {
	var out []int
	_ = filepath.WalkDir(c.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && p > 1 {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// ownCgroupDir is the directory of this process's cgroup in the cgroup v2
// hierarchy, from /proc/self/cgroup ("0::<path>") and the cgroup2 mount in
// /proc/self/mountinfo (which may be /sys/fs/cgroup or, on hybrid systems,
// /sys/fs/cgroup/unified).
func ownCgroupDir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	var path string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", fmt.Errorf("%w: /proc/self/cgroup names no cgroup v2", ErrNoCgroup)
	}
	root, mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	rel, ok := strings.CutPrefix(path, root)
	if !ok {
		return "", fmt.Errorf("%w: our cgroup %s is outside the mounted cgroup2 tree %s", ErrNoCgroup, path, root)
	}
	return filepath.Join(mount, rel), nil
}

// cgroup2Mount finds the first cgroup2 mount: the root of the hierarchy it
// shows and where it is mounted.
func cgroup2Mount() (root, mount string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		return unescapeMount(fields[3]), unescapeMount(fields[4]), nil
	}
	return "", "", fmt.Errorf("%w: no cgroup2 file system is mounted", ErrNoCgroup)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
