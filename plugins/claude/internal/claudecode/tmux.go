package claudecode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// Bounds of the tmux launcher.
const (
	// tmuxCmdTimeout bounds one tmux client command (capture-pane,
	// send-keys…); the private server answers in milliseconds.
	tmuxCmdTimeout = 10 * time.Second
	// tmuxExitPoll is how often the pane's pid is probed once the server
	// watcher has returned while the pid still answers (see watch).
	tmuxExitPoll = 100 * time.Millisecond
	// tmuxServerGone bounds the wait for the server to exit after kill.
	tmuxServerGone = 5 * time.Second
)

// tmuxConf is the private server's whole configuration (-f): the user's
// ~/.tmux.conf and /etc/tmux.conf are never read, so nothing of theirs
// (prefix, base-index, status line, hooks) reaches the pane. The status
// line is off so the pane is the full 220×50. The server exits with its
// one session (exit-empty), which is what makes cleanup total once
// claude is gone.
const tmuxConf = `set -g status off
set -g default-shell /bin/sh
set -g default-terminal screen-256color
set -g remain-on-exit off
set -g destroy-unattached off
set -g exit-empty on
set -g history-limit 2000
set -s escape-time 0
`

// tmuxBaseEnv are the variables the tmux client (and so the server it
// starts) gets; claude's own environment reaches it only through the 0600
// env file, so secrets never sit in the server daemon's environment nor
// in any argv visible in ps.
var tmuxBaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"}

// tmuxSkipEnv are never copied into the pane: tmux sets them for its own
// pane, and the user's outer tmux (if the plugin runs inside one) must not
// leak in.
var tmuxSkipEnv = map[string]bool{"TMUX": true, "TMUX_PANE": true, "TERM": true}

var shellNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// tmuxTerminal is a detached session of a private tmux server: one server
// per terminal on a socket in its own 0700 temp dir (`tmux -S`), so the
// user's tmux is never touched and killing it removes everything.
type tmuxTerminal struct {
	tmux    string // tmux binary
	dir     string // private temp dir: socket, config, env file
	sock    string
	target  string // the session name, used as -t
	panePID int
	env     []string // the tmux client's environment

	guardPID  int           // the guardian's pid and session (guard)
	guardDone chan struct{} // closed when the guardian has exited

	exitCh   chan struct{}
	lastMu   sync.Mutex
	last     string // the last screen captured, kept for after the exit
	killOnce sync.Once
}

// startTmux starts bin in a new private tmux server, session name, 220×50,
// through /bin/sh as `exec bin args…` after sourcing a 0600 env file that
// the shell deletes at once (docs/backends.md#claude-plugin-claude). A guardian outlives this
// process to clean up after it (see guardTmux).
func startTmux(name, bin string, args, env []string, dir string) (*tmuxTerminal, error) {
	return startTmuxOwned(os.Getpid(), name, bin, args, env, dir)
}

