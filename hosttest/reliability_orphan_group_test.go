//go:build reliability

package hosttest

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestReliabilityOrphanGroupKill kills avenor run's whole process group with
// SIGKILL (what a terminal's job control or a CI runner's timeout does: the
// host and its plugin die at the same instant, so neither can clean up), or
// the host and the plugin one after the other (under `avenor run`, and under
// `avenor stable`, whose plugins have groups of their own), while the
// runtime CLI's tool runs in a session of its own. The tool, the CLI and the
// plugin must all be gone within 5 s, with a cgroup per plugin and runtime
// and with cgroups off (AVENOR_CGROUPS=off), RELIABILITY_TRIALS times each.
func TestReliabilityOrphanGroupKill(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	n := trials()
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		for _, target := range []string{"host-group", "host+plugin", "stable+plugin"} {
			for i := range n {
				t.Run(fmt.Sprintf("%s/%s/%03d", mode, target, i), func(t *testing.T) {
					t.Parallel()
					if target == "stable+plugin" {
						orphanStableRun(t, mode)
						return
					}
					orphanGroupRun(t, mode, target)
				})
			}
		}
	}
}

func orphanGroupRun(t *testing.T, mode, target string) {
	w := newWorld(t)
	cliPID, toolPID := w.path("cli.pid"), w.path("tool.pid")
	script := fmt.Sprintf(`lines echo $$ > %s; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > %s; echo started; exec sleep 60`, cliPID, toolPID)
	env := append([]string{}, w.env...)
	if mode == "no-cgroup" {
		env = append(env, "AVENOR_CGROUPS=off")
	}
	evPath := w.path("events.ndjson")
	// avenor in a process group of its own, as a shell starts a job: the
	// group is the host and, for `avenor run`, its plugin.
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.avenor, "--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--prompt", script)
	cmd.Dir, cmd.Env = w.work, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting avenor: %v", err)
	}
	host := cmd.Process.Pid
	waited := false
	defer func() {
		if !waited {
			_ = syscall.Kill(-host, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	waitForLog(t, evPath, `started`, 10*time.Second)
	cli, tool := readPidFile(t, cliPID), readPidFile(t, toolPID)
	if !waitFor(5*time.Second, func() bool { sid, _ := getsid(tool); return sid == tool }) {
		t.Fatalf("the tool (pid %d) never got a session of its own", tool)
	}
	var plugin int
	if pids := childrenOf(host, "avenor-plugin-scripted"); len(pids) == 1 {
		plugin = pids[0]
	} else {
		t.Fatalf("plugin processes of avenor %d: %v", host, pids)
	}
	switch target {
	case "host-group":
		if pgid, err := syscall.Getpgid(plugin); err != nil || pgid != host {
			t.Fatalf("the plugin (pid %d) is in group %d (%v), not the host's %d", plugin, pgid, err, host)
		}
		if err := syscall.Kill(-host, syscall.SIGKILL); err != nil {
			t.Fatalf("killing the host's process group %d: %v", host, err)
		}
	case "host+plugin":
		for _, pid := range []int{host, plugin} {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("killing pid %d: %v", pid, err)
			}
		}
	}
	_ = cmd.Wait()
	waited = true
	requireGone(t, "the tool after a SIGKILL of the "+target, tool, 5*time.Second)
	requireGone(t, "the runtime CLI after a SIGKILL of the "+target, cli, 5*time.Second)
	requireGone(t, "the plugin after a SIGKILL of the "+target, plugin, 5*time.Second)
}

// orphanStableRun kills an `avenor stable` and the plugin of its runtime
// together while the runtime's tool runs in a session of its own.
func orphanStableRun(t *testing.T, mode string) {
	w := newWorld(t)
	var env []string
	if mode == "no-cgroup" {
		env = append(env, "AVENOR_CGROUPS=off")
	}
	s := w.startStable("st", env)
	c := s.client()
	cliPID, toolPID := w.path("cli.pid"), w.path("tool.pid")
	script := fmt.Sprintf(`lines echo $$ > %s; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > %s; echo started; exec sleep 60`, cliPID, toolPID)
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: script})
	rt := waitRuntime(t, c, sp.RuntimeID, 10*time.Second, "with a plugin",
		func(rt client.Runtime) bool { return rt.PluginPID > 0 })
	waitForLog(t, sp.OnEvent, `started`, 10*time.Second)
	cli, tool := readPidFile(t, cliPID), readPidFile(t, toolPID)
	if !waitFor(5*time.Second, func() bool { sid, _ := getsid(tool); return sid == tool }) {
		t.Fatalf("the tool (pid %d) never got a session of its own", tool)
	}
	for _, pid := range []int{s.pid(), rt.PluginPID} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing pid %d: %v", pid, err)
		}
	}
	s.wait()
	requireGone(t, "the tool after a SIGKILL of the supervisor and the plugin", tool, 5*time.Second)
	requireGone(t, "the runtime CLI after a SIGKILL of the supervisor and the plugin", cli, 5*time.Second)
	requireGone(t, "the plugin after a SIGKILL of the supervisor and the plugin", rt.PluginPID, 5*time.Second)
}
