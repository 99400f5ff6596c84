package agentproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReaperCleansUpAfterPluginKill: a plugin SIGKILLed together with its
// host leaves nobody to stop its runtime: the CLI dies by Pdeathsig, but a
// tool it started in a session of its own lives on unless the CLI's reaper,
// which outlives the plugin, kills it. With a cgroup and without.
func TestReaperCleansUpAfterPluginKill(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	for _, mode := range treeModes(t) {
		t.Run(mode, func(t *testing.T) {
			setTreeMode(t, mode)
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), pluginHelperEnv+"="+dir)
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var cli, pgid, tool int
			if !waitUntil(10*time.Second, func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "pids"))
				if err != nil {
					return false
				}
				_, err = fmt.Sscan(string(b), &cli, &pgid, &tool)
				return err == nil
			}) {
				t.Fatal("the plugin helper did not start its CLI")
			}
			t.Cleanup(func() {
				for _, p := range []int{cli, pgid, tool} {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			})
			if pgid == cli || !strings.Contains(cmdline(pgid), "avenor-runtime-reaper") {
				t.Fatalf("the CLI (pid %d) leads its group %d (%q): want its reaper as leader", cli, pgid, cmdline(pgid))
			}
			if !waitUntil(5*time.Second, func() bool { sid, _ := unixGetsid(tool); return sid == tool }) {
				t.Fatalf("the tool (pid %d) never got a session of its own", tool)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			for what, pid := range map[string]int{"tool in a session of its own": tool, "CLI": cli, "reaper": pgid} {
				if !waitUntil(5*time.Second, func() bool { return gone(pid) }) {
					t.Errorf("the %s (pid %d) outlived the SIGKILLed plugin by 5s", what, pid)
				}
			}
		})
	}
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// TestReaperEndsWithTheCLI: while the plugin lives the reaper only waits;
// once the CLI is stopped, the reaper is killed and reaped with the rest of
// the group, so the group is gone and the plugin keeps no child.
func TestReaperEndsWithTheCLI(t *testing.T) {
	p := startSh(t, Spec{}, `echo up; exec sleep 300`)
	nextLine(t, p)
	pgid := p.PGID()
	if pgid == p.PID() || !strings.Contains(cmdline(pgid), "avenor-runtime-reaper") {
		t.Fatalf("PGID %d (%q), PID %d: want a reaper leading the CLI's group", pgid, cmdline(pgid), p.PID())
	}
	if g, err := syscall.Getpgid(p.PID()); err != nil || g != pgid {
		t.Fatalf("the CLI is in group %d (%v), want %d", g, err, pgid)
	}
	// A SIGTERM to the group is for the CLI; the reaper stays.
	if err := p.Stop(50 * time.Millisecond); !errors.Is(err, ErrTerminated) {
		t.Fatalf("Stop = %v, want ErrTerminated", err)
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still there after Stop: %v", pgid, err)
	}
	if _, ok := readStat(pgid); ok {
		t.Errorf("the reaper (pid %d) is still there after Stop, state %q", pgid, procStateOf(pgid))
	}
}

func procStateOf(pid int) string {
	st, ok := readStat(pid)
	if !ok {
		return ""
	}
	return string(st.state)
}

// TestReaperRefusesOutsideAGroupItLeads: ReaperEnv set by mistake in a
// program's environment (not by Start, which makes the reaper a group
// leader) does not turn the program into a reaper.
func TestReaperRefusesOutsideAGroupItLeads(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ReaperEnv+"="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not a runtime reaper") {
		t.Fatalf("exit %v, output %q: want exit 2 and a refusal", err, out)
	}
}