// startTmuxOwned is startTmux for a terminal whose owner is the process
// owner (tests pass another than this one).
func startTmuxOwned(owner int, name, bin string, args, env []string, dir string) (*tmuxTerminal, error) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return nil, errNoTmux
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, &agentproc.NotFoundError{Path: bin, Hint: installHint}
	}
	if name == "" {
		name = "avenor"
	}
	tmp, err := os.MkdirTemp("", "avenor-tmux-")
	if err != nil {
		return nil, fmt.Errorf("creating the tmux socket directory: %w", err)
	}
	t := &tmuxTerminal{tmux: tmux, dir: tmp, sock: filepath.Join(tmp, "sock"), target: name,
		exitCh: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	conf := filepath.Join(tmp, "tmux.conf")
	envFile := filepath.Join(tmp, "env")
	if err := os.WriteFile(conf, []byte(tmuxConf), 0o600); err != nil {
		return nil, fmt.Errorf("writing the tmux configuration: %w", err)
	}
	if err := os.WriteFile(envFile, []byte(shellEnv(env)), 0o600); err != nil {
		return nil, fmt.Errorf("writing the environment file: %w", err)
	}
	for _, k := range tmuxBaseEnv {
		if v, ok := os.LookupEnv(k); ok {
			t.env = append(t.env, k+"="+v)
		}
	}
	// The env file is sourced, then removed before claude runs: it exists
	// for the milliseconds of the start only.
	script := ". " + shellQuote(envFile) + " && rm -f " + shellQuote(envFile) + " && exec " + shellQuote(path)
	for _, a := range args {
		script += " " + shellQuote(a)
	}
	out, err := t.run(nil, "-f", conf, "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", name,
		"-x", strconv.Itoa(termCols), "-y", strconv.Itoa(termRows), "-c", dir, script)
	if err != nil {
		return nil, fmt.Errorf("starting %s in tmux: %w", bin, err)
	}
	t.panePID, err = strconv.Atoi(strings.TrimSpace(out))
	if err != nil || t.panePID <= 1 {
		t.killServer()
		return nil, fmt.Errorf("starting %s in tmux: new-session printed %q, not the pane's pid", bin, strings.TrimSpace(out))
	}
	if err := t.guard(owner); err != nil {
		t.kill(0)
		return nil, fmt.Errorf("starting the tmux guardian: %w", err)
	}
	ok = true
	go t.watch()
	return t, nil
}

// guardScript is the guardian: it sleeps while the owner (the plugin)
// lives; when the owner is gone without having killed the terminal
// (SIGKILLed, crashed) it kills claude's process group and the server and
// removes the socket directory. A PTY needs none: the kernel hangs up a
// terminal whose master dies with its process, but the tmux server holds
// this one. The pane is watched too, so that a claude that exited long
// before its owner is never "killed" through a reused pid. It does not
// depend on the socket: a server whose socket was deleted still dies with
// its last pane. A zombie counts as gone (live): a dead plugin whose
// parent has not reaped it yet must not keep claude running. kill() ends
// the guardian itself (unguard).
// Arguments: owner pid, pane pid (= pgid), tmux, socket, directory.
const guardScript = `live() {
	kill -0 "$1" 2>/dev/null || return 1
	[ -r "/proc/$1/stat" ] || return 0
	read -r st <"/proc/$1/stat" || return 0
	st=${st##*) }
	[ "${st%% *}" != Z ]
}
alive=1
while live "$1"; do
	[ $alive = 1 ] && ! live "$2" && alive=0
	sleep 1
done
[ $alive = 1 ] && kill -KILL -- "-$2" 2>/dev/null
"$3" -S "$4" kill-server 2>/dev/null
rm -rf -- "$5"`

// guardPoll is the guardian's period (the sleep in guardScript): how long
// a claude outlives a SIGKILLed plugin at most.
const guardPoll = time.Second

// guard starts the guardian in its own session, so that signals to this
// process's group do not reach it.
func (t *tmuxTerminal) guard(owner int) error {
	cmd := exec.Command("/bin/sh", "-c", guardScript, "avenor-tmux-guard",
		strconv.Itoa(owner), strconv.Itoa(t.panePID), t.tmux, t.sock, t.dir)
	cmd.Env = t.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	t.guardPID, t.guardDone = cmd.Process.Pid, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(t.guardDone)
	}()
	return nil
}

// unguard ends the guardian (its session: the shell and its sleep) once
// kill has cleaned up.
func (t *tmuxTerminal) unguard() {
	if t.guardDone == nil {
		return
	}
	_ = syscall.Kill(-t.guardPID, syscall.SIGKILL)
	<-t.guardDone
}

// watch closes exitCh when claude has exited. A `wait-for` client on a
// channel nobody signals blocks until the server exits, which it does as
// soon as the pane's process is gone (exit-empty); the pid probe after it
// guards against the client failing for another reason.
func (t *tmuxTerminal) watch() {
	cmd := exec.Command(t.tmux, "-S", t.sock, "wait-for", "avenor-never-signalled")
	cmd.Env = t.env
	_ = cmd.Run()
	for processLive(t.panePID) {
		time.Sleep(tmuxExitPoll)
	}
	close(t.exitCh)
}

