package main

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

// Terminal size of the interactive backend (contract §7.7).
const (
	termCols = 220
	termRows = 50
)

// terminal is Claude Code's TUI running in a pseudo-terminal, rendered by a
// terminal emulator so that the screen can be read as text (never regexes
// over the raw bytes).
type terminal struct {
	cmd  *exec.Cmd
	pty  *os.File
	term vt10x.Terminal

	writeMu sync.Mutex
	exited  chan struct{}
	exitErr error
}

// startTerminal starts bin in a new session (its own process group) with a
// 220×50 terminal.
func startTerminal(bin string, args, env []string, dir string) (*terminal, error) {
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
	t := &terminal{cmd: cmd, pty: f, exited: make(chan struct{})}
	// The emulator answers the TUI's terminal queries (cursor position…).
	t.term = vt10x.New(vt10x.WithSize(termCols, termRows), vt10x.WithWriter(writerFunc(t.write)))
	go t.read()
	go func() {
		t.exitErr = cmd.Wait()
		close(t.exited)
	}()
	return t, nil
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

func (t *terminal) read() {
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

func (t *terminal) write(b []byte) (int, error) {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	return t.pty.Write(b)
}

// send types keys.
func (t *terminal) send(keys string) error {
	_, err := t.write([]byte(keys))
	return err
}

// paste pastes text as one bracketed paste, so newlines do not submit.
func (t *terminal) paste(text string) error {
	return t.send("\x1b[200~" + text + "\x1b[201~")
}

// screen is the rendered screen, trailing blanks trimmed.
func (t *terminal) screen() string {
	lines := strings.Split(t.term.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

func (t *terminal) pid() int { return t.cmd.Process.Pid }

func (t *terminal) done() bool {
	select {
	case <-t.exited:
		return true
	default:
		return false
	}
}

// kill ends the TUI and everything in its process group: SIGTERM, then
// SIGKILL after grace.
func (t *terminal) kill(grace time.Duration) {
	pgid := t.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-t.exited:
	case <-time.After(grace):
	}
	if err := agentproc.KillGroup(pgid); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = t.cmd.Process.Kill()
	}
	<-t.exited
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
