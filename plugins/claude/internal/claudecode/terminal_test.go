package claudecode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// launchers are the terminal launchers under test; tmux only where it is
// installed (CI installs it, .ci/run).
func launchers(t *testing.T) []launcher {
	ls := []launcher{launcherPTY}
	if _, err := exec.LookPath("tmux"); err == nil {
		ls = append(ls, launcherTmux)
	} else {
		t.Log("tmux is not installed; only the pty launcher is tested")
	}
	return ls
}

// startFakeTUI starts testdata/faketui.sh in launcher l.
func startFakeTUI(t *testing.T, l launcher, extraEnv ...string) terminal {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "faketui.sh"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), extraEnv...)
	term, err := startTerminal(l, "avenor-test1234", script, nil, env, t.TempDir())
	if err != nil {
		t.Fatalf("startTerminal(%s): %v", l, err)
	}
	t.Cleanup(func() { term.kill(100 * time.Millisecond) })
	waitScreen(t, term, "READY")
	return term
}

// waitScreen waits up to 10 s for want on the screen.
func waitScreen(t *testing.T, term terminal, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		scr := term.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not on the screen within 10s; screen:\n%s", want, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTerminalKeysAndPaste: keys arrive as typed (Enter and Esc as the
// bytes a terminal sends), a paste arrives bracketed with its line feeds,
// the screen is 220×50 and the environment reaches the TUI.
func TestTerminalKeysAndPaste(t *testing.T) {
	for _, l := range launchers(t) {
		t.Run(string(l), func(t *testing.T) {
			term := startFakeTUI(t, l, "FAKETUI_SECRET=s3cr3t-value")
			scr := waitScreen(t, term, "READY")
			if !strings.Contains(scr, "❯ ─── READY") {
				t.Errorf("UTF-8 is not rendered (Claude Code's input box is drawn with ❯ and ─):\n%s", scr)
			}
			if !strings.Contains(scr, "secret=s3cr3t-value") || !strings.Contains(scr, "size=50 220") {
				t.Errorf("the TUI did not get its environment or a 220×50 terminal:\n%s", scr)
			}
			if err := term.send("ab\x1bc\r"); err != nil {
				t.Fatal(err)
			}
			waitScreen(t, term, "line: ab<ESC>c")
			if err := term.paste("hello\nworld 'quoted' $HOME"); err != nil {
				t.Fatal(err)
			}
			if err := term.send("\r"); err != nil {
				t.Fatal(err)
			}
			waitScreen(t, term, "line: <ESC>[200~hello<LF>world 'quoted' $HOME<ESC>[201~")
			if term.done() || term.exitErr() != nil {
				t.Errorf("done %v exitErr %v while the TUI runs", term.done(), term.exitErr())
			}
		})
	}
}

// TestTerminalExit: a TUI that exits by itself is seen as done, its last
// screen is still readable, and nothing is left behind.
func TestTerminalExit(t *testing.T) {
	for _, l := range launchers(t) {
		t.Run(string(l), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			term := startFakeTUI(t, l)
			_ = term.send("line one\r")
			waitScreen(t, term, "line: line one")
			_ = term.send("q\r")
			select {
			case <-term.exited():
			case <-time.After(10 * time.Second):
				t.Fatal("the TUI exited but the terminal did not notice within 10s")
			}
			if !term.done() || term.exitErr() == nil && l == launcherTmux {
				t.Errorf("done %v exitErr %v after the exit", term.done(), term.exitErr())
			}
			if !strings.Contains(term.screen(), "line: line one") {
				t.Errorf("the last screen is lost after the exit:\n%s", term.screen())
			}
			term.kill(100 * time.Millisecond)
			checkGone(t, term)
		})
	}
}

// TestTerminalKill: kill ends a TUI that ignores SIGTERM and its child,
// and (tmux) the private server and its socket directory.
func TestTerminalKill(t *testing.T) {
	for _, l := range launchers(t) {
		t.Run(string(l), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			term := startFakeTUI(t, l, "FAKETUI_IGNORE_TERM=1", "FAKETUI_CHILD=1")
			pgid := term.pid()
			if got, err := syscall.Getpgid(pgid); err != nil || got != pgid {
				t.Fatalf("the TUI (pid %d) is not its process group's leader: pgid %d, %v", pgid, got, err)
			}
			start := time.Now()
			term.kill(200 * time.Millisecond)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("kill took %v", d)
			}
			if !term.done() {
				t.Error("not done after kill")
			}
			// SIGKILLed members may take a moment to finish dying.
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				left := liveGroupMembers(pgid)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("process group %d still has live members 2s after kill: %v", pgid, left)
					break
				}
			}
			checkGone(t, term)
		})
	}
}

// checkGone: a tmux terminal's server, socket directory and every process
// naming its socket are gone.
func checkGone(t *testing.T, term terminal) {
	t.Helper()
	tt, ok := term.(*tmuxTerminal)
	if !ok {
		return
	}
	if _, err := os.Stat(tt.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tmux socket directory %s is still there (%v)", tt.dir, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesNaming(tt.sock)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes naming the tmux socket still run: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveGroupMembers lists the pids of group pgid's processes that are not
// zombies (an orphan's zombie waits for init, which may be slow to reap).
func liveGroupMembers(pgid int) []string {
	var live []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) >= 3 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			live = append(live, f)
		}
	}
	return live
}