// run runs one tmux client command against the private server. -u: the
// client is UTF-8 whatever the plugin's locale says, so the screen keeps
// the ❯ and ─ that Claude Code draws (3.3 copies cells as they are;
// other versions may substitute for a non-UTF-8 client).
func (t *tmuxTerminal) run(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(t.tmux, append([]string{"-u", "-S", t.sock}, args...)...)
	cmd.Env = t.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return out.String(), fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return out.String(), nil
	case <-time.After(tmuxCmdTimeout):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("tmux %s did not answer within %s", args[0], tmuxCmdTimeout)
	}
}

// send types keys: Enter and Esc as named keys, everything else literally
// (-l), all in one tmux command.
func (t *tmuxTerminal) send(keys string) error {
	var args []string
	lit := ""
	flush := func() {
		if lit != "" {
			args = append(args, "send-keys", "-t", t.target, "-l", lit, ";")
			lit = ""
		}
	}
	for _, r := range keys {
		switch r {
		case '\r', '\n':
			flush()
			args = append(args, "send-keys", "-t", t.target, "Enter", ";")
		case '\x1b':
			flush()
			args = append(args, "send-keys", "-t", t.target, "Escape", ";")
		default:
			lit += string(r)
		}
	}
	flush()
	if len(args) == 0 {
		return nil
	}
	_, err := t.run(nil, args[:len(args)-1]...)
	return err
}

// paste loads text into a buffer and pastes it bracketed (-p; the TUI
// enables bracketed paste), line feeds kept (-r), the buffer deleted (-d).
func (t *tmuxTerminal) paste(text string) error {
	_, err := t.run([]byte(text), "load-buffer", "-b", "avenor", "-", ";",
		"paste-buffer", "-p", "-r", "-d", "-b", "avenor", "-t", t.target)
	return err
}

// screen is tmux's rendering of the pane; once the pane is gone, the last
// one captured.
func (t *tmuxTerminal) screen() string {
	t.lastMu.Lock()
	defer t.lastMu.Unlock()
	if !t.done() {
		if out, err := t.run(nil, "capture-pane", "-p", "-t", t.target); err == nil {
			t.last = trimScreen(out)
		}
	}
	return t.last
}

func (t *tmuxTerminal) pid() int { return t.panePID }

func (t *tmuxTerminal) done() bool { return isClosed(t.exitCh) }

func (t *tmuxTerminal) exited() <-chan struct{} { return t.exitCh }

// exitErr: tmux reaps the pane's process itself, so its exit status is
// not known here.
func (t *tmuxTerminal) exitErr() error {
	if !t.done() {
		return nil
	}
	return errors.New("exited (status not known under tmux)")
}

// kill signals claude's process group (SIGTERM, SIGKILL after grace), then
// kills the server if it is still up and removes the socket directory.
func (t *tmuxTerminal) kill(grace time.Duration) {
	t.killOnce.Do(func() {
		_ = syscall.Kill(-t.panePID, syscall.SIGTERM)
		select {
		case <-t.exitCh:
		case <-time.After(grace):
		}
		_ = agentproc.KillGroup(t.panePID)
		// The server reaps the pane and exits by itself; kill-server is
		// for a server that does not.
		select {
		case <-t.exitCh:
		case <-time.After(grace):
		}
		t.killServer()
		select {
		case <-t.exitCh:
		case <-time.After(tmuxServerGone):
		}
		_ = os.RemoveAll(t.dir)
		t.unguard()
	})
}

func (t *tmuxTerminal) killServer() {
	if _, err := os.Stat(t.sock); err == nil {
		_, _ = t.run(nil, "kill-server")
	}
}

// shellEnv is env as a file for /bin/sh to source: `export K='v'` for every
// variable whose name the shell accepts (others, e.g. exported bash
// functions, cannot be set by sh and are skipped).
func shellEnv(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !shellNameRE.MatchString(k) || tmuxSkipEnv[k] {
			continue
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	return b.String()
}

// shellQuote quotes s for /bin/sh in single quotes; an embedded quote
// closes them, is escaped and reopens them.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
