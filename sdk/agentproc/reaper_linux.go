package agentproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	if v := os.Getenv(ReaperEnv); v != "" {
		os.Exit(reaperMain(v))
	}
}

// startReaper starts the reaper of a CLI whose token is token, whose
// cgroup, if any, is cgroupDir and whose sandbox's private temp dir, if
// any, is tempDir, as the leader of a new process group: the group the
// CLI is then started into.
func startReaper(token, cgroupDir, tempDir string) (*exec.Cmd, error) {
	env := make([]string, 0, 8)
	for _, kv := range os.Environ() {
		// The plugin's own trees (TreeEnv) hold the reaper too; nothing
		// else of the plugin's environment is needed.
		if strings.HasPrefix(kv, TreeEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, ReaperEnv+"="+strconv.Itoa(os.Getpid()), reaperTokenEnv+"="+token)
	if cgroupDir != "" {
		env = append(env, reaperCgroupEnv+"="+cgroupDir)
	}
	if tempDir != "" {
		env = append(env, reaperTempEnv+"="+tempDir)
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		// argv[0] says what it is in ps; the program never sees it.
		Args: []string{"avenor-runtime-reaper"},
		Env:  env,
		Dir:  "/",
		// No Pdeathsig: outliving the plugin is its purpose.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("agentproc: starting the runtime reaper: %w", err)
	}
	return cmd, nil
}

// reaperMain is the reaper process: it waits for its parent (pid ppidArg)
// to die, then kills the CLI's tree and exits. It runs only as a process
// group leader, as startReaper makes it: anywhere else the environment was
// set by mistake and it refuses.
func reaperMain(ppidArg string) int {
	ppid, err := strconv.Atoi(ppidArg)
	if err != nil || ppid <= 1 || syscall.Getpgrp() != os.Getpid() {
		fmt.Fprintf(os.Stderr, "agentproc: %s=%s is set, but this process is not a runtime reaper started by agentproc; unset it\n", ReaperEnv, ppidArg)
		return 2
	}
	token, cgroupDir := os.Getenv(reaperTokenEnv), os.Getenv(reaperCgroupEnv)
	// The plugin stops its CLI with SIGTERM to the group, and a terminal
	// may signal it too: those are for the CLI.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	waitParentDeath(ppid)
	reapTree(token, cgroupDir)
	if tmp := os.Getenv(reaperTempEnv); tmp != "" {
		_ = os.RemoveAll(tmp)
	}
	return 0
}

// waitParentDeath returns once process ppid, which started us, is gone.
func waitParentDeath(ppid int) {
	fd, err := unix.PidfdOpen(ppid, 0)
	if err == nil {
		defer unix.Close(fd)
		// The pidfd is ppid's only if ppid is still our parent now.
		if os.Getppid() != ppid {
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == nil || !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if fds[0].Revents != 0 {
			return
		}
	}
	// No pidfds (or poll failed): watch the parent pid.
	for os.Getppid() == ppid {
		time.Sleep(ReaperPollInterval)
	}
}

// reapTree kills what the CLI left: its cgroup, then, pass after pass,
// every process carrying its token and every process of our group (the
// CLI's), until none is left.
func reapTree(token, cgroupDir string) {
	if cgroupDir != "" {
		c := &Cgroup{dir: cgroupDir}
		_, _ = c.Kill()
	}
	self := os.Getpid()
	killPasses(func() []int {
		var out []int
		for _, p := range listPIDs() {
			if p == self {
				continue
			}
			if pgrp, ok := readPgrp(p); ok && pgrp == self {
				out = append(out, p)
				continue
			}
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ"); err == nil && hasTreeToken(env, token) {
				out = append(out, p)
			}
		}
		return out
	})
}

// readPgrp reads the process group of pid from /proc/<pid>/stat; zombies
// are left out.
func readPgrp(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || f[0] == "Z" {
		return 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	return pgrp, err == nil
}