// processesNaming lists the command lines (from /proc) containing s.
func processesNaming(s string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestTmuxSecretsNotInArgv: the environment goes through a 0600 file the
// shell removes at once, never through argv (ps) nor the tmux server's
// environment.
func TestTmuxSecretsNotInArgv(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	const secret = "argv-must-not-show-this-9f8e7d"
	term := startFakeTUI(t, launcherTmux, "FAKETUI_SECRET="+secret)
	waitScreen(t, term, "secret="+secret)
	if left := processesNaming(secret); len(left) > 0 {
		t.Errorf("the secret is visible in argv: %v", left)
	}
	tt := term.(*tmuxTerminal)
	if _, err := os.Stat(filepath.Join(tt.dir, "env")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the env file is still there after the start (%v)", err)
	}
	out, err := tt.run(nil, "show-environment", "-g")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, secret) {
		t.Error("the secret is in the tmux server's global environment")
	}
}

// TestShellEnv pins the env file: quoting, skipped names.
func TestShellEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"plain", []string{"A=1"}, "export A='1'\n"},
		{"quote", []string{"K=it's"}, `export K='it'\''s'` + "\n"},
		{"newline and dollar", []string{"K=a\n$b"}, "export K='a\n$b'\n"},
		{"empty", []string{"K="}, "export K=''\n"},
		{"bash function skipped", []string{"BASH_FUNC_f%%=() { :; }"}, ""},
		{"tmux's own skipped", []string{"TMUX=/tmp/x,1,0", "TMUX_PANE=%1", "TERM=xterm"}, ""},
		{"no equals skipped", []string{"junk"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shellEnv(tc.env); got != tc.want {
				t.Errorf("shellEnv(%q) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}

// TestTerminalLauncher: AVENOR_CLAUDE_TERMINAL is read strictly.
func TestTerminalLauncher(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want launcher
		err  string
	}{
		{"", launcherPTY, ""},
		{"pty", launcherPTY, ""},
		{"tmux", launcherTmux, ""},
		{" tmux ", launcherTmux, ""},
		{"screen", "", `AVENOR_CLAUDE_TERMINAL="screen" is not a terminal launcher`},
	} {
		t.Run(tc.val, func(t *testing.T) {
			env := []string{"PATH=/bin"}
			if tc.val != "" {
				env = append(env, TerminalEnv+"="+tc.val)
			}
			got, err := terminalLauncher(env, PTYName, launcherPTY)
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("terminalLauncher(%q) = %q, %v; want %q, %q", tc.val, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestTmuxMissing: without tmux the error names the fix.
func TestTmuxMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := startTerminal(launcherTmux, "avenor-x", "/bin/sh", nil, nil, t.TempDir())
	if !errors.Is(err, errNoTmux) || !strings.Contains(err.Error(), "install") {
		t.Errorf("startTerminal without tmux: %v, want errNoTmux naming the install", err)
	}
}

// TestTmuxOwnerKilled: when the plugin dies without killing its terminal
// (SIGKILL), the guardian kills claude and the server and removes the
// socket directory. The owner here is a sleep standing in for the plugin;
// the stand-in TUI ignores SIGTERM, as a stuck claude might.
func TestTmuxOwnerKilled(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	script, _ := filepath.Abs(filepath.Join("testdata", "faketui.sh"))
	term, err := startTmuxOwned(owner.Process.Pid, "avenor-owner", script, nil, append(os.Environ(), "FAKETUI_IGNORE_TERM=1"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer term.kill(0)
	waitScreen(t, term, "READY")
	_ = owner.Process.Kill()
	select {
	case <-term.exited():
	case <-time.After(guardPoll + 5*time.Second):
		t.Fatalf("the TUI still runs %v after its owner died", guardPoll+5*time.Second)
	}
	select {
	case <-term.guardDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the guardian did not exit after cleaning up")
	}
	checkGone(t, term)
}

// TestTmuxGuardianSparesAnExitedTUI: a TUI that exited by itself is not
// signalled again when its owner dies later (its pid may be reused).
func TestTmuxGuardianSparesAnExitedTUI(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	script, _ := filepath.Abs(filepath.Join("testdata", "faketui.sh"))
	term, err := startTmuxOwned(owner.Process.Pid, "avenor-spare", script, nil, os.Environ(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer term.kill(0)
	waitScreen(t, term, "READY")
	_ = term.send("q\r")
	<-term.exited()
	time.Sleep(guardPoll + 500*time.Millisecond) // the guardian notices the exit
	// A process standing in for one that reused the pane's pid cannot be
	// made; the guardian's record of the exit is what is checked: after
	// the owner dies it still cleans up the directory.
	_ = owner.Process.Kill()
	select {
	case <-term.guardDone:
	case <-time.After(guardPoll + 5*time.Second):
		t.Fatal("the guardian did not finish after its owner died")
	}
	if _, err := os.Stat(term.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket directory is still there (%v)", err)
	}
}
