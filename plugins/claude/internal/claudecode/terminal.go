package claudecode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// Terminal size of the interactive backend (docs/backends.md#claude-plugin-claude).
const (
	termCols = 220
	termRows = 50
)

// launcher chooses how Claude Code's TUI gets its terminal.
type launcher string

const (
	// launcherPTY: a pseudo-terminal of this process, rendered by the vt10x
	// emulator (no dependency).
	launcherPTY launcher = "pty"
	// launcherTmux: a detached session of a private tmux server
	// (tmux.go); the screen is tmux's own rendering.
	launcherTmux launcher = "tmux"
)

// terminal is Claude Code's TUI in a terminal whose screen can be read as
// text (never regexes over the raw bytes). Implementations: ptyTerminal,
// tmuxTerminal. All methods are safe for concurrent use.
type terminal interface {
	// send types keys: raw bytes as a terminal would send them ("\r" is
	// Enter, "\x1b" Esc).
	send(keys string) error
	// paste pastes text as one bracketed paste, so newlines do not submit.
	paste(text string) error
	// screen is the rendered screen, trailing blanks trimmed.
	screen() string
	// pid is the TUI's pid; it leads its own process group.
	pid() int
	// done reports whether the TUI has exited.
	done() bool
	// exited is closed once the TUI has exited.
	exited() <-chan struct{}
	// exitErr says how the TUI exited (nil while it runs or when it is
	// not known).
	exitErr() error
	// kill ends the TUI and everything in its process group (SIGTERM,
	// SIGKILL after grace) and releases the terminal; it returns once all
	// is gone.
	kill(grace time.Duration)
}

// errNoTmux: the tmux launcher was chosen and tmux is not installed.
var errNoTmux = errors.New("tmux is not installed (not found in PATH); install it, e.g. `apt-get install tmux` or `brew install tmux`")

// startTerminal starts bin with args in dir, in a 220×50 terminal of the
// launcher l, as a new process group. name names the terminal where the
// launcher has names (the tmux session: "avenor-<first 8 chars of the
// session id>", docs/backends.md#claude-plugin-claude).
func startTerminal(l launcher, name, bin string, args, env []string, dir string) (terminal, error) {
	switch l {
	case launcherPTY, "":
		return startPTY(bin, args, env, dir)
	case launcherTmux:
		return startTmux(name, bin, args, env, dir)
	}
	return nil, fmt.Errorf("unknown terminal launcher %q; use %q or %q", l, launcherPTY, launcherTmux)
}

// ptyTerminal is a pseudo-terminal of this process rendered by vt10x.
type ptyTerminal struct {
	cmd  *exec.Cmd
	pty  *os.File
	term vt10x.Terminal

	writeMu sync.Mutex
	exitCh  chan struct{}
	err     error // set before exitCh closes
}

// startPTY starts bin in a new session (its own process group) with a
// 220×50 pseudo-terminal.
func startPTY(bin string, args, env []string, dir string) (*ptyTerminal, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, &agentproc.NotFoundError{Path: bin, Hint: installHint}
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: termCols, Rows: termRows})
	if err != nil {
		return nil, fmt.Errorf("starting %s in a terminal: %w", bin, err)
	}
	t := &ptyTerminal{cmd: cmd, pty: f, exitCh: make(chan struct{})}
	// The emulator answers the TUI's terminal queries (cursor position…).
	t.term = vt10x.New(vt10x.WithSize(termCols, termRows), vt10x.WithWriter(writerFunc(t.write)))
	go t.read()
	go func() {
		t.err = cmd.Wait()
		close(t.exitCh)
	}()
	return t, nil
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

func (t *ptyTerminal) read() {
	buf := make([]byte, 32<<10)
	for {
		n, err := t.pty.Read(buf)
		if n > 0 {
			_, _ = t.term.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (t *ptyTerminal) write(b []byte) (int, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	return t.pty.Write(b)
}

func (t *ptyTerminal) send(keys string) error {
	_, err := t.write([]byte(keys))
	return err
}

func (t *ptyTerminal) paste(text string) error {
	return t.send("\x1b[200~" + text + "\x1b[201~")
}

func (t *ptyTerminal) screen() string { return trimScreen(t.term.String()) }

// trimScreen trims the blanks at the end of every line and the empty lines
// at the end of the screen.
func trimScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

func (t *ptyTerminal) pid() int { return t.cmd.Process.Pid }

func (t *ptyTerminal) done() bool { return isClosed(t.exitCh) }

func (t *ptyTerminal) exited() <-chan struct{} { return t.exitCh }

func (t *ptyTerminal) exitErr() error {
	if !t.done() {
		return nil
	}
	return t.err
}

func (t *ptyTerminal) kill(grace time.Duration) {
	pgid := t.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-t.exitCh:
	case <-time.After(grace):
	}
	if err := agentproc.KillGroup(pgid); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = t.cmd.Process.Kill()
	}
	<-t.exitCh
	_ = t.pty.Close()
}

// Screen states of Claude Code 2.1.332 (runtime-protocols.md §5.5).
type screenState struct {
	busy       bool // "esc to interrupt" in the footer
	permission bool // a "Do you want to proceed?" dialog
	ready      bool // the input box is there
	inputLine  string
}

func readScreen(s string) screenState {
	st := screenState{
		busy:       strings.Contains(s, "esc to interrupt"),
		permission: strings.Contains(s, "Do you want to proceed?"),
	}
	lines := strings.Split(s, "\n")
	// The input box is the last line starting with ❯ between two rules.
	for i := len(lines) - 1; i > 0; i-- {
		if strings.HasPrefix(lines[i], "❯") && strings.HasPrefix(lines[i-1], "───") {
			st.ready = true
			st.inputLine = strings.TrimSpace(strings.TrimPrefix(lines[i], "❯"))
			break
		}
	}
	return st
}

// idle: nothing running and no dialog open.
func (st screenState) idle() bool { return st.ready && !st.busy && !st.permission }
