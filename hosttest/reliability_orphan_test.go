//go:build reliability

package hosttest

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestReliabilityOrphan kills the plugin, the runtime CLI or avenor run while
// the CLI's tool — started in a session of its own with setsid, as opencode
// and codex start theirs — runs, and requires the tool to be gone within 5 s.
// Each target runs RELIABILITY_TRIALS times (default 20), both with a cgroup
// per plugin and runtime and with cgroups off (AVENOR_CGROUPS=off: the
// process group, the plugin as subreaper and the AVENOR_PROCTREE marker).
func TestReliabilityOrphan(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	n := trials()
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		for _, target := range []string{"plugin", "cli", "host"} {
			for i := range n {
				t.Run(fmt.Sprintf("%s/%s/%03d", mode, target, i), func(t *testing.T) {
					t.Parallel()
					orphanRun(t, mode, target)
				})
			}
		}
	}
}

func orphanRun(t *testing.T, mode, target string) {
	w := newWorld(t)
	cliPID, toolPID := w.path("cli.pid"), w.path("tool.pid")
	// The CLI (/bin/sh through agentproc, the `lines` step) starts the tool
	// in its own session, records both pids, and waits.
	script := fmt.Sprintf(`lines echo $$ > %s; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > %s; echo started; exec sleep 60`, cliPID, toolPID)
	var env []string
	if mode == "no-cgroup" {
		env = append(env, "AVENOR_CGROUPS=off")
	}
	evPath := w.path("events.ndjson")
	p := w.start(env, "--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--prompt", script)
	waitForLog(t, evPath, `started`, 10*time.Second)
	cli, tool := readPidFile(t, cliPID), readPidFile(t, toolPID)
	// The tool is in a session of its own before the kill.
	if !waitFor(5*time.Second, func() bool { sid, _ := getsid(tool); return sid == tool }) {
		t.Fatalf("the tool (pid %d) never got a session of its own", tool)
	}
	var plugin int
	if pids := childrenOf(p.pid(), "avenor-plugin-scripted"); len(pids) == 1 {
		plugin = pids[0]
	} else {
		t.Fatalf("plugin processes of avenor %d: %v", p.pid(), pids)
	}
	victim := map[string]int{"plugin": plugin, "cli": cli, "host": p.pid()}[target]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the %s (pid %d): %v", target, victim, err)
	}
	requireGone(t, "the tool after a SIGKILL of the "+target, tool, 5*time.Second)
	requireGone(t, "the runtime CLI after a SIGKILL of the "+target, cli, 5*time.Second)
	requireGone(t, "the plugin after a SIGKILL of the "+target, plugin, 10*time.Second)
	p.wait()
}

func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
